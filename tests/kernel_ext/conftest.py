from __future__ import annotations

import atexit
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture()
def shell(tmp_path, monkeypatch):
    """A fresh IPython shell with the extension loaded, working in a temporary directory."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(tmp_path)
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "lockgate")
    yield ip
    current = InteractiveShell._instance  # a test may have made a fresh one ("a kernel restart")
    ip.run_line_magic("unload_ext", "lockgate")
    InteractiveShell.clear_instance()
    for used in {id(x): x for x in (ip, current) if x is not None}.values():
        retire(used)


def retire(ip) -> None:
    """Let a test's shell go without IPython's exit work: every shell registers it with atexit
    (a namespace reset, which runs the garbage collector) and keeps a history thread, so the
    shells of a whole test session made pytest's process take many seconds to exit."""
    atexit.unregister(ip.atexit_operations)
    thread = getattr(ip.history_manager, "save_thread", None)
    if thread is not None:
        thread.stop()


@pytest.fixture()
def reviewed_work() -> str:
    return (EXAMPLES / "reviewed-work.stratum.yaml").read_text()
