"""The :class:`Store` protocol and the values it trades in.

A store keeps three things per run: a *header* (an opaque JSON object; its ``status`` and ``flow``
are also kept in indexed columns for listing), one JSON record per *step*, and an append-only,
hash-chained list of *events*. Every write is one transaction guarded by the run's *version*
(optimistic concurrency): a writer names the version it read, and loses with
:class:`lockgate.errors.ConcurrencyConflict` if someone else wrote first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

#: The kinds of damage :meth:`Store.verify` names in :attr:`VerifyReport.problem`.
PROBLEMS = ("edited", "deleted", "inserted", "reordered", "bad_genesis")


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run as last committed: its header, every step record and its version."""

    run_id: str
    header: dict[str, Any]
    steps: dict[str, dict[str, Any]]
    version: int


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One line of :meth:`Store.list_runs`; times are ISO-8601 UTC strings set by the store."""

    run_id: str
    flow: str
    status: str
    created_at: str
    updated_at: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a run's audit log, with the links of its hash chain."""

    seq: int
    at: str
    type: str
    step_id: str | None
    detail: dict[str, Any]
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """The event as a dict sharing its ``detail`` (a store gives every reader fresh events;
        ``asdict``'s deep copy would also recurse once per level of a deeply nested detail)."""
        return {"seq": self.seq, "at": self.at, "type": self.type, "step_id": self.step_id,
                "detail": self.detail, "prev_hash": self.prev_hash, "hash": self.hash}


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The verdict of :meth:`Store.verify` on one run's event chain.

    ``count`` is the number of stored events; when ``ok`` is false, ``first_bad_seq`` is the
    sequence number of the first event that is wrong or missing, ``problem`` one of
    :data:`PROBLEMS` and ``message`` says what was found in words.
    """

    run_id: str
    ok: bool
    count: int
    first_bad_seq: int | None = None
    problem: str | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Store(Protocol):
    """Durable run state with optimistic concurrency and a tamper-evident event log.

    Inputs are validated and copied: callers can never mutate stored state through the objects
    they passed in or got back. Bad input raises :class:`lockgate.errors.StoreError`; an unknown
    run id raises :class:`lockgate.errors.RunNotFound`.
    """

    def create_run(
        self, run_id: str, header: dict[str, Any], steps: dict[str, dict[str, Any]], events: list[dict[str, Any]]
    ) -> int:
        """Store a new run at version 1 and return 1; StoreError if ``run_id`` exists."""
        ...

    def load_run(self, run_id: str) -> StoredRun:
        """The run as last committed (one consistent snapshot)."""
        ...

    def save_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        header: dict[str, Any],
        steps: dict[str, dict[str, Any]],
        events: list[dict[str, Any]],
    ) -> int:
        """In one transaction: check the version, replace the header, upsert the given (changed)
        step records, append ``events`` to the chain; return the new version.

        Raises ConcurrencyConflict, writing nothing, when the stored version is not
        ``expected_version``.
        """
        ...

    def current_version(self, run_id: str) -> int:
        """The run's committed version."""
        ...

    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunSummary]:
        """Runs, newest first, optionally only those with ``status``."""
        ...

    def events(self, run_id: str, since_seq: int = 0) -> list[Event]:
        """The run's events with ``seq > since_seq``, in order."""
        ...

    def verify(self, run_id: str) -> VerifyReport:
        """Recompute the run's hash chain and name the first bad event."""
        ...

    def wait_for_change(self, run_id: str, version: int, timeout: float) -> int:
        """Block until the run's version differs from ``version`` (return the new one) or
        ``timeout`` seconds pass (return the current one)."""
        ...

    def close(self) -> None:
        """Release the connection; the store is unusable afterwards."""
        ...
