"""What a step did in the rounds a gate's revise ended: the summaries a step's record keeps
(``StepState.history``, the trace's ``earlier_rounds``), small and bounded, since every change of
the step rewrites its record; the whole of each round stays in the audit events."""

from __future__ import annotations

from typing import Any

from .model import PENDING, StepState

#: How many of a step's earlier rounds its record keeps (see :func:`remember_round`).
KEPT_ROUNDS = 20
#: How much of a failure's reason (or a revise's note) a round summary keeps.
SUMMARY_CHARS = 300


def cut_short(text: Any) -> Any:
    """``text`` when it is short (or not text); else its first :data:`SUMMARY_CHARS` characters,
    saying how long it was and where the whole of it is."""
    if not isinstance(text, str) or len(text) <= SUMMARY_CHARS:
        return text
    return f"{text[:SUMMARY_CHARS]}… (cut: {len(text)} characters in all, the whole text is in the audit events)"


def last_failure(st: StepState) -> dict[str, Any] | None:
    """``st``'s failure, or the last one among its attempts (a retry that succeeded clears it)."""
    if st.failure is not None:
        return st.failure
    return next((a["failure"] for a in reversed(st.attempts)
                 if isinstance(a, dict) and isinstance(a.get("failure"), dict)), None)


def brief_failure(failure: dict[str, Any]) -> dict[str, Any]:
    """A round summary's account of ``failure``: its kind, its reason cut short, the attempt (and
    fanout stage) it ended and how many violations it had (not the violations themselves: the
    whole failure is in the audit events)."""
    out: dict[str, Any] = {"kind": failure.get("kind"), "reason": cut_short(failure.get("reason"))}
    out.update((k, failure[k]) for k in ("attempt", "stage") if k in failure)
    violations = failure.get("violations")
    if isinstance(violations, list) and violations:
        out["violations"] = len(violations)
    return out


def inner_summary(prefix: str, records: list[StepState]) -> dict[str, Any]:
    """What the items or children under ``prefix`` (those of a fanout or run step) did in a
    round: how many of the direct ones ended in each status and the attempts and dispatches
    they spent; how many attempts failed among all of them (nested ones too) and the first
    failure, by when it happened."""
    direct = [st for st in records if "/" not in st.key[len(prefix):]]
    statuses: dict[str, int] = {}
    for st in direct:
        statuses[st.status] = statuses.get(st.status, 0) + 1
    out: dict[str, Any] = {"count": len(direct), "statuses": statuses,
                           "attempts": sum(len(st.attempts) for st in direct)}
    dispatches = sum(st.spent.get("dispatches", 0) for st in direct)
    if dispatches:
        out["dispatches"] = dispatches
    failures = [(at, st.key, failure) for st in records for at, failure in _failures(st)]
    if failures:
        _, key, first = min(failures, key=lambda f: f[0])
        out["failures"] = len(failures)
        out["first_failure"] = {"step_id": key, **brief_failure(first)}
    return out


def _failures(st: StepState) -> list[tuple[float, dict[str, Any]]]:
    """(when, failure) of each failed attempt of ``st``; its failure alone when it ended failed
    with no attempt failing (a subflow's own failure, a budget stop)."""
    found = [(a.get("at") or 0, a["failure"]) for a in st.attempts
             if isinstance(a, dict) and isinstance(a.get("failure"), dict)]
    if not found and st.failure is not None:
        found = [(st.finished_at or 0, st.failure)]
    return found


def round_summary(st: StepState, inner: list[StepState] | None = None,
                  inner_name: str = "children", *, ended_round: int | None = None) -> dict[str, Any] | None:
    """What step ``st`` did in the round a gate's revise is about to end (round number
    ``ended_round``), for the trace's ``earlier_rounds``: its epoch, status, attempts, last
    failure (kind, reason cut short, number of violations: the whole of it stays in the audit
    events), spend and the revise that started that round; for a gate, the decision it took in
    that round (``revise`` for the gate deciding the revise ending it); for a fanout or run step, what
    its ``inner`` records (items or children, about to be dropped) did, under ``inner_name``
    (see :func:`inner_summary`). None when it never started in that round.

    Kept small: every change of the step rewrites its record, earlier rounds included."""
    if st.status == PENDING and not st.attempts:
        return None
    out: dict[str, Any] = {"epoch": st.epoch, "status": st.status, "attempts": len(st.attempts)}
    failure = last_failure(st)
    if failure is not None:
        out["failure"] = brief_failure(failure)
    if st.spent:
        out["spent"] = dict(st.spent)
    if st.revision is not None:
        out["revision"] = {k: cut_short(v) if k == "note" else v for k, v in st.revision.items()}
    decision = _decision_in(st, ended_round)
    if decision is not None:
        out["decision"] = decision
    if inner:
        out[inner_name] = inner_summary(st.key + "/", inner)
    return out


def _decision_in(st: StepState, round_no: int | None) -> str | None:
    """The last decision gate ``st`` took in round ``round_no`` (who took it, and why, are in
    its ``decisions``, which keeps every one with its round)."""
    for entry in reversed(st.decisions or ()):
        if entry.get("round") == round_no:
            return entry.get("decision")
    return None


def remember_round(st: StepState, summary: dict[str, Any]) -> None:
    """Add ``summary`` (a :func:`round_summary`) to ``history``, which keeps the last
    :data:`KEPT_ROUNDS` of them and counts the ones it lets go in ``history_left_out``: a
    gate may revise without bound (``max_rounds`` has none), and the record holding them is
    rewritten by every change of the step."""
    kept = [*(st.history or ()), summary]
    extra = len(kept) - KEPT_ROUNDS
    if extra > 0:
        st.history_left_out += extra
        kept = kept[extra:]
    st.history = kept
