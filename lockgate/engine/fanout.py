"""Fanout: one item record per element of ``over`` (key ``<step>/<index>``), moved through the
stages by the same settle path whoever executes them.

At most ``concurrency`` items are active at once, promoted in index order. Each stage attempt gets
its own token; a stage retries up to ``stage.attempts ?? step.attempts ?? 2`` (no identical
evidence stop for stages). When every item is terminal the fanout settles: ``require`` first (so a
failing batch leaves the workspace untouched), then, for engine dispatch with ``isolation:
worktree``, ``pre_merge`` commands and the items' patches applied in index order with
``git apply --index --3way``. Consumer dispatch never merges: that is the consumer's job.

Events (the source document's vocabulary): ``fanout_started``, ``fanout_item_ready`` per issuance,
``fanout_attempt_result`` per stage attempt, ``fanout_item_skipped`` per stage a ``when`` skips,
``fanout_merge``. The event that ends an item carries ``done: <its final status>``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ..dsl.refs import scan
from ..dsl.values import UNDEFINED
from ..errors import EngineError, RefError
from . import budget, worktrees
from .advance import (
    check_result,
    fail_attempt,
    output_source_failure,
    record_judged,
    render_task,
    resolver,
    succeed,
)
from .ensures import when_skips
from .live import FanCounters, LiveRun, Located
from .model import FAILED, PENDING, READY, RUNNING, SKIPPED, SUCCEEDED, StepState, now


def start_fanout(run: LiveRun, loc: Located, st: StepState) -> None:
    fan = loc.cstep.step.fanout
    assert fan is not None
    ref = scan(fan.over or "").full
    try:
        value = resolver(run, run.root)(ref) if ref is not None else UNDEFINED
    except RefError as exc:
        value, problem = UNDEFINED, exc.message
    else:
        problem = None
    if not isinstance(value, list):
        got = problem or ("unavailable" if value is UNDEFINED else type(value).__name__)
        fail_attempt(run, loc, st, {"kind": "fanout", "reason": f"fanout over {fan.over} must resolve to an "
                                    f"array, got {got}", "violations": []}, forced=True)
        return
    if engine_worktree(loc):
        workspace = run.workspace()
        why = worktrees.unusable(workspace) if workspace is not None else None
        if workspace is None or why is not None:
            reason = (f"isolation: worktree needs a git repository with a commit: {why}" if why else
                      "isolation: worktree needs a workspace (a git repository) for the run")
            fail_attempt(run, loc, st, {"kind": "fanout", "reason": reason, "violations": []}, forced=True)
            return
    run.drop_records(st.key + "/")
    st.fan = {"count": len(value), "epoch": st.epoch, "dispatch": fan.dispatch}
    st.started_at = st.started_at or now()
    run.set_status(st, RUNNING)
    for i, element in enumerate(value):
        run.add_record(StepState(f"{st.key}/{i}", index=i, item=element))
    run.fans[st.key] = FanCounters(count=len(value))
    run.event("fanout_started", st.key, count=len(value), dispatch=fan.dispatch)
    if not value:
        settle_fanout(run, loc, st)
    else:
        promote(run, st)


def promote(run: LiveRun, fan_st: StepState) -> None:
    """Make pending items ready, in index order, up to the fanout's concurrency."""
    counters = run.fans.get(fan_st.key)
    if counters is None or fan_st.status != RUNNING or run.header.status != "running":
        return
    loc = run.locate(fan_st.key)
    fan = loc.cstep.step.fanout
    limit = (fan.concurrency if fan and fan.concurrency else None) or counters.count
    while counters.active < limit and counters.next < counters.count and run.header.status == "running":
        item = run.steps[f"{fan_st.key}/{counters.next}"]
        counters.next += 1
        counters.active += 1
        _ready_item(run, loc, fan_st, item)


