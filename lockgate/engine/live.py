"""The live form of a run: the persisted values plus in-memory indexes, and the bookkeeping every
transition shares (status changes, events, the changed-record set).

Indexes are derived from the records, never persisted: which issuances are outstanding, how many
steps of each scope are still open, and per fanout the counts of active, finished and succeeded
items. They are rebuilt in one pass when a run is loaded, and kept current incrementally by
:meth:`LiveRun.set_status`, so no transition sweeps all steps.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..dsl.ir import build_spec
from ..dsl.values import UNDEFINED
from ..errors import EngineError, StoreError
from . import worktrees
from .compiled import CFlow, CompiledSpec, CStep, compiled
from .drivers import DRIVER_KEY
from .model import (
    CHECKPOINT_PREFIX,
    FAILED,
    HEADER_SHAPE,
    PENDING,
    READY,
    RUN_FAILED,
    RUN_RUNNING,
    RUN_STATUSES,
    RUNNING,
    SPEC_KEY,
    TERMINAL,
    WAITING_GATE,
    Header,
    Shape,
    StepState,
    check_shape,
    damaged,
    new_token,
    now,
)
from .specdata import digest, unpack_spec_record


@dataclass(slots=True)
class Scope:
    """A flow instance: the root flow (prefix ``""``) or the subflow of run step ``parent``
    (prefix ``"<parent>/"``)."""

    prefix: str
    flow: CFlow
    parent: str | None = None


@dataclass(slots=True)
class FanCounters:
    """In-memory progress of one running fanout (rebuilt from item records on load)."""

    count: int
    active: int = 0
    done: int = 0
    ok: int = 0
    next: int = 0


@dataclass(slots=True)
class Env:
    """What a run needs from the process driving it (not persisted)."""

    judge: Callable[..., Any] | None = None
    #: runs evaluate steps' commands (see :mod:`lockgate.engine.evaluate`); None: none configured
    evaluator: Callable[..., Any] | None = None


class Report(NamedTuple):
    """What one transaction reports in its response: the keys it issued, the attempts it failed
    (key, failure, retried) and the failures it routed (from, to, failure)."""

    issued: list[str]
    failed: list[tuple[str, dict[str, Any], bool]]
    routed: list[tuple[str, str, dict[str, Any]]]


@dataclass(slots=True)
class Located:
    """What a scoped key names: a step of a scope, or item ``index`` of fanout ``fan``."""

    scope: Scope
    cstep: CStep
    index: int | None = None


class LiveRun:
    """A run loaded for transitions. ``dirty`` and ``events`` collect one transition's writes."""

    def __init__(self, header: Header, cspec: CompiledSpec, steps: dict[str, StepState], version: int,
                 env: Env | None = None, *, planned: bool = False) -> None:
        """``planned``: ``steps`` are the root flow's, all pending, as ``plan`` makes them (the
        indexes are then known without a pass over the records)."""
        self.header = header
        self.cspec = cspec
        self.steps = steps
        self.version = version
        self.env = env or Env()
        self.root = Scope("", cspec.flows[header.flow])
        self.scopes: dict[str, Scope] = {"": self.root}
        self.outstanding: dict[str, None] = {}
        self.waiting: dict[str, None] = {}
        #: evaluate steps whose command was started and is not settled yet
        self.evaluating: dict[str, None] = {}
        self.open: dict[str, int] = {}
        self.fans: dict[str, FanCounters] = {}
        self.work: deque[str] = deque()
        self.to_promote: list[str] = []
        self.dirty: set[str] = set()
        self.events: list[dict[str, Any]] = []
        self.issued: list[str] = []
        self.failed_now: list[tuple[str, dict[str, Any], bool]] = []
        self.routed_now: list[tuple[str, str, dict[str, Any]]] = []
        self.extra_records: dict[str, dict[str, Any]] = {}
        #: set once this transition did something outside the store (git worktrees, merges)
        self.irreversible = False
        #: git worktrees to remove once this transition is committed (see release_worktrees)
        self.to_release: list[str] = []
        self.checkpoint_records: dict[str, dict[str, Any]] = {}
        #: the ``@driver`` record: who drives the run (see :mod:`lockgate.engine.drivers`)
        self.driver: dict[str, Any] | None = None
        self._located: dict[str, Located] = {}
        self._workspace: tuple[str | None, Path | None] = (None, None)
        #: (record, token, entry) of the last standing dispatch answered (see responses)
        self.standing: tuple[StepState, str | None, dict[str, Any]] | None = None
        if planned:
            self.open[""] = len(steps)
        else:
            self._rebuild_indexes()

    # -- transitions' bookkeeping ---------------------------------------------------------------

    def begin(self) -> None:
        self.dirty.clear()
        self.events.clear()
        self.issued.clear()
        self.to_promote.clear()
        self.failed_now.clear()
        self.routed_now.clear()
        self.extra_records.clear()
        self.irreversible = False
        self.to_release = []

    def report(self) -> Report:
        """What this transaction has to report so far (copies)."""
        return Report(list(self.issued), list(self.failed_now), list(self.routed_now))

    def report_also(self, earlier: Report) -> None:
        """Answer also for ``earlier``, what an earlier transaction of the same call reported
        (an evaluate command ran in between): its dispatches still outstanding and its failures
        are listed in this one's response."""
        self.issued[:0] = earlier.issued
        self.failed_now[:0] = earlier.failed
        self.routed_now[:0] = earlier.routed

    def event(self, type_: str, step_id: str | None = None, **detail: Any) -> dict[str, Any]:
        """Record an event of this transition (returned, so its detail can still be completed)."""
        # no "at": the store stamps the transaction's events with its commit time
        event = {"type": type_, "step_id": step_id, "detail": _jsonable(detail)}
        self.events.append(event)
        return event

    def touch(self, st: StepState) -> None:
        self.dirty.add(st.key)

    def set_status(self, st: StepState, status: str) -> None:
        """Change a record's status, keeping the outstanding set and open counts current."""
        old = st.status
        if old == status:
            self.dirty.add(st.key)
            return
        st.status = status
        self.dirty.add(st.key)
        key = st.key
        if old == READY:
            self.outstanding.pop(key, None)
        elif old == WAITING_GATE:
            self.waiting.pop(key, None)
        elif old == RUNNING and self.evaluating:
            self.evaluating.pop(key, None)
        if status == READY:
            self.outstanding[key] = None
        elif status == WAITING_GATE:
            self.waiting[key] = None
        if st.index is None:
            prefix = self.locate(key).scope.prefix
            was_open, is_open = old not in TERMINAL, status not in TERMINAL
            if was_open != is_open:
                self.open[prefix] = self.open.get(prefix, 0) + (1 if is_open else -1)
        if status in TERMINAL:
            st.finished_at = now()

    def issue(self, st: StepState, status: str = READY) -> str:
        """Mint a fresh token for ``st`` and mark it outstanding."""
        st.token = new_token()
        st.issued_at = now()
        if st.started_at is None:
            st.started_at = st.issued_at
        self.set_status(st, status)
        self.issued.append(st.key)
        return st.token

    def fail_run(self, error_type: str, reason: str, step: str | None = None,
                 status: str = RUN_FAILED, **detail: Any) -> None:
        if self.header.status != RUN_RUNNING:
            return
        self.header.status = status
        self.header.error_type = error_type if status == RUN_FAILED else None
        self.header.failure = {"reason": reason, "step": step, "error_type": error_type, **detail}
        self.header.finished_at = now()
        self.event(_END_EVENTS.get(error_type, "failed") if status == RUN_FAILED else "killed", step,
                   error_type=error_type, reason=reason, **detail)
        # a fanout in flight stays as it was, like every other step of an ended run (a late
        # result's spend is still recorded against its item), but its items' worktrees go
        self.release_worktrees(self.fan_worktrees())

    def add_record(self, st: StepState) -> None:
        self.steps[st.key] = st
        self.dirty.add(st.key)

    # -- locating keys ----------------------------------------------------------------------------

    def locate(self, key: str) -> Located:
        found = self._located.get(key)
        if found is None:
            found = self._located[key] = self._locate(key)
        return found

    def _locate(self, key: str) -> Located:
        head, _, tail = key.partition("/")
        cstep = self.root.flow.steps[head]
        if not tail:
            return Located(self.root, cstep)
        if cstep.kind == "fanout":
            return Located(self.root, cstep, int(tail))
        scope = self.scope_of(head)
        return Located(scope, scope.flow.steps[tail])

    def scope_of(self, run_key: str) -> Scope:
        scope = self.scopes.get(run_key + "/")
        if scope is None:
            callee = self.root.flow.steps[run_key].step.run or ""
            scope = self.scopes[run_key + "/"] = Scope(run_key + "/", self.cspec.flows[callee], run_key)
        return scope

    def scope_input(self, scope: Scope) -> Any:
        if scope.parent is None:
            return self.header.inputs
        return self.steps[scope.parent].sub_input

    def output_of(self, scope: Scope, step_id: str) -> Any:
        st = self.steps.get(scope.prefix + step_id)
        return UNDEFINED if st is None or st.dropped else st.output

    def result_map(self, scope: Scope, needs: frozenset[str] | None) -> dict[str, Any]:
        """``result`` for ``when``/``set``: step id -> output of the scope's steps that have one."""
        ids = scope.flow.order if needs is None else needs
        out = {}
        for sid in ids:
            value = self.output_of(scope, sid)
            if value is not UNDEFINED:
                out[sid] = value
        return out

    def workspace(self) -> Path | None:
        """The run's workspace directory (fixed at plan time; the Path is made once)."""
        text = self.header.workspace
        if text != self._workspace[0]:
            self._workspace = (text, Path(text) if text else None)
        return self._workspace[1]

    # -- records ----------------------------------------------------------------------------------

    def record_dicts(self, keys: set[str] | None = None) -> dict[str, dict[str, Any]]:
        """Records of ``keys`` (plus the transition's engine records), or of every step."""
        steps = self.steps
        if keys is None:
            return {k: st.to_dict() for k, st in steps.items()}
        out = {k: steps[k].to_dict() for k in keys}
        out.update(self.extra_records)
        return out

    def children(self, prefix: str) -> list[StepState]:
        return [st for key, st in self.steps.items() if key.startswith(prefix) and not st.dropped]

    def drop_records(self, prefix: str) -> None:
        """Tombstone every live record under ``prefix`` (items or children of a reset step),
        removing the git worktrees the dropped items held (see :meth:`release_worktrees`)."""
        held = []
        for key, st in list(self.steps.items()):
            if key.startswith(prefix) and not st.dropped:
                self.outstanding.pop(key, None)
                self.waiting.pop(key, None)
                self.evaluating.pop(key, None)
                # the tombstone keeps the worktree's path until it is removed (see sweep_worktrees)
                self.steps[key] = StepState(key, status=FAILED, dropped=True, epoch=st.epoch + 1,
                                            worktree=st.worktree)
                self.dirty.add(key)
                if st.worktree:
                    held.append(st.worktree)
        self.open.pop(prefix, None)
        self.release_worktrees(held)

    def fan_worktrees(self) -> list[str]:
        """The git worktrees held by the items of the fanouts in flight."""
        steps = self.steps
        return [w for key, counters in self.fans.items() for i in range(counters.count)
                if (w := steps[f"{key}/{i}"].worktree)]

    def release_worktrees(self, held: list[str]) -> None:
        """Let go of ``held``, worktrees of items this transition dropped or whose run it ended
        (semantics §6.8: the worktree is always removed): the engine removes them once the
        transaction is committed (:attr:`to_release`), so a transition refused or replayed on
        another writer's state removes nothing. A crash in between leaves them on disk, and
        their items' tombstones naming them: :meth:`sweep_worktrees` finds them again."""
        self.to_release.extend(held)

    def sweep_worktrees(self) -> None:
        """Let go of the worktrees dropped items' tombstones still name (a crash came between a
        transition and their removal), and forget them on the tombstones: for a resume or a
        revert, which remove them once committed."""
        for st in self.steps.values():
            if st.dropped and st.worktree:
                self.release_worktrees([st.worktree])
                st.worktree = None
                self.dirty.add(st.key)

    def _rebuild_indexes(self) -> None:
        for key, st in self.steps.items():
            if st.dropped:
                continue
            if st.status == READY:
                self.outstanding[key] = None
            elif st.status == WAITING_GATE:
                self.waiting[key] = None
            elif st.status == RUNNING and st.command_input is not UNDEFINED:
                self.evaluating[key] = None
        for key, st in self.steps.items():
            if st.dropped or st.index is not None:
                continue
            loc = self.locate(key)
            if loc.scope.parent is not None and self.steps[loc.scope.parent].status != RUNNING:
                continue
            if st.status not in TERMINAL:
                self.open[loc.scope.prefix] = self.open.get(loc.scope.prefix, 0) + 1
        for key, st in self.steps.items():
            if st.fan is not None and st.status == RUNNING:
                self.fans[key] = _count_items(self, st)
        self.outstanding = dict.fromkeys(sorted(self.outstanding, key=self.order_key))
        self.waiting = dict.fromkeys(sorted(self.waiting, key=self.order_key))
        self.evaluating = dict.fromkeys(sorted(self.evaluating, key=self.order_key))

    def order_key(self, key: str) -> tuple[int, int, int]:
        """Ready-list order: root steps, then subflow children, then fanout items."""
        loc = self.locate(key)
        if loc.index is not None:
            return (2, loc.cstep.index, loc.index)
        if loc.scope.parent is not None:
            return (1, self.root.flow.steps[loc.scope.parent].index, loc.cstep.index)
        return (0, loc.cstep.index, 0)


