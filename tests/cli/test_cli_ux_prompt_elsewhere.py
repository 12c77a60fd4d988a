"""`lockgate run` prompting at a gate while a person decides it from another terminal: the prompt
ends, says who decided, and the run goes on; nothing typed is dropped in silence. Real
subprocesses on pipes."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from cli_support import gate_spec, lockgate_argv, lockgate_env

TIMEOUT = 60

SPEC = gate_spec()

AGENTS = "def writer(task):\n    return {'text': 'a draft'}\n"


def _lockgate(*args: str, cwd: Path, **kwargs) -> subprocess.Popen | subprocess.CompletedProcess:
    env = lockgate_env()
    command = lockgate_argv(*args)
    if kwargs.pop("background", False):
        return subprocess.Popen(command, cwd=cwd, env=env, text=True, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return subprocess.run(command, cwd=cwd, env=env, text=True, capture_output=True, timeout=TIMEOUT, check=False)


def test_a_gate_decided_in_another_terminal_ends_the_prompt(tmp_path):
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    run = _lockgate("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=tea",
                    cwd=tmp_path, background=True)
    guard = threading.Timer(TIMEOUT, run.kill)  # a prompt that never ends fails the test, not hangs it
    guard.start()
    try:
        seen = []
        for line in run.stderr:  # blocks until the prompt's line is out
            seen.append(line)
            if line.startswith("Gate 'review' of run "):
                run_id = line.split()[4]
                break
        else:
            raise AssertionError("no gate prompt:\n" + "".join(seen))
        decided = _lockgate("gate", "approve", run_id, "review", "--note", "fine by me", cwd=tmp_path)
        assert decided.returncode == 0, decided.stderr
        for line in run.stderr:  # the prompt ends on its own: stdin stays open until it has
            seen.append(line)
            if "was decided elsewhere" in line:
                break
        out, rest = run.communicate(timeout=TIMEOUT)  # closes stdin
    finally:
        guard.cancel()
        if run.poll() is None:
            run.kill()
    stderr = "".join(seen) + rest
    assert run.returncode == 0, stderr
    assert "gate review was decided elsewhere: approve by human" in stderr
    assert '"text": "a draft"' in out
