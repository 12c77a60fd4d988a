"""The packaged extension in a real VS Code: code-server driven by Playwright in headless Chromium.

Optional and slow (about 15 s per test): it runs only when ``LOCKGATE_CODE_SERVER`` names a
code-server binary (4.100.3 is the last release for Node 20; the install recipe is in
``vscode/README.md``), Playwright for Python is importable and Debian's Chromium is installed.
It installs ``vscode/out/lockgate.vsix`` (built by ``npm run package``) into a scratch profile.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "vscode"
CODE_SERVER = os.environ.get("LOCKGATE_CODE_SERVER", "")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CODE_SERVER or not os.access(CODE_SERVER, os.X_OK),
                       reason="set LOCKGATE_CODE_SERVER to a code-server binary to run the real-editor tests"),
    pytest.mark.skipif(shutil.which("npm") is None or not (EXTENSION / "node_modules").is_dir(),
                       reason="npm and vscode/node_modules are needed to package the extension"),
]
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is needed for the real-editor tests")

SPEC = (REPO / "examples" / "code-review.stratum.yaml").read_text(encoding="utf-8").replace("after: [review]", "after: [reveiw]")
USER_SETTINGS = {
    "workbench.startupEditor": "none", "telemetry.telemetryLevel": "off", "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False, "update.mode": "none", "workbench.enableExperiments": False,
    "security.workspace.trust.enabled": False, "workbench.tips.enabled": False,
}


def chromium_binary() -> str | None:
    found = subprocess.run(["dpkg", "-L", "chromium"], capture_output=True, text=True, check=False).stdout.split()
    return next((line for line in found if line.endswith("lib/chromium/chromium")), None)


@pytest.fixture(scope="module")
def vsix() -> Path:
    result = subprocess.run(["npm", "run", "--silent", "package"], cwd=EXTENSION, capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return EXTENSION / "out" / "lockgate.vsix"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "code-server exited during start-up"
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.2)  # polling a server that is starting, not synchronising the test
    raise TimeoutError(f"code-server did not answer at {url}")


def start_editor(tmp: Path, vsix: Path, workspace_settings: dict) -> Iterator[tuple[str, Path]]:
    """Installs the .vsix into a scratch profile, serves the workbench, yields (url, profile)."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "xdg-config"), "XDG_DATA_HOME": str(tmp / "xdg-data")}
    profile, extensions, workspace = tmp / "profile", tmp / "extensions", tmp / "ws"
    (profile / "User").mkdir(parents=True)
    (workspace / ".vscode").mkdir(parents=True)
    (profile / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS))
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(workspace_settings))
    (workspace / "code-review.stratum.yaml").write_text(SPEC)
    common = ["--user-data-dir", str(profile), "--extensions-dir", str(extensions)]
    subprocess.run([CODE_SERVER, *common, "--install-extension", str(vsix)], env=env, check=True, capture_output=True, timeout=120)
    port = free_port()
    proc = subprocess.Popen(
        [CODE_SERVER, *common, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
         "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", str(workspace)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc)
        yield f"{url}/?folder={workspace}", profile
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture()
def browser_page():
    executable = chromium_binary()
    if executable is None:
        pytest.skip("Debian's chromium package is needed (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 950})
        yield page
        browser.close()


def open_spec(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector(".explorer-folders-view", timeout=60_000)
    page.get_by_text("code-review.stratum.yaml").first.click()
    page.wait_for_selector(".monaco-editor .view-lines", timeout=30_000)


def test_diagnostics_status_and_flow_graph(tmp_path: Path, vsix: Path, browser_page) -> None:
    page = browser_page
    for url, _profile in start_editor(tmp_path, vsix, {"lockgate.interpreter": [sys.executable]}):
        open_spec(page, url)
        page.keyboard.press("Control+Shift+M")
        problem = page.locator(".markers-panel .monaco-tl-contents:has-text('reveiw')").first
        problem.wait_for(timeout=60_000)
        text = problem.inner_text()
        assert "did you mean 'review'?" in text and "LG502" in text and "[Ln 45, Col 17]" in text
        problem.click()
        page.wait_for_selector(".squiggly-error", timeout=30_000)
        statusbar = page.inner_text(".statusbar")
        assert "Stratum YAML" in statusbar and "Lockgate" in statusbar and "Spaces: 2" in statusbar

        run_command(page, "Lockgate: Show Flow Graph")
        frame = wait_for_frame(page, ".paper svg")
        header = frame.inner_text("header")
        assert "code-review.stratum.yaml" in header and "updated" in header
        drawing = frame.inner_html(".paper")  # matplotlib draws labels as paths, naming them in comments
        assert drawing.startswith("<svg") and all(f"<!-- {step} -->" in drawing for step in ("implement", "review", "sign_off"))

        run_command(page, "Lockgate: Validate Workspace")
        toast = page.locator(".notification-toast:has-text('spec checked')").first
        toast.wait_for(timeout=60_000)
        assert "1 spec checked: 1 error in 1 file" in toast.inner_text()


def run_command(page, title: str) -> None:
    page.keyboard.press("F1")
    page.keyboard.type(title)
    page.wait_for_selector(f".quick-input-list .monaco-list-row.focused:has-text('{title.split(': ')[1]}')", timeout=10_000)
    page.keyboard.press("Enter")


def wait_for_frame(page, selector: str, timeout: float = 60):
    """The webview's content frame (webviews nest iframes) once it shows ``selector``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in page.frames:
            try:
                if frame.query_selector(selector):
                    return frame
            except playwright.Error:
                continue  # a frame navigated away while we looked
        page.wait_for_timeout(250)
    raise TimeoutError(f"no webview frame shows {selector}")


def test_notification_with_the_fix_when_lockgate_is_missing(tmp_path: Path, vsix: Path, browser_page) -> None:
    page = browser_page
    bare = [sys.executable, "-I", "-S"]  # no site-packages: lockgate cannot be imported
    for url, _profile in start_editor(tmp_path, vsix, {"lockgate.interpreter": bare}):
        open_spec(page, url)
        toast = page.locator(".notification-toast:has-text('not installed')").first
        toast.wait_for(timeout=60_000)
        text = toast.inner_text()
        assert "pip install 'lockgate[lsp]'" in text
        assert "Install in Terminal" in text and "Choose Interpreter" in text
        assert "Lockgate" in page.inner_text(".statusbar")
