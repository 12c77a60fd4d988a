"""End to end in a real browser: JupyterLab, Debian's Chromium driven by Playwright, a person's click.

The test opens ``notebooks/gates.ipynb`` in JupyterLab, runs every cell from the Run menu, waits
for the gate card of the first run, clicks **Approve**, and checks what a person would see: the
run header says ``complete`` and the DAG picture, amber while the gate waited, is now green.

Run All queues the later cells behind ``result = await run``, which only returns after the gate is
decided, so the click necessarily lands while that cell awaits: the kernel must handle the
button's comm message during the await (ipykernel 7.4 does).

Playwright drives the Chromium that ``apt-get install chromium`` provides (never ``playwright
install``); the test is skipped only when that browser, Playwright or JupyterLab is missing.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "gates.ipynb"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]
# Generous: the first kernel start and the first import of matplotlib, ipywidgets and the engine
# take tens of seconds on two busy cores.
SERVER_TIMEOUT = 120.0
UI_TIMEOUT = 180.0
SUCCEEDED_GREEN = (0x3F, 0xB9, 0x50)
WAITING_AMBER = (0xF2, 0xCC, 0x60)

T = TypeVar("T")

pytestmark = pytest.mark.browser


# -- environment ------------------------------------------------------------------------------------


def chromium_binary() -> str | None:
    """The real Chromium binary of Debian's package (``/usr/bin/chromium`` is a shell wrapper
    that Playwright cannot drive)."""
    try:
        listing = subprocess.run(["dpkg", "-L", "chromium"], check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        listing = None
    if listing is not None and listing.returncode == 0:
        for line in listing.stdout.splitlines():
            if line.endswith("lib/chromium/chromium") and os.access(line, os.X_OK):
                return line
    fallback = "/usr/lib/chromium/chromium"
    return fallback if os.access(fallback, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], T | None], timeout: float, what: str, interval: float = 0.25) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# -- the JupyterLab server ----------------------------------------------------------------------------


@dataclass
class Lab:
    """A running JupyterLab server serving ``root``."""

    url: str
    token: str
    root: Path
    process: subprocess.Popen
    log: Path

    def api(self, path: str, method: str = "GET") -> tuple[int, object]:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                body = response.read()
                return response.status, json.loads(body) if body else None
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return 0, None

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def answering(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"JupyterLab exited with code {self.process.returncode}:\n{self.log_tail()}")
        return self.api("/api/status")[0] == 200

    def shutdown_kernels(self) -> None:
        status, kernels = self.api("/api/kernels")
        for kernel in kernels if status == 200 and isinstance(kernels, list) else []:
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")


def _user_settings(settings: Path) -> None:
    """Lab settings for an unattended browser: no news toast over the page, every cell in the DOM."""
    for plugin, values in {
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    }.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _start_lab(base: Path) -> Lab:
    root, home = base / "root", base / "jupyter"
    root.mkdir()
    _user_settings(home / "settings")
    port, token = free_port(), uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKGATE_")}  # runs go to root/.lockgate
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        PYTHONUNBUFFERED="1",
    )
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = base / "jupyterlab.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    return Lab(f"http://127.0.0.1:{port}", token, root, process, log)


def _stop_lab(lab: Lab) -> None:
    """SIGTERM lets the server shut its kernels down; anything left of its session is killed."""
    if lab.process.poll() is None:
        lab.shutdown_kernels()
        lab.process.terminate()
        try:
            lab.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            lab.process.kill()
            lab.process.wait(timeout=30)
    try:
        os.killpg(lab.process.pid, signal.SIGKILL)  # orphaned kernels of this server's session
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -e '.[dev]')")
    server = _start_lab(tmp_path_factory.mktemp("lab"))
    try:
        wait_for(server.answering, SERVER_TIMEOUT, "JupyterLab to answer on /api/status")
        yield server
    finally:
        _stop_lab(server)


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")
    binary = chromium_binary()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does it)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


# -- the DAG picture ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Colours:
    green: int
    amber: int


def count_colours(png: bytes) -> Colours:
    """Pixels close to the succeeded green and to the waiting amber in the graph area.

    The legend at the right edge of the figure always shows every status colour, so it is left
    out: the figure's axes end at 76 % of its width, the legend starts beyond that.
    """
    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    graph = np.asarray(image.crop((0, 0, int(image.width * 0.74), image.height)), dtype=np.int16)

    def near(target: tuple[int, int, int]) -> int:
        return int((np.abs(graph - np.array(target, dtype=np.int16)).max(axis=2) <= 24).sum())

    return Colours(green=near(SUCCEEDED_GREEN), amber=near(WAITING_AMBER))


def decode_data_url(src: str | None) -> bytes | None:
    prefix = "data:image/png;base64,"
    if not src or not src.startswith(prefix):
        return None
    return base64.b64decode(src[len(prefix):])


# -- the test -----------------------------------------------------------------------------------------


def test_gates_notebook_approved_in_a_real_browser(chromium, lab, tmp_path, capsys):
    shutil.copy(NOTEBOOK, lab.root / NOTEBOOK.name)
    lab.shutdown_kernels()
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        before, after = _drive(page, lab)
        shot = tmp_path / "gates-approved.png"
        page.screenshot(path=str(shot))
        with capsys.disabled():
            print(f"\nDAG graph-area pixels before the click {before}, after {after}; screenshot: {shot}")
    except BaseException:
        shot = tmp_path / "gates-failed.png"
        with contextlib.suppress(Exception):  # the browser may be the thing that failed
            page.screenshot(path=str(shot))
            with capsys.disabled():
                print(f"\nscreenshot of the failure: {shot}\nJupyterLab log:\n{lab.log_tail()}")
        raise
    finally:
        with contextlib.suppress(Exception):
            context.close()
        lab.shutdown_kernels()


def _open_and_run_all(page, lab: Lab, name: str) -> None:
    """Open notebook ``name`` of the server's root in a fresh workspace and Run All Cells."""
    timeout_ms = UI_TIMEOUT * 1000
    page.set_default_timeout(timeout_ms)
    workspace = f"gates-{uuid.uuid4().hex[:8]}"  # a fresh workspace: nothing from earlier sessions reopens
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=timeout_ms,
    )
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def _drive(page, lab: Lab) -> tuple[Colours, Colours]:
    """Open, Run All, click Approve, check; returns the DAG colour counts before and after."""
    from playwright.sync_api import expect

    timeout_ms = UI_TIMEOUT * 1000
    _open_and_run_all(page, lab, NOTEBOOK.name)
    outputs = page.locator(".jp-OutputArea-output")
    approve = outputs.locator("button.jupyter-button", has_text="Approve")
    approve.wait_for(state="visible")
    run_cell = page.locator(".jp-Cell").filter(has=page.locator(".lockgate-status"))
    status = run_cell.locator(".lockgate-status")
    dag = run_cell.locator(".jp-RenderedImage img")

    def dag_colours() -> Colours | None:
        png = decode_data_url(dag.first.get_attribute("src")) if dag.count() else None
        return count_colours(png) if png else None

    def waiting_picture() -> Colours | None:
        colours = dag_colours()
        return colours if colours and colours.amber > 100 else None

    def finished_picture() -> Colours | None:
        colours = dag_colours()
        return colours if colours and colours.amber == 0 else None

    before = wait_for(waiting_picture, UI_TIMEOUT, "the DAG to show the gate waiting (amber)")
    expect(status).not_to_have_text("complete")

    approve.click()

    expect(status).to_have_text("complete", timeout=timeout_ms)
    after = wait_for(finished_picture, UI_TIMEOUT, f"the DAG to lose its amber (before the click: {before})")
    assert after.green > before.green + 100, f"the gate node did not turn green: before {before}, after {after}"
    expect(approve).to_be_disabled()

    awaiting = page.locator(".jp-Cell").filter(has_text="result = await run")
    expect(awaiting.locator(".jp-OutputArea-output")).to_contain_text("Draft 1: the moon pulls the sea")
    # Run All goes on: the later cells revise and kill other runs from code.
    expect(outputs.filter(has_text="drafts written")).to_contain_text("3 drafts written")
    expect(page.locator(".jp-Cell").last.locator(".jp-OutputArea-output")).to_contain_text("killed")
    run_cell.scroll_into_view_if_needed()
    return before, after