def _ready_item(run: LiveRun, loc: Located, fan_st: StepState, item: StepState) -> None:
    stages = loc.cstep.stages
    root_input = run.header.inputs
    while True:
        cst = stages[item.stage]
        if cst.when is None:
            break
        bindings = {"result": run.result_map(run.root, cst.when.needs), "input": root_input,
                    "item": item.item, "prev": item.prev}
        why = when_skips(cst.when, bindings, run.workspace())
        if why is None:
            break
        event = run.event("fanout_item_skipped", item.key, stage=item.stage, reason=why)
        if item.stage == len(stages) - 1:
            item.skip_reason = why
            run.set_status(item, SKIPPED)
            _finish_item(run, loc, fan_st, item, event)
            return
        item.stage += 1
    try:
        task, inputs = render_task(run, run.root, cst.do, item.item, item.prev)
    except RefError as exc:
        _item_failed(run, loc, fan_st, item, {"kind": "render", "reason": f"task render failed: {exc.message}",
                                               "violations": []})
        return
    over = budget.reserve(run, run.root, fan_st, loc.cstep.budget)
    if over is not None:
        reason = budget.exhausted(over, dispatch=True)
        if over.level == "flow":
            run.fail_run("budget_exhausted", reason, item.key)
        else:
            _item_failed(run, loc, fan_st, item, {"kind": "budget", "reason": reason, "violations": []})
        return
    if engine_worktree(loc):
        workspace = run.workspace()
        assert workspace is not None
        try:
            run.irreversible = True
            item.worktree = worktrees.ensure(workspace, item.worktree)
        except worktrees.GitError as exc:
            _item_failed(run, loc, fan_st, item, _worktree_failure(exc))
            return
    item.task = task
    item.inputs = inputs
    run.issue(item)
    run.event("fanout_item_ready", item.key, stage=item.stage, attempt=item.stage_attempts + 1)


def item_result(run: LiveRun, loc: Located, item: StepState, result: Any, usage: dict[str, Any] | None,
                rejected: dict[str, Any] | None = None) -> None:
    """Settle one stage result of a fanout item (consumer- or engine-executed) as a ``do``
    step's settles (semantics §6.8): the usage first, then ``rejected`` (the engine's own
    failure of the report, or the agent's: see :func:`lockgate.engine.results.step_done`), the
    contract and the ensures."""
    fan_st = run.steps[loc.cstep.id]
    fan_loc = run.locate(loc.cstep.id)
    failure = budget.invalid_usage(usage)
    if failure is None:
        if usage and not _item_spend(run, loc, fan_loc, fan_st, item, budget.reported_spend(usage)):
            return
        failure = budget.reported_dispatches(usage) or rejected
    if failure is not None:
        _item_failed(run, fan_loc, fan_st, item, failure)
        return
    cst = loc.cstep.stages[item.stage]
    bindings = {"input": run.header.inputs, "item": item.item, "prev": item.prev}
    cwd = worktrees.path(item.worktree) if item.worktree else run.workspace()
    judged: list[dict[str, Any]] = []
    verdict = check_result(run, run.root, cst.out, cst.ensures, result, bindings, workspace=cwd, judged=judged,
                           subject=(item.key, item.worktree or run.header.workspace, not run.irreversible))
    if judged and not _item_spend(run, loc, fan_loc, fan_st, item, record_judged(run, item.key, judged)):
        return
    if verdict is not None:
        _item_failed(run, fan_loc, fan_st, item, verdict, output=result)
        return
    final = item.stage == len(loc.cstep.stages) - 1
    if final and item.worktree:  # the item's work is its patch: no patch, no success (one attempt record)
        try:
            run.irreversible = True
            item.patch = worktrees.capture_patch(item.worktree)
        except worktrees.GitError as exc:
            _item_failed(run, fan_loc, fan_st, item, _worktree_failure(exc), output=result)
            return
    item.attempts.append({"attempt": item.stage_attempts + 1, "stage": item.stage, "at": now(), "result": result})
    event = run.event("fanout_attempt_result", item.key, stage=item.stage, result=result)
    item.failure = None  # a stage that succeeds ends its failures: the next stage starts clean
    item.accepted = item.token
    item.token = None
    if not final:
        item.prev = result
        item.stage += 1
        item.stage_attempts = 0
        run.set_status(item, PENDING)
        _ready_item(run, fan_loc, fan_st, item)
        return
    item.output = result
    run.set_status(item, SUCCEEDED)
    _finish_item(run, fan_loc, fan_st, item, event)


def _worktree_failure(exc: worktrees.GitError) -> dict[str, Any]:
    """The failure of an item's attempt whose worktree git could not make or read: retried, so
    its violation says why (what reads a retry's ``violations`` learns it)."""
    return {"kind": "worktree", "reason": str(exc), "violations": [{"message": str(exc)}]}


