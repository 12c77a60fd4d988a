"""The values a run is made of: :class:`StepState` records and the :class:`Run` header.

A run is persisted as one header dict plus one record per *scoped step key*: ``build`` for a root
step, ``wrap/digest`` for a step of the subflow started by run step ``wrap``, ``fan/3`` for item 3
of fanout ``fan``. Keys starting with ``@`` are engine records that are not steps (the spec,
checkpoints). Each transition persists the header and only the records it changed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from ..dsl.values import UNDEFINED

PENDING = "pending"
READY = "ready"
RUNNING = "running"
WAITING_GATE = "waiting_gate"
SUCCEEDED = "succeeded"
FAILED = "failed"
SKIPPED = "skipped"

STEP_STATUSES = frozenset({PENDING, READY, RUNNING, WAITING_GATE, SUCCEEDED, FAILED, SKIPPED})
TERMINAL = frozenset({SUCCEEDED, FAILED, SKIPPED})
SATISFIED = frozenset({SUCCEEDED, SKIPPED})

RUN_RUNNING = "running"
RUN_COMPLETE = "complete"
RUN_FAILED = "failed"
RUN_KILLED = "killed"
RUN_CANCELLED = "cancelled"
RUN_STATUSES = frozenset({RUN_RUNNING, RUN_COMPLETE, RUN_FAILED, RUN_KILLED, RUN_CANCELLED})

SPEC_KEY = "@spec"
CHECKPOINT_PREFIX = "@cp/"


def new_token() -> str:
    """A fresh fencing token (random, so a token from another run or issuance never matches):
    20 hex digits from the operating system's CSPRNG, as ``secrets.token_hex(10)`` makes them."""
    return os.urandom(10).hex()


#: The wall clock (seconds since the epoch) every record and header is stamped with.
now = time.time