def load(stored: Any, env: Env) -> LiveRun:
    """Rebuild a live run from what the store holds of it (a ``StoredRun``), checking the stored
    spec's digest and the shape of every record it uses: one that is JSON of another shape than
    the engine writes (only an edit or damage to the store makes one) is a StoreError naming the
    run and the record, like text that is not JSON, never a Python error later; so is a record
    the run's state requires that is missing (see :func:`_absent`)."""
    run_id = stored.run_id
    header = Header.from_dict(stored.header, run_id)
    records = stored.steps
    spec = records.get(SPEC_KEY)
    if spec is None:
        raise EngineError(f"run {run_id} has no stored spec", error_type="corrupt_run", run_id=run_id)
    data, header.inputs = unpack_spec_record(spec, run_id)
    if digest(data) != header.digest:
        raise EngineError(f"run {run_id}: the stored spec does not match its digest (edited?)",
                          error_type="spec_digest_mismatch", run_id=run_id)
    cspec: CompiledSpec = compiled(build_spec(data), data, header.digest)
    if header.flow not in cspec.flows:
        raise damaged(f"the header of run {run_id!r}", f"not this run's header (its spec has no flow {header.flow!r})")
    steps = {}
    checkpoints = {}
    for key, record in records.items():
        if not key.startswith("@"):
            steps[key] = StepState.from_dict(record, key, run_id)
        elif key.startswith(CHECKPOINT_PREFIX):
            checkpoints[key[len(CHECKPOINT_PREFIX):]] = _checkpoint(record, key, run_id)
    driver = records.get(DRIVER_KEY)
    if driver is not None:
        check_shape(driver, _DRIVER_SHAPE, lambda: f"the record {DRIVER_KEY!r} of run {run_id!r}")
    try:
        run = LiveRun(header, cspec, steps, stored.version, env)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:  # from _rebuild_indexes
        if isinstance(exc, KeyError) and exc.args and exc.args[0] in _absent(cspec, header.flow, steps):
            raise _missing(exc.args[0], run_id) from exc
        raise damaged(f"a step record of run {run_id!r}",
                      f"not one its spec has ({type(exc).__name__}: {exc})") from exc
    absent = _absent(cspec, header.flow, steps)
    if absent:
        raise _missing(absent[0], run_id)
    run.checkpoint_records = checkpoints
    run.driver = driver
    return run


