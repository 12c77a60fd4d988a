"""The evaluate commands an engine runs itself, for a caller that does not drive the run (a
``lockgate gate approve`` in a terminal, the MCP server, ``lockgate resume``), and the claim it
holds on the run meanwhile.

Whoever holds a run's claim runs its commands (see :mod:`lockgate.engine.drivers`). So an
engine that is to run the commands its call started first claims the run. A live driver
holding the run gets them instead: it starts them once it sees them. The claim is shared by
every call of this engine that runs commands of the run (the MCP server answers other calls
while a command runs), and given up when the last one ends. Before giving it up, the engine
also runs the commands another process's decision left to it meanwhile; it looks once more
after giving it up, since a decision landing at that moment saw the claim still held. A driver
that is stopping (Ctrl-C) runs no more commands: its claim is waited for, then taken.

A command of the built-in runner is stopped once its answer would be refused: its run ended or
was taken over, or its issuance was withdrawn (a revert elsewhere issued its step again, or a
decision reset it), so that the new issuance's command, left to this claim, is not held up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import RunDriven
from . import drivers, evaluate
from .drivers import DRIVER_KEY, Driver
from .ensures import call_sync
from .evaluate import Evaluated, Evaluator
from .model import RUN_RUNNING

#: Seconds between looks at whether a command's run ended, was taken over or withdrew the
#: command's issuance meanwhile.
WATCH_S = 1.0
#: How long a process whose decision started commands waits for a stopping driver to give up
#: the run (its agents' grace period, with room).
STOPPING_WAIT_S = 5.0
RECHECK_S = 0.5

if TYPE_CHECKING:
    from .engine import Engine


class _Renewer:
    """Renews a command claim every :data:`~lockgate.engine.drivers.RENEW_S` seconds, in a thread
    of its own (the calls holding the claim are busy running commands), straight in the store
    (see :func:`drivers.renew_stored`), until stopped or the claim is no longer held."""

    def __init__(self, store: Any, run_id: str, driver: Driver) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._renew, args=(store, run_id, driver), daemon=True,
                                        name=f"lockgate-claim-{run_id}")
        self._thread.start()

    def _renew(self, store: Any, run_id: str, driver: Driver) -> None:
        while not self._stopped.wait(drivers.RENEW_S):
            try:
                held = drivers.renew_stored(store, run_id, driver)
            except Exception:  # noqa: BLE001 - the store is unreachable now: try again next turn
                held = True
            if not held:
                return

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


@dataclass
class _Claim:
    driver: Driver
    renewer: _Renewer
    users: int = 1


class Commands:
    """The command claims of one engine, and the commands running in it (by token)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._claims: dict[str, _Claim] = {}
        #: tokens of the commands this engine is running now: a resume here must not start them
        #: again (a command found running elsewhere, by a process that is gone, is restarted)
        self.running: set[str] = set()

    def run_all(self, run_id: str, calls: list[dict[str, Any]],
                run: Callable[[list[dict[str, Any]]], dict[str, Any] | None]) -> dict[str, Any] | None:
        """``run(calls)`` while holding the run, then ``run`` again on the commands others left
        to it (while the run is still its own: not taken over), until none is left. The last
        response ``run`` gave; None when a live driver holds the run (the commands are its to
        run) or nothing ran.""" 
        if run_id not in self._claims and self._own_drive(run_id) is not None:
            return run(calls)  # the runner's drive holds the run: the rest are its to run
        out = None
        while calls:
            with self._held(run_id) as held:
                if held is None:
                    return out
                out = run(calls) or out
                while self.engine.holds(run_id, held) and (left := self.left_here(run_id)):
                    out = run(left) or out
            calls = self.left_here(run_id)  # a decision made as the claim was given up
        return out

    def run_one(self, evaluator: Evaluator, run_id: str, call: dict[str, Any]) -> Evaluated:
        """The answer of one command of run ``run_id``, run here. The built-in runner's command,
        under a claim of this engine's commands, is stopped (its process group killed) within
        :data:`WATCH_S` seconds once the run ends or is taken over meanwhile (``lockgate cancel``
        in another terminal), or the command's issuance is withdrawn (``lockgate revert``), as a
        drive stops its commands; its answer would be refused anyway. A custom evaluator runs as
        before, in this thread, to its end."""
        claim = self._claims.get(run_id)
        if claim is None or evaluator is not evaluate.run_command:
            return evaluate.evaluate_now(evaluator, call)
        return call_sync(_watched, self.engine.store, evaluator, run_id, call, claim.driver.owner)

    def left_here(self, run_id: str) -> list[dict[str, Any]]:
        """The commands the run has running that no call of this engine runs: left to it by a
        process that decided while it held the run, or by one that died running them."""
        return self.engine.evaluations(run_id)  # leaves out those running here

    def _own_drive(self, run_id: str) -> Driver | None:
        """The drive of this engine's runner that holds the run now, if one does."""
        drive = self.engine.drive_here(run_id)
        if drive is None or not drivers.driving(drive) or not self.engine.holds(run_id, drive):
            return None
        return drive

    @contextmanager
    def _held(self, run_id: str) -> Iterator[Driver | None]:
        """The claim this engine holds the run by meanwhile (claimed for its commands, or its
        runner's drive's), or None while a live driver elsewhere holds it."""
        claim = self._claims.get(run_id)
        drive = self._own_drive(run_id) if claim is None else None
        if drive is not None:
            yield drive
            return
        if claim is None:
            claim = self._claim(run_id)
            if claim is None:
                yield None
                return
        else:
            claim.users += 1
        try:
            yield claim.driver
        finally:
            claim.users -= 1
            if not claim.users:
                del self._claims[run_id]
                claim.renewer.stop()
                drivers.give_up(self.engine, run_id, claim.driver)

    def _claim(self, run_id: str) -> _Claim | None:
        """A claim of the run for this engine's commands; None while a live driver holds it. A
        driver that is stopping (Ctrl-C) runs no more commands: its claim is waited for, up to
        :data:`STOPPING_WAIT_S` seconds (its agents' grace period), then taken. The wait is made
        in ``engine.around_waits()`` (a server serialising engine calls leaves its lock there),
        so another call of this engine may claim the run meanwhile: its claim is then shared."""
        engine = self.engine
        deadline = time.monotonic() + STOPPING_WAIT_S
        while True:
            version = engine.store.current_version(run_id)
            # what the run's last drive recorded is kept: a resume after these commands needs it
            driver = Driver.here(engine.last_config(run_id), engine.last_agents(run_id), commands_only=True,
                                 judge=engine.last_judge(run_id))
            try:
                engine.claim(run_id, driver)
            except RunDriven as refused:
                drivers.ended(driver)
                holder = Driver.from_dict(refused.detail.get("driver"))
                left = deadline - time.monotonic()
                if holder is None or not holder.stopping or left <= 0:
                    return None
                # woken by its release; a driver killed meanwhile writes none: look again soon
                with engine.around_waits():
                    engine.store.wait_for_change(run_id, version, min(left, RECHECK_S))
                shared = self._claims.get(run_id)  # claimed meanwhile by another call of this engine
                if shared is not None:
                    shared.users += 1
                    return shared
                continue
            self._claims[run_id] = claim = _Claim(driver, _Renewer(engine.store, run_id, driver))
            return claim


