"""Every notebook in notebooks/ executed top to bottom by nbclient with a real kernel.

The gates notebook waits for a click: the test sends the exact ``comm_msg`` a browser sends
when a person presses the Approve button, while the cell that awaits the run is executing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TIMEOUT = 180


def _client(path: Path, workdir: Path) -> tuple[NotebookClient, nbformat.NotebookNode]:
    book = nbformat.read(path, as_version=4)
    client = NotebookClient(book, timeout=TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    return client, book


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(out["text"])
        for key in ("text/plain",):
            if key in out.get("data", {}):
                parts.append(out["data"][key])
    return "\n".join(parts)


@pytest.mark.parametrize("name", ["quickstart", "fanout", "recovery", "openai-endpoint"])
def test_notebook_runs_clean(name, tmp_path, monkeypatch):
    monkeypatch.delenv("LOCKGATE_OPENAI_BASE_URL", raising=False)
    client, book = _client(NOTEBOOKS / f"{name}.ipynb", tmp_path)
    client.execute()
    failed = [c for c in book.cells if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs)]
    assert all("raises-exception" in c.metadata.get("tags", []) for c in failed)  # only cells failing on purpose
    text = "\n".join(_outputs_text(c) for c in book.cells if c.cell_type == "code")
    checks = {
        "quickstart": ["'label': 'positive'", "error -", "planned"],
        "fanout": ["'longest': 'workflows'", "('measure/0', 'succeeded')"],
        "recovery": ["('careful', 1)", "climb", "complete"],
        "openai-endpoint": ["skipping the run"],
    }[name]
    for needle in checks:
        assert needle in text, f"{needle!r} not in the outputs of {name}"
    if name == "recovery":  # the deliberately invalid cell fails, with its diagnostics and no traceback
        tagged = [c for c in book.cells if "raises-exception" in c.metadata.get("tags", [])]
        assert failed == tagged and [o.output_type for o in tagged[0].outputs] == ["error"]
        shown = json.dumps(tagged[0].outputs)
        assert "FlowCellError" in shown and "LG601" in shown and "Traceback" not in shown


def test_gates_notebook_approved_by_a_browser_click(tmp_path):
    asyncio.run(_run_gates_notebook(tmp_path))


async def _run_gates_notebook(workdir: Path) -> None:
    client, book = _client(NOTEBOOKS / "gates.ipynb", workdir)
    awaiting = next(i for i, c in enumerate(book.cells) if c.source.startswith("result = await run"))
    async with client.async_setup_kernel():
        approve = _watch_for_button(client, "Approve")
        for index, cell in enumerate(book.cells):
            if index != awaiting:
                await client.async_execute_cell(cell, index)
                continue
            execution = asyncio.ensure_future(client.async_execute_cell(cell, index))
            button = await asyncio.wait_for(asyncio.shield(approve), TIMEOUT)
            click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
            client.kc.shell_channel.send(client.kc.session.msg("comm_msg", click))
            await asyncio.wait_for(execution, TIMEOUT)
    text = "\n".join(_outputs_text(c) for c in book.cells if c.cell_type == "code")
    assert "Draft 1: the moon pulls the sea" in _outputs_text(book.cells[awaiting])
    assert "3 drafts written" in text  # one for the approved run, two for the revised one
    assert "'killed'" in _outputs_text(book.cells[-1])
    assert not [c for c in book.cells if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs)]


def _watch_for_button(client: NotebookClient, description: str) -> asyncio.Future:
    """A future for the comm id of the first button with ``description`` the kernel opens.

    A browser sees every ``comm_open`` on iopub, whichever cell caused it; nbclient keeps only
    the messages of the executing cell, and a run's gate card is opened by a task that an
    earlier cell started. So this watches the iopub stream the way a browser does.
    """
    found: asyncio.Future = asyncio.get_running_loop().create_future()
    channel = client.kc.iopub_channel
    get_msg = channel.get_msg

    async def watching_get_msg(*args, **kwargs):
        msg = await get_msg(*args, **kwargs)
        if msg["msg_type"] == "comm_open" and not found.done():
            state = msg["content"].get("data", {}).get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == description:
                found.set_result(msg["content"]["comm_id"])
        return msg

    channel.get_msg = watching_get_msg
    return found
