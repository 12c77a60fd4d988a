"""The VS Code extension's own checks, run from the Python suite.

Each test runs one `npm run <script>` in `vscode/` as a subprocess: the type check, the node
unit tests of the pure modules, the TextMate grammar tests, packaging the .vsix and checking its
file list, and the end-to-end test that starts `lockgate lsp` with the command line the
extension builds. The interpreter the extension resolves is this test run's Python, passed the
way the `lockgate.interpreter` setting is. Skipped, with the reason, only when Node/npm or
`vscode/node_modules` (`npm ci` in vscode/) are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "vscode"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None,
                       reason="node and npm are needed for the VS Code extension checks"),
    pytest.mark.skipif(not (EXTENSION / "node_modules").is_dir(),
                       reason="vscode/node_modules is missing: run `npm ci` in vscode/ (.ci/run does)"),
]


def npm_run(script: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOCKGATE_TEST_INTERPRETER": sys.executable, "NO_COLOR": "1", "FORCE_COLOR": "0"}
    return subprocess.run(
        ["npm", "run", "--silent", script], cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=timeout,
        check=False,
    )


def check(script: str, timeout: float = 240) -> str:
    result = npm_run(script, timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"npm run {script} failed ({result.returncode}):\n{output[-6000:]}"
    return output


def test_typescript_type_checks() -> None:
    check("typecheck")


def test_pure_modules_unit_tests() -> None:
    output = check("test:unit")
    assert "# fail 0" in output
    assert "# pass " in output and "# pass 0\n" not in output


def test_grammar_cases() -> None:
    output = check("test:grammar")
    for case in ("references", "expressions", "negatives"):
        assert f"test/grammar/{case}.stratum.yaml run successfuly" in output, output


def test_vsix_packages_with_exactly_the_runtime_files() -> None:
    output = check("test:package")
    assert "file list ok" in output
    assert (EXTENSION / "out" / "lockgate.vsix").is_file()


def test_server_end_to_end_over_stdio() -> None:
    output = check("test:e2e")
    assert "# fail 0" in output
    assert "# pass 2" in output