def _item_spend(run: LiveRun, loc: Located, fan_loc: Located, fan_st: StepState, item: StepState,
                spend: dict[str, Any] | None) -> bool:
    """Settle what an item's attempt (or its judges) spent in the fanout's and the flow's
    ledgers; False when a budget ran out (the run or the attempt is then settled)."""
    if not spend:
        return True
    over = budget.charge(run, item.key, budget.ledgers(run, run.root, fan_st, loc.cstep.budget), spend)
    if over is None:
        return True
    reason = budget.exhausted(over)
    if over.level == "flow":
        item.attempts.append({"attempt": item.stage_attempts + 1, "stage": item.stage, "at": now(),
                              "failure": {"kind": "budget", "reason": reason}})
        item.token = None
        run.set_status(item, FAILED)
        run.fail_run("budget_exhausted", reason, item.key, spent=dict(run.header.spent))
    else:
        _item_failed(run, fan_loc, fan_st, item, {"kind": "budget", "reason": reason, "violations": []})
    return False


def _item_failed(run: LiveRun, loc: Located, fan_st: StepState, item: StepState, failure: dict[str, Any],
                 output: Any = UNDEFINED) -> None:
    cst = loc.cstep.stages[item.stage]
    limit = cst.attempts or loc.cstep.step.attempts or 2
    n = item.stage_attempts + 1
    item.stage_attempts = n
    failure = {"attempt": n, "stage": item.stage, **failure}
    record: dict[str, Any] = {"attempt": n, "stage": item.stage, "at": now(), "failure": failure}
    if output is not UNDEFINED:
        record["result"] = output
    item.attempts.append(record)
    item.failure = failure
    item.token = None
    event = run.event("fanout_attempt_result", item.key, stage=item.stage, failure=failure)
    retry = n < limit
    run.failed_now.append((item.key, failure, retry))
    if retry:
        run.set_status(item, PENDING)
        _ready_item(run, loc, fan_st, item)
        return
    run.set_status(item, FAILED)
    _finish_item(run, loc, fan_st, item, event)


def _finish_item(run: LiveRun, loc: Located, fan_st: StepState, item: StepState,
                 event: dict[str, Any]) -> None:
    """Count a terminal item; ``event`` (the attempt result or skip that ended it) is marked
    ``done: <status>``, so an item's end costs no event of its own."""
    event["detail"]["done"] = item.status
    counters = run.fans[fan_st.key]
    counters.active -= 1
    counters.done += 1
    if item.status == SUCCEEDED:
        counters.ok += 1
    if item.worktree:  # removed once this transition, which records its patch, is committed
        run.release_worktrees([item.worktree])
    if counters.done == counters.count:
        settle_fanout(run, loc, fan_st)
    elif fan_st.key not in run.to_promote:
        run.to_promote.append(fan_st.key)


def settle_fanout(run: LiveRun, loc: Located, fan_st: StepState) -> None:
    """Every item is terminal: judge ``require``, merge (engine worktree), produce the output."""
    fan = loc.cstep.step.fanout
    assert fan is not None
    counters = run.fans.pop(fan_st.key)
    need = _required(fan.require, counters.count)
    if counters.ok < need:
        fail_attempt(run, loc, fan_st, {"kind": "require", "violations": [],
                                        "reason": f"fanout require {fan.require or 'all'} not met "
                                                  f"({counters.ok}/{counters.count} succeeded)"}, forced=True)
        return
    items = [run.steps[f"{fan_st.key}/{i}"] for i in range(counters.count)]
    output = [it.output if it.status == SUCCEEDED else None for it in items]
    if engine_worktree(loc) and not _merged(run, loc, fan_st, [it for it in items if it.status == SUCCEEDED
                                                                  and it.patch]):
        return
    verdict = output_source_failure(run, loc.scope, loc.cstep, output)
    if verdict is not None:
        fail_attempt(run, loc, fan_st, verdict, output=output, forced=True)
        return
    fan_st.attempts.append({"attempt": len(fan_st.attempts) + 1, "at": now(), "result": output,
                            "succeeded": counters.ok, "count": counters.count})
    succeed(run, loc, fan_st, output)


class MergeWatch:
    """What the merges of one engine call did, and how they tell whether the run as stored is
    still the one the transition started from (``unchanged``: no other writer saved since).

    The engine makes one per transaction it may replay (:meth:`Engine._transact`) and sets
    ``unchanged`` for each try. A merge is a side effect the store cannot undo, so it starts
    (and goes on, patch after patch) only while the run is unchanged as stored; otherwise the
    transition is given up (EngineError ``run_changed``) and replayed on what is stored, where
    the run may have been cancelled. ``applied`` lists, per fanout, the items whose patches the
    call's tries found in or put in the index: when the call ends refused (the run ended
    meanwhile), the engine records them all the same (:meth:`record`)."""

    def __init__(self) -> None:
        self.unchanged: Callable[[], bool] | None = None
        self.applied: dict[str, list[int]] = {}

    def over(self, unchanged: Callable[[], bool]) -> AbstractContextManager[None]:
        """Watch the merges of one try of the transition."""
        self.unchanged = unchanged
        return _watching(self)

    def check(self, run: LiveRun, key: str) -> None:
        if self.unchanged is not None and not self.unchanged():
            raise EngineError(f"run {run.header.id} changed while fanout {key} was merging; the merge goes on "
                              "from what is stored", error_type="run_changed")

    def record(self, run: LiveRun) -> None:
        """The audit of what the call merged although the transition that merged was not saved."""
        for key, applied in self.applied.items():
            run.event("fanout_merge", key, items=sorted(applied), run_status=run.header.status,
                      note="applied before the run ended; the transition that merged was not saved")


