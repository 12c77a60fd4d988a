"""Whether the evaluate commands a run shows running still have a live process running them.

A command runs under a claim on its run (see :mod:`lockgate.engine.commands`): the drive's of a
runner, or the claim the engine that started it holds for its commands. When that process dies
(killed, crashed), the command dies with it (its process group), yet the run still shows it
running: only a resume starts it again. So a response showing commands running, while no live
process holds the run and none runs here, asks the agent to call ``lockgate_resume`` rather
than to wait (up to the command's timeout and more, ``left_behind``).

The claim is taken just after the transaction that starts a command commits. A command found
with no claim recorded at all (released, or never taken) is given :data:`UNCLAIMED_GRACE_S`
seconds from its start for that claim to land. One whose claim names a process that is gone is
left behind :data:`DEAD_GRACE_S` seconds after this server first saw it so: the command itself
may still be stopping (the guardian sends its process group SIGTERM when the process dies, and
SIGKILL :data:`~lockgate.engine.agents.guardian.GRACE_S` seconds later), and a resume before it
ends would run a second copy beside it in the same workspace.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..engine.agents.guardian import GRACE_S
from ..engine.engine import Engine

#: Seconds after its start that a command with no claim on its run is taken as left behind.
UNCLAIMED_GRACE_S = 5.0
#: Seconds after a dead claim is first seen that its commands are taken as ended (the guardian's
#: SIGTERM-to-SIGKILL grace, and a second for it to notice the death and act).
DEAD_GRACE_S = GRACE_S + 1.0
#: The response keys naming a live process that holds the run (see ``Engine._driven_by``).
_HOLDER_KEYS = ("driven_by", "commands_by", "stopping_by")
#: The key a response gets when the process running its evaluate commands is gone.
GONE = "runner_gone"


def gone_in(engine: Engine, run_id: str, out: Mapping[str, Any],
            dead_since: dict[str, tuple[str, float]]) -> float | None:
    """Seconds until the commands ``out`` shows running are taken as left behind by a process
    that is gone (0: now); None while a live process runs them (this one, or the one holding
    the run), or when ``out`` shows none. ``dead_since``: the dead claim this server last saw on
    each run (its owner) and since when (monotonic seconds; kept by the caller across calls). Call it under
    the lock of the engine's calls."""
    running = [e for e in out.get("evaluating") or () if isinstance(e, Mapping)]
    if not running or any(out.get(key) for key in _HOLDER_KEYS) or engine.driver_of(run_id) is not None:
        dead_since.pop(run_id, None)
        return None
    here_or_done = {str(e.get("step_id")) for e in running} - {c["step_id"] for c in engine.evaluations(run_id)}
    if here_or_done:  # run by a call of this engine (or settled meanwhile): not left behind
        return None
    dead = engine.claim_of(run_id)
    if dead is not None:  # claimed by a process that is gone: its commands are stopping
        if dead.owner != dead_since.get(run_id, ("", 0.0))[0]:  # a death not seen before (another drive's)
            dead_since[run_id] = (dead.owner, time.monotonic())
        return max(0.0, dead_since[run_id][1] + DEAD_GRACE_S - time.monotonic())
    starts = [e["started_at"] for e in running if isinstance(e.get("started_at"), int | float)]
    return max(0.0, max(starts, default=0.0) + UNCLAIMED_GRACE_S - time.time())


def marked(out: dict[str, Any], wait: float | None) -> dict[str, Any]:
    """``out`` with ``runner_gone: true`` when :func:`gone_in` said 0."""
    return {**out, GONE: True} if wait == 0 else out
