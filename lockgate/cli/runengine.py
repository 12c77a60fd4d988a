"""The engine ``lockgate run`` drives: the library's :class:`~lockgate.engine.engine.Engine`, plus
what the command needs to know to tell the user the truth when a run stops early.

* It remembers the run it drives (planned or resumed), so an interrupt can name it.
* It can be *detached* (Ctrl-C): the runner cancels the run when its task is cancelled, and a
  detached engine refuses that cancel, so the run stays as it was, resumable, as after a kill.
  ``lockgate cancel RUN`` remains the way to cancel a run on purpose.
* It notes the steps whose results it reported too late (a stale token): another process
  driving the same run had its result for the step accepted first.

Importing this module imports the engine: only ``lockgate run`` does, when it runs.
"""

from __future__ import annotations

from typing import Any

from ..engine.engine import Engine
from ..errors import EngineError, StaleToken


class RunEngine(Engine):
    """An :class:`Engine` that remembers its run, can be detached, and notes stale results."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run_id: str | None = None
        self.detached = False
        self.stale_steps: list[str] = []

    def detach(self) -> None:
        """From now on, leave the run as it is: its cancellation is refused."""
        self.detached = True

    def plan(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        response = super().plan(*args, **kwargs)
        self.run_id = response.get("run_id") or self.run_id
        return response

    def resume(self, run_id: str) -> dict[str, Any]:
        self.run_id = run_id
        return super().resume(run_id)

    def step_done(self, run_id: str, step_id: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return super().step_done(run_id, step_id, *args, **kwargs)
        except StaleToken:
            self.stale_steps.append(step_id)
            raise

    def cancel(self, run_id: str, reason: str | None = None) -> dict[str, Any]:
        if self.detached:
            # the runner records nothing when its cancel is refused (an EngineError)
            raise EngineError(f"run {run_id} is detached, not cancelled", error_type="detached",
                              run_id=run_id)
        return super().cancel(run_id, reason)