_WATCH: ContextVar[MergeWatch | None] = ContextVar("lockgate_merge_watch", default=None)


@contextmanager
def _watching(watch: MergeWatch) -> Iterator[None]:
    token = _WATCH.set(watch)
    try:
        yield
    finally:
        _WATCH.reset(token)


def _merged(run: LiveRun, loc: Located, fan_st: StepState, patched: list[StepState]) -> bool:
    """Run the fanout's ``pre_merge`` commands, then merge the items' patches; False when that
    failed (the fanout or the run is settled then).

    Safe to replay and to resume, by this invariant: the workspace's :class:`MergeJournal`
    records ``pre_merge`` passed for this merge (its items' tokens and patches) only after its
    commands passed, and an item's patch as applied only right after it went in, in index order,
    with what the index held at its paths just before and what the patch gives there. So a try
    that finds them recorded skips them; at most one item, the first not recorded, may be in the
    index unrecorded (a kill between its ``git apply`` and the record), and no patch went in
    after it: it is out when the index holds at its paths what it held before, in when it holds
    what the patch gives (``git apply`` writes the index at once), and when the user changed
    those paths in between the merge stops and says so (:func:`_gone_in`). No item is applied
    twice, dropped, nor reported as not merged while staged. (Asking git whether a patch applies
    in reverse would not do: a hunk matches at any offset, so an item making the change an
    earlier one made elsewhere in the file would be taken for applied.)"""
    fan = loc.cstep.step.fanout
    assert fan is not None
    workspace = run.workspace()
    assert workspace is not None
    run.irreversible = True
    journal = worktrees.MergeJournal(workspace, run.header.id, fan_st.key)
    acts = [f"{it.accepted} {_digest(it.patch or '')}" for it in patched]
    merge = f"pre_merge {_digest(chr(10).join(acts))}"
    if not journal.has(merge):
        problem = worktrees.run_pre_merge(workspace, fan.pre_merge)
        if problem is not None:
            fail_attempt(run, loc, fan_st, {"kind": "pre_merge", "reason": _unmerged(run, workspace, problem, patched),
                                            "violations": []}, forced=True)
            return False
        journal.note(merge)
    failed = _merge(run, workspace, fan_st.key, patched, [f"applied {act}" for act in acts], journal)
    if failed is not None:
        run.fail_run("merge_failed", *failed)
        return False
    run.event("fanout_merge", fan_st.key, items=[it.index for it in patched])
    return True


def _unmerged(run: LiveRun, workspace: Path, problem: str, patched: list[StepState]) -> str:
    """``problem`` (a failed ``pre_merge``), saying where the items' patches, merged nowhere,
    are saved: the run keeps them only in its records, which a retry of the fanout drops."""
    if not patched:
        return problem
    saved = worktrees.save_patches(workspace, run.header.id, {it.index: it.patch or "" for it in patched})
    return (f"{problem}. Nothing was merged: the patches of items {[it.index for it in patched]} are saved in "
            f"{saved} (git apply --3way them by hand)")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _merge(run: LiveRun, workspace: Path, key: str, patched: list[StepState], acts: list[str],
           journal: worktrees.MergeJournal) -> tuple[str, str] | None:
    """Apply the items' patches in index order (skipping those the journal or the index holds
    already: see :func:`_merged`); when one does not apply, (why, its key): the items merged
    before it, and where the patches of it and the items after it are saved (the run keeps them
    only in its records) to apply by hand."""
    watch = _WATCH.get()
    for n, it in enumerate(patched):
        problem = _apply_once(run, workspace, key, it, acts[n], journal, watch)
        if problem is None:
            continue
        saved = worktrees.save_patches(workspace, run.header.id,
                                       {later.index: later.patch or "" for later in patched[n:]})
        merged, rest = [b.index for b in patched[:n]], [a.index for a in patched[n + 1:]]
        return _merge_failure(it, problem, merged, rest, saved), it.key
    return None