def _absent(cspec: CompiledSpec, flow: str, steps: dict[str, StepState]) -> list[str]:
    """The records the run's state requires that are not in the store (deleted by hand): every
    step of the run's flow, every step of a subflow that is running or has a live record, and
    every item of a running fanout. The engine writes each of these sets in one transaction."""
    return [key for key in _required(cspec, cspec.flows[flow], steps) if key not in steps]


def _missing(key: str, run_id: str) -> StoreError:
    return StoreError(f"the record of step {key!r} of run {run_id!r} is missing from the store: "
                      "the store was edited or damaged")


def _required(cspec: CompiledSpec, flow: CFlow, steps: dict[str, StepState]) -> Iterator[str]:
    """The keys of the records the run's root steps and their states require (see above)."""
    with_live = {key.partition("/")[0] for key, st in steps.items() if "/" in key and not st.dropped}
    for sid in flow.order:
        yield sid
        st = steps.get(sid)
        if st is None or st.dropped:
            continue
        cstep = flow.steps[sid]
        if cstep.kind == "run" and (st.status == RUNNING or sid in with_live) and cstep.step.run in cspec.flows:
            yield from (f"{sid}/{child}" for child in cspec.flows[cstep.step.run].order)
        elif cstep.kind == "fanout" and st.status == RUNNING and st.fan is not None:
            count = st.fan.get("count")
            yield from (f"{sid}/{i}" for i in range(count if isinstance(count, int) else 0))