# -- a run shown twice --------------------------------------------------------------------------------

TWICE_CELLS = [
    "%load_ext lockgate",
    "%%flow rw\n" + (NOTEBOOK.parents[1] / "examples" / "reviewed-work.stratum.yaml").read_text(),
    ('agents = {"codex": lambda task: {"result": "done", "quality_score": 0.9}}\n'
     'run = rw.start({"text": "t"}, agents=agents)\nrun'),
    'await run.wait_until(lambda r: "review" in r.waiting_gates())',
    "%flow show run",
    "result = await run\nresult",
]


def test_a_run_shown_twice_stays_live_in_both_views_in_a_real_browser(chromium, lab, tmp_path):
    """The run shown as it starts and again once its gate waits: both views get the card, a
    click in the second one decides the gate, and both say complete with the card disabled."""
    import nbformat
    from playwright.sync_api import expect

    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in TWICE_CELLS]
    book.metadata["kernelspec"] = json.loads(NOTEBOOK.read_text())["metadata"]["kernelspec"]  # no kernel dialog
    nbformat.write(book, lab.root / "twice.ipynb")
    lab.shutdown_kernels()
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        _open_and_run_all(page, lab, "twice.ipynb")
        timeout_ms = UI_TIMEOUT * 1000
        views = page.locator(".jp-Cell").filter(has=page.locator(".lockgate-status"))
        approve = views.locator("button.jupyter-button", has_text="Approve")
        expect(approve).to_have_count(2, timeout=timeout_ms)  # the first view got the card too
        approve.last.click()
        for index in range(2):
            expect(views.nth(index).locator(".lockgate-status")).to_have_text("complete", timeout=timeout_ms)
            expect(approve.nth(index)).to_be_disabled(timeout=timeout_ms)
        last = page.locator(".jp-Cell").last.locator(".jp-OutputArea-output")
        expect(last).to_contain_text("'result': 'done'", timeout=timeout_ms)
    except BaseException:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(tmp_path / "twice-failed.png"))
        raise
    finally:
        with contextlib.suppress(Exception):
            context.close()
        lab.shutdown_kernels()
