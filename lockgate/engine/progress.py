"""Progress events: what the runner reports while it drives a run.

The notebook's live DAG, the CLI's progress display and logs all consume the same
:class:`ProgressEvent` stream. Observers only watch: an observer that raises is logged and
ignored, never fatal to the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("lockgate.runner")

KINDS = ("step_started", "step_succeeded", "step_failed", "step_retrying", "step_skipped",
         "gate_waiting", "gate_resolved", "run_finished")


@dataclass(frozen=True)
class ProgressEvent:
    """One thing that happened in a run.

    ``violations`` is set on ``step_failed``/``step_retrying``; ``status`` on ``run_finished``
    (``complete``, ``error``, ``killed``, ``cancelled``, ``await_gate``); ``data`` carries the
    rest (the output of a succeeded step, a gate's decision, the agent's usage...).
    """

    kind: str
    run_id: str
    step_id: str | None = None
    attempt: int | None = None
    agent: str | None = None
    message: str | None = None
    violations: Sequence[Mapping[str, Any]] = ()
    status: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "run_id": self.run_id, "at": self.at}
        for key in ("step_id", "attempt", "agent", "message", "status"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.violations:
            out["violations"] = [dict(v) for v in self.violations]
        if self.data:
            out["data"] = dict(self.data)
        return out


Observer = Callable[[ProgressEvent], Any]


class Emitter:
    """Delivers events to an observer, swallowing (and logging) the observer's errors."""

    def __init__(self, observer: Observer | None) -> None:
        self.observer = observer
        self.history: list[ProgressEvent] = []

    def __call__(self, kind: str, run_id: str, **fields: Any) -> ProgressEvent:
        if kind not in KINDS:
            raise ValueError(f"unknown progress event kind {kind!r}")
        event = ProgressEvent(kind, run_id, **fields)
        self.history.append(event)
        if self.observer is not None:
            try:
                self.observer(event)
            except Exception:  # observation is separate from control
                log.warning("progress observer failed on %s", kind, exc_info=True)
        return event
