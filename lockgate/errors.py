"""The one exception hierarchy of Lockgate.

Every layer raises a subclass of :class:`LockgateError`; library errors (YAML, jsonschema, sqlite,
httpx, ...) are translated at the boundary with ``raise ... from``. Spec problems are *not*
exceptions: they are :class:`lockgate.dsl.diagnostics.Diagnostic` values.
"""

from __future__ import annotations

from typing import Any

Span = tuple[int, int]


class LockgateError(Exception):
    """Base of every error Lockgate raises on purpose."""


class SpecError(LockgateError):
    """A spec could not be used because it has errors; ``diagnostics`` says which."""

    def __init__(self, message: str, diagnostics: list[Any] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])


class ExprError(LockgateError):
    """An expression failed to compile or evaluate.

    ``kind`` is one of ``parse``, ``unknown_identifier``, ``unknown_function``, ``type``,
    ``validation`` and ``resource_limit``; ``span`` is the (start, end) character offsets in the
    expression source, or None when the failure belongs to the whole expression.
    ``replacement``, when set, is the text a quick fix puts in place of ``span`` (``==`` for a
    lone ``=``, ``&&`` for ``and``).
    """

    KINDS = frozenset(
        {"parse", "unknown_identifier", "unknown_function", "type", "validation", "resource_limit"}
    )

    def __init__(self, kind: str, message: str, span: Span | None = None, *,
                 replacement: str | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.span = span
        self.replacement = replacement


class LocatedError(LockgateError):
    """An error in a piece of spec text, located by ``span`` (character offsets in that text).

    ``replacement``, when set, is the text a did-you-mean fix puts in place of ``span``.
    """

    def __init__(self, message: str, span: Span | None = None, *, replacement: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.replacement = replacement


class ContractError(LocatedError):
    """A contract type string or a contract set is malformed."""


class RefError(LocatedError):
    """A ``${...}`` reference is malformed or cannot be resolved at run time."""


class EngineError(LockgateError):
    """A consumer-protocol call was refused; nothing was changed.

    ``error_type`` is a stable machine-readable name (``run_not_found``, ``stale_token``, ...).
    """

    error_type = "engine_error"

    def __init__(self, message: str, *, error_type: str | None = None, **detail: Any) -> None:
        super().__init__(message)
        self.message = message
        if error_type:
            self.error_type = error_type
        self.detail = detail

    def to_dict(self) -> dict[str, Any]:
        return {"status": "error", "error_type": self.error_type, "message": self.message, **self.detail}


class RunNotFound(EngineError):
    error_type = "run_not_found"


class StaleToken(EngineError):
    error_type = "stale_token"


class InputValidationError(EngineError):
    error_type = "input_validation_failed"


class RunDriven(EngineError):
    """Another live process drives the run (see :mod:`lockgate.engine.drivers`): driving it here
    too would call its agents (or run its commands) a second time. ``driver`` describes that
    process."""

    error_type = "run_driven"


class ConcurrencyConflict(EngineError):
    """Another writer changed the run first (optimistic concurrency); reload and retry."""

    error_type = "concurrency_conflict"


class StoreError(LockgateError):
    """A store could not be opened, read or written."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or written right now: the PostgreSQL server is down,
    restarting or dropped the connection (or refuses new ones: the message says why), SQLite's
    database stayed locked past the busy timeout, a disk I/O error, a full disk, no memory.

    Nothing stored was lost or damaged: a write it interrupted was committed whole or not at
    all (a transition is one transaction), so every run is as the store last saved it. A caller
    should retry later, or resume the run (``lockgate run --resume RUN``) once the store is
    back. Any other :class:`StoreError` is not cured by waiting: the input was refused, or the
    store is edited, damaged or misnamed."""


class ReadOnlyStore(StoreError):
    """A write refused because the store may only be read (a SQLite file or folder without
    write permission): nothing was written, and reading it works. Neither a damaged store nor
    an outage: retrying will not help."""


class NotAStore(StoreError):
    """A database named as a run store that is some other program's (it has tables, none of them
    a Lockgate store's): refused without changing it."""


class UnstorableValue(StoreError):
    """A value handed to a store is not one every store can keep: not JSON, NaN or an infinity,
    the character U+0000, text that is not valid Unicode, or nested too deeply."""


class AuditChainError(StoreError):
    """The hash chain of a run's events is broken."""


class AgentError(LockgateError):
    """An agent failed to produce a result (process error, HTTP error, timeout, bad output)."""


class AgentUnavailable(AgentError):
    """An agent cannot run here: a missing binary, credentials or configuration."""


class ConfigError(LockgateError):
    """The project configuration (lockgate.toml / pyproject) is invalid."""


class RunnerError(LockgateError):
    """The runner could not drive a run (e.g. more agent calls outstanding than allowed)."""


class DrivenElsewhere(RunnerError):
    """Another process drives the same run: a result of this one came too late (its token was
    stale: the step was answered, or reset, there) and this one has nothing left to do. Nothing
    was lost; the run goes on there."""

    def __init__(self, run_id: str, step_id: str) -> None:
        super().__init__(f"another process is driving run {run_id} (step {step_id!r} was answered or reset "
                         "there first); nothing was lost")
        self.run_id, self.step_id = run_id, step_id


class TakenOver(DrivenElsewhere):
    """Another process took over the run this one was driving (``take_over``): this one stops
    its calls; what it reported stays, and the run goes on there."""

    def __init__(self, run_id: str, by: str) -> None:
        RunnerError.__init__(self, f"{by} took over run {run_id}; this process stopped its agent calls "
                             "(what it reported is kept)")
        self.run_id, self.step_id = run_id, None