async def _watched(store: Any, evaluator: Evaluator, run_id: str, call: dict[str, Any], owner: str) -> Evaluated:
    """``call``'s command, stopped when it stops being ``owner``'s to run (see
    :meth:`Commands.run_one`). Reads the store itself: the engine may serve other calls meanwhile."""
    started = time.perf_counter()
    command = asyncio.ensure_future(evaluate.evaluate_async(evaluator, call))
    version, why = None, None
    while why is None:
        await asyncio.wait({command}, timeout=WATCH_S)
        if command.done():
            return command.result()
        version, why = _stopped(store, run_id, call, owner, version)
    command.cancel()
    await asyncio.wait({command})
    return Evaluated(None, RuntimeError(f"stopped: {why}"), (time.perf_counter() - started) * 1000)


def _stopped(store: Any, run_id: str, call: dict[str, Any], owner: str,
             seen: int | None) -> tuple[int | None, str | None]:
    """(the run's version, why ``call``'s command is no longer ``owner``'s to run, or None); the
    run is read only when its version moved past ``seen``. A store that cannot be read stops
    nothing (the command's answer will say what the store says)."""
    try:
        version = store.current_version(run_id)
        if version == seen:
            return version, None
        stored = store.load_run(run_id)
    except Exception:  # noqa: BLE001 - see above
        return seen, None
    status = stored.header.get("status")
    if status != RUN_RUNNING:
        return version, f"the run is {status}"
    record = stored.steps.get(DRIVER_KEY)
    if not isinstance(record, dict) or record.get("owner") != owner:
        return version, "another process took the run over"
    step = stored.steps.get(call["step_id"])
    if not isinstance(step, dict) or step.get("token") != call["token"]:
        return version, "its step was issued again or reset (a revert or a decision elsewhere)"
    return version, None
