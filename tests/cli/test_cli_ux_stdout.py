"""`lockgate run` prints only the flow's JSON on stdout: what agents print, and what their child
processes write to the standard output they inherit, goes to stderr. A real subprocess."""

from __future__ import annotations

import json
import subprocess
import textwrap

from cli_support import lockgate_argv, lockgate_env

SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Note: {text: string}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${noisy.output}", contract: Note}
        steps:
          - {id: noisy, do: "make noise", agent: noisy, out: Note}
    """).lstrip()

AGENTS = textwrap.dedent("""
    import subprocess, sys

    def noisy(task):
        print("printed by the agent")
        subprocess.run([sys.executable, "-c", "print('written by its child')"], check=True)
        return {"text": "quiet result"}
    """)


def test_stdout_is_only_the_flow_output(tmp_path):
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "noisy_agents.py").write_text(AGENTS)
    done = subprocess.run(lockgate_argv("run", "flow.stratum.yaml", "--agents", "noisy_agents.py",
                                        "--store", "memory"), cwd=tmp_path, env=lockgate_env(),
                          text=True, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"text": "quiet result"}
    assert "printed by the agent" in done.stderr and "written by its child" in done.stderr