@dataclass(slots=True)
class StepState:
    """The mutable state of one step, fanout item or subflow child.

    ``output`` is :data:`UNDEFINED` until the step produced one. Kind-specific fields stay at
    their defaults for other kinds: ``decisions`` (gates), ``fan`` (fanout steps: item count,
    epoch and settled summary), ``index``/``stage``/``item``/``prev``/``worktree``/``patch``
    (fanout items), ``sub_input``/``rounds`` (run steps), ``command_input`` (evaluate steps: what
    their command gets on stdin, rendered when the step started). ``parked`` holds a result
    reported for the current issuance while a judge is asked about it (``{token, result,
    failure, usage}``), so a crash before the verdict loses nothing reported. ``revision`` is set on every step a
    gate's revise reset (``{gate, note, round}``) until its next reset, so its re-dispatch carries
    the gate's note. ``untaken`` marks a step skipped because its branch was not taken (a route
    went elsewhere) with the steps that were taken instead: its dependents are skipped in turn
    unless they also wait on one of those (see :func:`lockgate.engine.advance.untaken_by`).
    ``skip_reason`` is why a skipped step was skipped, the words of its ``skipped`` event.
    ``history`` keeps a summary of each of the last rounds a revise ended, ``history_left_out``
    counts the rounds before them (see :mod:`lockgate.engine.rounds`).
    """

    key: str
    status: str = PENDING
    epoch: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    token: str | None = None
    accepted: str | None = None
    output: Any = UNDEFINED
    failure: dict[str, Any] | None = None
    routed: dict[str, Any] | None = None
    iterations: int = 0
    spent: dict[str, float] = field(default_factory=dict)
    task: str | None = None
    inputs: dict[str, Any] | None = None
    issued_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    decisions: list[dict[str, Any]] | None = None
    fan: dict[str, Any] | None = None
    index: int | None = None
    stage: int = 0
    stage_attempts: int = 0
    item: Any = UNDEFINED
    prev: Any = UNDEFINED
    worktree: str | None = None
    patch: str | None = None
    revision: dict[str, Any] | None = None
    sub_input: Any = UNDEFINED
    rounds: int = 0
    command_input: Any = UNDEFINED
    parked: dict[str, Any] | None = None
    dropped: bool = False
    untaken: list[str] | None = None
    skip_reason: str | None = None
    history: list[dict[str, Any]] | None = None
    history_left_out: int = 0

    def held_for(self, token: Any) -> dict[str, Any] | None:
        """What is held on this step for issuance ``token`` (a reported result or a gate decision
        waiting for a judge, see :func:`lockgate.engine.results.park`), or None."""
        parked = self.parked
        return parked if parked is not None and parked.get("token") == token else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON record: only fields that differ from their defaults (plus key and status).

        Written out field by field: this runs for every changed record of every transition.
        """
        out: dict[str, Any] = {"key": self.key, "status": self.status}
        if self.epoch:
            out["epoch"] = self.epoch
        if self.attempts:
            out["attempts"] = self.attempts
        if self.token is not None:
            out["token"] = self.token
        if self.accepted is not None:
            out["accepted"] = self.accepted
        if self.failure is not None:
            out["failure"] = self.failure
        if self.routed is not None:
            out["routed"] = self.routed
        if self.task is not None:
            out["task"] = self.task
        if self.inputs is not None:
            out["inputs"] = self.inputs
        if self.issued_at is not None:
            out["issued_at"] = self.issued_at
        if self.started_at is not None:
            out["started_at"] = self.started_at
        if self.finished_at is not None:
            out["finished_at"] = self.finished_at
        if self.decisions is not None:
            out["decisions"] = self.decisions
        if self.fan is not None:
            out["fan"] = self.fan
        if self.worktree is not None:
            out["worktree"] = self.worktree
        if self.patch is not None:
            out["patch"] = self.patch
        if self.revision is not None:
            out["revision"] = self.revision
        if self.output is not UNDEFINED:
            out["output"] = self.output
        if self.iterations:
            out["iterations"] = self.iterations
        if self.spent:
            out["spent"] = self.spent
        if self.index is not None:
            out["index"] = self.index
            out["stage"] = self.stage
            out["stage_attempts"] = self.stage_attempts
            if self.item is not UNDEFINED:
                out["item"] = self.item
            if self.prev is not UNDEFINED:
                out["prev"] = self.prev
        if self.sub_input is not UNDEFINED:
            out["sub_input"] = self.sub_input
            out["rounds"] = self.rounds
        if self.command_input is not UNDEFINED:
            out["command_input"] = self.command_input
        if self.parked is not None:
            out["parked"] = self.parked
        if self.dropped:
            out["dropped"] = True
        if self.untaken is not None:
            out["untaken"] = self.untaken
        if self.skip_reason is not None:
            out["skip_reason"] = self.skip_reason
        if self.history:
            out["history"] = self.history
        if self.history_left_out:
            out["history_left_out"] = self.history_left_out
        return out

    @classmethod
    def from_dict(cls, data: Any, key: str | None = None, run_id: str | None = None) -> StepState:
        """The state a stored record holds (fields it lacks at their defaults, keys it does not
        know ignored); StoreError naming the record (``key``, stored under) and ``run_id`` when
        it is not the shape :meth:`to_dict` writes (see :func:`check_shape`)."""
        check_shape(data, STEP_SHAPE, lambda: _step_what(data, key, run_id))
        if key is not None and data["key"] != key:
            raise damaged(_step_what(data, key, run_id), f"not the record of that step (its key is {data['key']!r})")
        known = {k: v for k, v in data.items() if k in _FIELD_NAMES}
        if known.get("history"):
            known["history"] = [_summary_of_now(summary) for summary in known["history"]]
        return cls(**known)

    def reset(self) -> None:
        """Back to ``pending`` for a new epoch (a gate revise reset); keeps ``spent`` history out."""
        self.status = PENDING
        self.epoch += 1
        self.attempts = []
        self.token = None
        self.accepted = None
        self.output = UNDEFINED
        self.failure = None
        self.routed = None
        self.spent = {}
        self.task = None
        self.inputs = None
        self.issued_at = None
        self.started_at = None
        self.finished_at = None
        self.fan = None
        self.revision = None
        self.sub_input = UNDEFINED
        self.rounds = 0
        self.command_input = UNDEFINED
        self.parked = None
        self.untaken = None
        self.skip_reason = None


_FIELD_NAMES = frozenset(f.name for f in fields(StepState))

@dataclass(slots=True)
class Header:
    """Run-level fields, persisted as the store's header dict on every transition.

    Kept small on purpose (the spec and checkpoints live in their own ``@`` records).
    """

    id: str
    flow: str
    status: str = RUN_RUNNING
    inputs: Any = None
    workspace: str | None = None
    digest: str = ""
    error_type: str | None = None
    failure: dict[str, Any] | None = None
    output: Any = UNDEFINED
    rounds: int = 0
    spent: dict[str, float] = field(default_factory=dict)
    carry: dict[str, Any] = field(default_factory=dict)
    checkpoints: list[str] = field(default_factory=list)
    cancel_requested: bool = False
    created_at: float = 0.0
    updated_at: float = 0.0
    finished_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The persisted header: fields at their defaults are left out (``from_dict`` restores
        them), since the header is encoded on every transition; ``inputs`` never change and live
        in the ``@spec`` record."""
        out: dict[str, Any] = {"id": self.id, "flow": self.flow, "status": self.status, "digest": self.digest,
                               "created_at": self.created_at, "updated_at": self.updated_at}
        if self.spent:
            out["spent"] = self.spent
        if self.workspace is not None:
            out["workspace"] = self.workspace
        if self.error_type is not None:
            out["error_type"] = self.error_type
        if self.failure is not None:
            out["failure"] = self.failure
        if self.output is not UNDEFINED:
            out["output"] = self.output
        if self.rounds:
            out["rounds"] = self.rounds
        if self.carry:
            out["carry"] = self.carry
        if self.checkpoints:
            out["checkpoints"] = self.checkpoints
        if self.cancel_requested:
            out["cancel_requested"] = True
        if self.finished_at is not None:
            out["finished_at"] = self.finished_at
        return out

    @classmethod
    def from_dict(cls, data: Any, run_id: str | None = None) -> Header:
        """The header a stored header dict holds; StoreError naming run ``run_id`` (else the id
        the header gives) when it is not the shape :meth:`to_dict` writes."""
        check_shape(data, HEADER_SHAPE, lambda: _header_what(data, run_id))
        return cls(**{k: v for k, v in data.items() if k in _HEADER_FIELDS or k == "inputs"})