#: A checkpoint record (see :func:`lockgate.engine.checkpoints.commit`); its step records are
#: checked when it is reverted to (``StepState.from_dict``), not on every load.
_CHECKPOINT_SHAPE = Shape("a checkpoint record", {"key": str, "label": str, "header": dict, "steps": dict},
                          ("label", "header", "steps"))
_CHECKPOINT_HEADER_SHAPE = Shape("a checkpoint's header", HEADER_SHAPE.types, (), RUN_STATUSES)
#: A driver record (see :class:`lockgate.engine.drivers.Driver`): its other fields are read
#: leniently (a claim that cannot be read is no claim).
_DRIVER_SHAPE = Shape("a driver record", {"key": str, "owner": (str, type(None))}, ("owner",))


def _checkpoint(record: Any, key: str, run_id: str) -> dict[str, Any]:
    """``record``, the checkpoint stored under ``key``, once its shape is checked."""
    def what() -> str:
        return f"the record {key!r} of run {run_id!r}"

    check_shape(record, _CHECKPOINT_SHAPE, what)
    check_shape(record["header"], _CHECKPOINT_HEADER_SHAPE, what)
    return record


def _count_items(run: LiveRun, fan: StepState) -> FanCounters:
    assert fan.fan is not None
    counters = FanCounters(count=fan.fan["count"])
    for i in range(counters.count):
        item = run.steps[f"{fan.key}/{i}"]
        if item.status != PENDING:
            counters.next = i + 1
        if item.status in TERMINAL:
            counters.done += 1
            counters.ok += item.status == "succeeded"
        elif item.status != PENDING:
            counters.active += 1
    return counters


#: The event ending a failed run, by error type (the source document's vocabulary has its own
#: event for a spent flow budget); any other failure ends with ``failed``.
_END_EVENTS = {"budget_exhausted": "budget_exhausted"}


def is_engine_record(key: str) -> bool:
    return key == SPEC_KEY or key.startswith(CHECKPOINT_PREFIX) or key.startswith("@")


def _jsonable(detail: dict[str, Any]) -> dict[str, Any]:
    """``detail`` without UNDEFINED values (rare: the usual detail is returned as it is)."""
    for value in detail.values():
        if value is UNDEFINED:
            return {k: v for k, v in detail.items() if v is not UNDEFINED}
    return detail
