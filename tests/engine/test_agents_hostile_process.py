"""The command adapter against hostile subprocesses: floods, bad bytes, pipes held open by
escaped descendants, SIGTERM ignored, unread stdin. Each ends as a failed (or, where the output
is sound, a successful) AgentResult within the adapter's own timeout, with bounded reads."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from agent_support import pid_alive, read_pid, wait_until, write_script

from lockgate.engine.agents import CommandAgent, Task
from lockgate.engine.agents.process import MAX_STDOUT


def task(**kw) -> Task:
    base = {"run_id": "r1", "step_id": "write", "prompt": "Write", "agent": "lint"}
    return Task(**{**base, **kw})


def agent(tmp_path: Path, body: str, **kw) -> CommandAgent:
    script = write_script(tmp_path, "agent.py", body)
    return CommandAgent("lint", [sys.executable, str(script)], **kw)


def one_line(failure: str | None) -> str:
    assert failure is not None and "\n" not in failure and len(failure) < 3000, failure
    return failure


async def test_a_stdout_flood_is_cut_at_the_bound_and_the_group_killed(tmp_path):
    lint = agent(tmp_path, """
        import sys
        block = b"x" * (1 << 20)
        for _ in range(100):
            sys.stdout.buffer.write(block)
        sys.stdout.flush()
    """, timeout=60)
    failure = one_line((await lint.execute(task())).failure)
    assert f"printed more than {MAX_STDOUT // (1 << 20)} MiB on stdout" in failure
    assert "the most that is read" in failure and "was killed" in failure


async def test_a_stderr_flood_keeps_only_the_tail(tmp_path):
    lint = agent(tmp_path, """
        import sys
        block = b"e" * (1 << 20)
        for _ in range(100):
            sys.stderr.buffer.write(block)
        sys.stderr.write("the real error\\n")
        sys.exit(2)
    """, timeout=60)
    failure = one_line((await lint.execute(task())).failure)
    assert "exited with status 2" in failure and failure.endswith("the real error")


async def test_non_utf8_stdout_is_a_failure(tmp_path):
    lint = agent(tmp_path, r"""
        import sys
        sys.stdout.buffer.write(b'{"title": "caf\xe9"}')
    """)
    failure = one_line((await lint.execute(task())).failure)
    assert "printed bytes that are not UTF-8 on stdout (at byte 14)" in failure


@pytest.mark.parametrize(("stdout", "reason"), [
    ('{"done": true} and some trailing prose', "Extra data at line 1 column 16"),
    ('{"score": NaN}', "NaN is not a JSON number"),
    ('{"score": 1e999}', "1e999 is out of the range of a JSON number"),
    ("[" * 100_000, "nested too deeply to parse"),
])
async def test_output_that_is_not_strict_json_is_a_failure(tmp_path, stdout, reason):
    lint = agent(tmp_path, f"import sys; sys.stdout.write({stdout!r})\n")
    failure = one_line((await lint.execute(task())).failure)
    assert f"did not print JSON on stdout ({reason})" in failure


async def test_closing_stdout_early_and_running_on_ends_at_the_timeout(tmp_path):
    lint = agent(tmp_path, """
        import os, time
        os.close(1)
        time.sleep(300)
    """, timeout=1.0)
    assert "timed out after 1s and was killed" in one_line((await lint.execute(task())).failure)


async def test_an_escaped_grandchild_holding_stdout_does_not_hold_the_call(tmp_path):
    pidfile = tmp_path / "escaped.pid"
    lint = agent(tmp_path, f"""
        import json, subprocess
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)  # leaves the group
        open({str(pidfile)!r}, "w").write(str(child.pid))
        print(json.dumps({{"done": True}}), flush=True)
    """, timeout=30)
    try:
        async with asyncio.timeout(15):  # the call must not wait for the escaped sleep 300
            result = await lint.execute(task(timeout=20))
        assert result.output == {"done": True}
    finally:
        escaped = read_pid(pidfile)
        if escaped is not None:
            os.kill(escaped, signal.SIGKILL)


async def test_an_escaped_grandchild_does_not_hold_a_timed_out_call(tmp_path):
    pidfile = tmp_path / "escaped.pid"
    lint = agent(tmp_path, f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(300)
    """, timeout=1.0)
    try:
        async with asyncio.timeout(15):
            failure = one_line((await lint.execute(task())).failure)
        assert "timed out after 1s" in failure
    finally:
        escaped = read_pid(pidfile)
        if escaped is not None:
            os.kill(escaped, signal.SIGKILL)


async def test_a_process_ignoring_sigterm_is_killed(tmp_path):
    pidfile = tmp_path / "stubborn.pid"
    lint = agent(tmp_path, f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        time.sleep(300)
    """, timeout=1.0)
    assert "timed out after 1s" in one_line((await lint.execute(task())).failure)
    await wait_until(lambda: not pid_alive(read_pid(pidfile)))


async def test_a_large_task_unread_by_a_process_that_answers(tmp_path):
    lint = agent(tmp_path, "print('{\"ignored\": \"stdin\"}')\n", timeout=30)
    result = await lint.execute(task(prompt="p" * 10_000_000))
    assert result.output == {"ignored": "stdin"}


async def test_a_large_task_unread_by_a_process_that_hangs_times_out(tmp_path):
    lint = agent(tmp_path, "import time; time.sleep(300)\n", timeout=1.0)
    result = await lint.execute(task(prompt="p" * 10_000_000))
    assert "timed out after 1s" in one_line(result.failure)


async def test_a_large_task_is_delivered_whole(tmp_path):
    lint = agent(tmp_path, """
        import json, sys
        print(json.dumps(len(json.load(sys.stdin)["prompt"])))
    """, timeout=30)
    assert (await lint.execute(task(prompt="p" * 10_000_000))).output == 10_000_000


async def test_exit_zero_with_empty_output_is_a_failure(tmp_path):
    lint = agent(tmp_path, "pass\n")
    failure = one_line((await lint.execute(task())).failure)
    assert "did not print JSON on stdout (Expecting value at line 1 column 1): (empty output)" \
        in failure


async def test_a_working_directory_that_is_a_file_is_a_failure(tmp_path):
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("")
    lint = agent(tmp_path, "print(1)\n", cwd=str(not_a_dir))
    failure = one_line((await lint.execute(task())).failure)
    assert "cannot start" in failure and "Not a directory" in failure


async def test_an_environment_value_with_a_nul_byte_is_a_failure(tmp_path):
    lint = agent(tmp_path, "print(1)\n", env={"TOKEN": "a\x00b"})
    assert "cannot start" in one_line((await lint.execute(task())).failure)


async def test_a_task_that_is_not_json_is_a_failure(tmp_path):
    lint = agent(tmp_path, "print(1)\n")
    failure = one_line((await lint.execute(task(inputs={"x": float("nan")}))).failure)
    assert "the task is not JSON" in failure
