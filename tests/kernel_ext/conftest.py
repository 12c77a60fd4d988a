from __future__ import annotations

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
    ip.run_line_magic("unload_ext", "lockgate")
    InteractiveShell.clear_instance()


@pytest.fixture()
def reviewed_work() -> str:
    return (EXAMPLES / "reviewed-work.stratum.yaml").read_text()
