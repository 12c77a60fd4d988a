"""Ctrl-C while the ``lockgate`` command is still loading its CLI: one line and exit status 130,
as anywhere else, not a traceback from inside an import (LOCKGATE_DEBUG set: the traceback).

The interrupt is raised where a real one would land, inside the import of the CLI's
dependencies (a meta-path finder raises KeyboardInterrupt when ``click`` is first imported), in
a real ``python -m lockgate`` process; the console script runs the same function."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Runs lockgate's __main__ with a finder that interrupts the first import of click.
INTERRUPTING = """
import runpy, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = ["lockgate", "runs"]
runpy.run_module("lockgate", run_name="__main__", alter_sys=True)
"""


def run_interrupted(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "LOCKGATE_DEBUG"}
    environment.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", INTERRUPTING], capture_output=True, text=True, timeout=60,
                          env=environment)


def test_ctrl_c_while_loading_exits_130_with_one_line():
    done = run_interrupted()
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "lockgate: interrupted"
    assert done.stdout == ""


def test_debug_shows_the_traceback():
    done = run_interrupted(LOCKGATE_DEBUG="1")
    assert "Traceback" in done.stderr and "KeyboardInterrupt" in done.stderr
    assert done.returncode != 0


def test_the_console_script_is_the_guarded_entry():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["lockgate"] == "lockgate.console:main"