_HEADER_FIELDS = tuple(f.name for f in fields(Header) if f.name != "inputs")

# -- the shapes of stored records ------------------------------------------------------------------


class Shape(NamedTuple):
    """What a stored record of one kind must be: a dict holding ``required``, whose fields named
    in ``types`` have one of the types given (others take any JSON value) and whose ``status``
    is one of ``statuses``."""

    kind: str  #: what it is called in errors ("a run header")
    types: dict[str, Any]
    required: tuple[str, ...] = ()
    statuses: frozenset[str] | None = None  #: None: a ``status`` field is not checked


_NUMBER = (int, float)
_NONE = type(None)
STEP_SHAPE = Shape("a step record", {
    "key": str, "status": str, "epoch": int, "attempts": list, "token": (str, _NONE), "accepted": (str, _NONE),
    "failure": (dict, _NONE), "routed": (dict, _NONE), "iterations": int, "spent": dict, "task": (str, _NONE),
    "inputs": (dict, _NONE), "issued_at": (*_NUMBER, _NONE), "started_at": (*_NUMBER, _NONE),
    "finished_at": (*_NUMBER, _NONE), "decisions": (list, _NONE), "fan": (dict, _NONE),
    "index": (int, _NONE), "stage": int, "stage_attempts": int, "worktree": (str, _NONE),
    "patch": (str, _NONE), "revision": (dict, _NONE), "rounds": int, "parked": (dict, _NONE), "dropped": bool,
    "untaken": (list, _NONE), "skip_reason": (str, _NONE), "history": (list, _NONE), "history_left_out": int,
}, ("key",), STEP_STATUSES)
HEADER_SHAPE = Shape("a run header", {
    "id": str, "flow": str, "status": str, "workspace": (str, _NONE), "digest": str,
    "error_type": (str, _NONE), "failure": (dict, _NONE), "rounds": int, "spent": dict, "carry": dict,
    "checkpoints": list, "cancel_requested": bool, "created_at": _NUMBER, "updated_at": _NUMBER,
    "finished_at": (*_NUMBER, _NONE),
}, ("id", "flow"), RUN_STATUSES)


def _summary_of_now(summary: Any) -> Any:
    """An earlier round's summary as records keep it now: a gate's ``decision`` is the decision's
    name (records written before a2066ed kept ``{decision, resolved_by, rationale}``)."""
    if isinstance(summary, dict) and isinstance(summary.get("decision"), dict):
        return {**summary, "decision": summary["decision"].get("decision")}
    return summary


def check_shape(data: Any, shape: Shape, what: Callable[[], str]) -> None:
    """Return when ``data`` has ``shape``; else raise StoreError naming it by ``what()`` (called
    only then). Only a store edited or damaged behind the engine's back fails, so this runs when
    a run is loaded, never on a transition."""
    problem = shape_problem(data, shape)
    if problem is not None:
        raise damaged(what(), problem)


def shape_problem(data: Any, shape: Shape) -> str | None:
    """How ``data`` is not of ``shape`` ("not a run header (it has no 'flow')"), or None."""
    if type(data) is not dict:
        return f"not {shape.kind} (it is {_kind(data)}, not an object)"
    for name in shape.required:
        if name not in data:
            return f"not {shape.kind} (it has no {name!r})"
    types = shape.types
    for name, value in data.items():
        allowed = types.get(name)
        if allowed is not None and not isinstance(value, allowed):
            return f"not {shape.kind} (its {name!r} is {_kind(value)}: {_short(value)})"
    status = data.get("status")
    if status is not None and shape.statuses is not None and status not in shape.statuses:
        return f"not {shape.kind} (its status {_short(status)} is not one of {', '.join(sorted(shape.statuses))})"
    return None


def _header_what(data: Any, run_id: str | None) -> str:
    if run_id is None and type(data) is dict and isinstance(data.get("id"), str):
        run_id = data["id"]
    return f"the header of run {run_id!r}" if run_id is not None else "the run's header"


def _step_what(data: Any, key: str | None, run_id: str | None) -> str:
    if key is None and type(data) is dict and isinstance(data.get("key"), str):
        key = data["key"]
    step = f"the record of step {key!r}" if key is not None else "a record of the run"
    return f"{step} of run {run_id!r}" if run_id is not None else step


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    # the store package is dear to import (SQLite and all): only a damaged record needs it
    from .store.codec import json_kind

    return json_kind(value)


def damaged(what: str, problem: str) -> Exception:
    """:func:`lockgate.engine.store.codec.damaged`, imported only when a record is damaged."""
    from .store.codec import damaged as error

    return error(what, problem)