def _merge_failure(it: StepState, problem: worktrees.Refused, merged: list[int], rest: list[int], saved: Path) -> str:
    """Why the merge stopped at item ``it`` and what to do by hand: resolve its conflicts (the
    rest of its patch is staged: applying it again would recreate them), or, when nothing of it
    went in, apply its patch; then the patches of the items after it."""
    before = f"Merged before it: items {merged}" if merged else "No item was merged before it"
    after = f"; not merged: items {rest}" if rest else ""
    if problem.unknown:
        return (f"fanout merge failed at item {it.index} (whether its patch went in cannot be told): {problem.said}. "
                f"{before}{after}. The patches of items {[it.index, *rest]} are saved in {saved}: compare item "
                f"{it.index}'s with what is staged (git diff --cached), then git apply --3way what is missing")
    if not problem.conflicted:
        return (f"fanout merge failed at item {it.index} (nothing of it was applied): {problem.said}. {before}{after}. "
                f"The patches of items {[it.index, *rest]} are saved in {saved} (git apply --3way them by hand)")
    files = ", ".join(f"'{name}'" for name in problem.conflicted)
    then = (f"; then git apply --3way the patches of items {rest} by hand (item {it.index}'s is saved for reference: "
            "applying it again recreates the conflicts)" if rest else
            f" (item {it.index}'s patch is saved for reference: applying it again recreates the conflicts)")
    return (f"fanout merge failed at item {it.index}, applied in part: its changes conflict with those merged before "
            f"it in {files}; its other changes are staged. {before}{after}. The patches of items {[it.index, *rest]} "
            f"are saved in {saved}. Resolve the conflicts in {files} (git's markers are there; or keep what was "
            f"merged before it with `git checkout --ours -- <file>`), then `git add` them{then}")


def _apply_once(run: LiveRun, workspace: Path, key: str, it: StepState, act: str, journal: worktrees.MergeJournal,
                watch: MergeWatch | None) -> worktrees.Refused | None:
    """Put one item's patch in the index unless the journal says it is there, or that it was
    begun and the index has changed since at a path it changes (see :func:`_merged`); why, when
    it does not apply."""
    if not journal.has(act):
        if watch is not None:
            watch.check(run, key)
        patch = it.patch or ""
        paths = worktrees.patch_paths(workspace, patch)
        gone_in = _gone_in(workspace, journal.states(act), paths)
        if isinstance(gone_in, worktrees.Refused):
            return gone_in
        if not gone_in:
            journal.begin(act, worktrees.index_state(workspace, paths), worktrees.state_with(workspace, patch, paths))
            problem = worktrees.apply_patch(workspace, patch, paths)
            if problem is not None:
                return problem
        journal.note(act)
    if watch is not None and it.index not in watch.applied.setdefault(key, []):
        watch.applied[key].append(it.index)
    return None


def _gone_in(workspace: Path, states: tuple[str | None, str | None] | None,
             paths: list[str]) -> bool | worktrees.Refused:
    """Whether an item's patch, which changes ``paths`` and whose apply was begun with the index
    at ``states`` (before, after: see :meth:`worktrees.MergeJournal.begin`; None: not begun),
    went in: the index holds at its paths what it held before (no) or what the patch gives
    (yes). Anything else is the conflicts the apply left, or someone's change since: Refused,
    to be looked at rather than guessed."""
    if states is None:
        return False
    before, after = states
    now = worktrees.index_state(workspace, paths)
    if now == before:
        return False
    if after is not None and now == after:
        return True
    conflicted = worktrees.unmerged(workspace, paths)
    if after is None and conflicted:  # its apply left the conflicts it was expected to leave
        return worktrees.Refused("git's 3-way merge left conflicts", conflicted)
    return worktrees.Refused(f"its merge was interrupted, and its files were changed in the index since "
                             f"({', '.join(paths)})", unknown=True)


def _required(require: Any, count: int) -> int:
    if require == "any":
        return 1
    if isinstance(require, int):
        return require
    return count


def engine_worktree(loc: Located) -> bool:
    """Whether ``loc`` is (in) an engine-dispatch ``isolation: worktree`` fanout: one whose items'
    worktrees this process makes and merges."""
    fan = loc.cstep.step.fanout
    return fan is not None and fan.engine_worktrees


def cwd_of(run: LiveRun, item: StepState) -> str | None:
    if item.worktree:
        return item.worktree
    return run.header.workspace


__all__ = ["READY", "cwd_of", "item_result", "promote", "settle_fanout", "start_fanout"]
