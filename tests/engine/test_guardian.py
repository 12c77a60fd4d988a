"""The process groups a process starts die with it: killed with SIGKILL, or exiting with
commands still running (see :mod:`lockgate.engine.agents.guardian`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from processes import GUARD_S, running, wait_until

from lockgate.engine.agents.guardian import Guardian

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def started_group(tmp_path: Path) -> tuple[subprocess.Popen, int, int]:
    """A process (not a lockgate one) running a command through ProcessGroup.run: it, the
    command's leader pid and a grandchild's pid, once both run. (Commands here read their stdin
    first: it is closed once the group is registered with the guardian.)"""
    script = textwrap.dedent(f"""
        import asyncio
        from lockgate.engine.agents.process import ProcessGroup
        command = "cat >/dev/null; sleep 300 & echo $! > {tmp_path}/grandchild; echo $$ > {tmp_path}/leader; wait"
        asyncio.run(ProcessGroup().run(["sh", "-c", command]))
        """)
    parent = subprocess.Popen([sys.executable, "-c", script], env=ENV)
    files = [tmp_path / "leader", tmp_path / "grandchild"]
    wait_until(lambda: all(f.exists() and f.read_text().strip() for f in files), "the command to start")
    leader, grandchild = (int(f.read_text()) for f in files)
    return parent, leader, grandchild


def test_a_command_dies_with_the_process_that_started_it_killed_with_sigkill(tmp_path):
    parent, leader, grandchild = started_group(tmp_path)
    assert running(leader) and running(grandchild)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    wait_until(lambda: not running(leader) and not running(grandchild), "the command's group to be killed")


def test_a_process_exiting_with_commands_running_stops_them_and_its_guardian(tmp_path):
    script = textwrap.dedent(f"""
        import asyncio, os
        from lockgate.engine.agents.guardian import GUARDIAN
        from lockgate.engine.agents.process import ProcessGroup

        async def main():
            await ProcessGroup().run(["true"])  # starts the guardian
            print(GUARDIAN._process.pid, flush=True)
            command = "cat >/dev/null; echo $$ > {tmp_path}/leader; sleep 300"
            asyncio.get_running_loop().create_task(ProcessGroup().run(["sh", "-c", command]))
            while not os.path.exists("{tmp_path}/leader") or not open("{tmp_path}/leader").read():
                await asyncio.sleep(0.02)

        asyncio.run(main())
        """)
    done = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, check=False,
                          timeout=GUARD_S)
    assert done.returncode == 0, done.stderr
    guardian, leader = int(done.stdout), int((tmp_path / "leader").read_text())
    # the exit waited for the guardian: the command is gone, and so is the guardian
    assert not running(leader) and not running(guardian)


def sleeping_group() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "300"], start_new_session=True)


def test_a_guardian_that_died_is_started_again_knowing_every_group():
    guardian = Guardian()
    first, second = sleeping_group(), sleeping_group()
    try:
        guardian.watch(first.pid)
        old = guardian._process
        old.kill()
        old.wait()
        guardian.watch(second.pid)
        assert guardian._process is not old
        guardian.close()  # as at exit: both groups still listed are stopped, SIGTERM first
        assert first.wait(GUARD_S) == -signal.SIGTERM and second.wait(GUARD_S) == -signal.SIGTERM
    finally:
        for group in (first, second):
            group.kill()
            group.wait()


def test_a_group_that_ended_is_left_alone():
    guardian = Guardian()
    group = sleeping_group()
    try:
        guardian.watch(group.pid)
        guardian.forget(group.pid)
        guardian.close()
        assert group.poll() is None  # still running: not the guardian's any more
    finally:
        group.kill()
        group.wait()


def test_a_guardian_killed_while_a_group_runs_is_replaced_at_once():
    guardian = Guardian()
    group = sleeping_group()
    try:
        guardian.watch(group.pid)
        old = guardian._process
        old.kill()  # nothing else is started: the running group must stay guarded anyway
        wait_until(lambda: guardian._process is not old and guardian._process is not None,
                   "a new guardian")
        guardian.close()
        assert group.wait(GUARD_S) == -signal.SIGTERM
    finally:
        group.kill()
        group.wait()


def test_a_forked_child_lets_the_parents_guardian_go_quietly(tmp_path):
    script = textwrap.dedent("""
        import asyncio, os, sys, warnings
        warnings.simplefilter("error")
        from lockgate.engine.agents.guardian import GUARDIAN
        from lockgate.engine.agents.process import ProcessGroup

        asyncio.run(ProcessGroup().run(["true"]))
        guardian = GUARDIAN._process.pid
        child = os.fork()
        if child == 0:
            import gc
            gc.collect()
            os._exit(0 if GUARDIAN._process is None else 1)
        _, status = os.waitpid(child, 0)
        print(os.waitstatus_to_exitcode(status), GUARDIAN._process.pid == guardian, GUARDIAN._process.poll())
        """)
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], env=ENV, capture_output=True, text=True,
                          check=False, timeout=GUARD_S)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.split() == ["0", "True", "None"]  # the parent's guardian lives on for it
