"""The file jail and the file predicates (reference §5.6 "File jail")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lockgate.dsl.expr import evaluate, resolve_in_workspace
from lockgate.dsl.expr.limits import MAX_FILE_BYTES
from lockgate.errors import ExprError


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (root / "proof.txt").write_text("tests passed: 12 ✓\n", encoding="utf-8")
    (root / "a" / "inner.txt").write_text("inner", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    return root


@pytest.mark.parametrize("path", ["proof.txt", "a/../proof.txt", "./a/inner.txt", "a/inner.txt"])
def test_paths_inside_resolve(workspace: Path, path: str) -> None:
    resolved = resolve_in_workspace(workspace, path)
    assert resolved.is_file() and workspace in resolved.parents


@pytest.mark.parametrize("path", ["", "a\0b", "/etc/passwd", "\\windows", "C:\\x", "c:x", "\\\\server\\share",
                                  "//server/share", "../secret.txt", "a/../..", "a/../../secret.txt", ".."])
def test_jail_violations(workspace: Path, path: str) -> None:
    with pytest.raises(ExprError) as caught:
        resolve_in_workspace(workspace, path)
    assert caught.value.kind == "validation"


def test_symlink_escape_is_refused(workspace: Path) -> None:
    (workspace / "link.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "linkdir").symlink_to(workspace.parent)
    for path in ("link.txt", "linkdir/secret.txt"):
        with pytest.raises(ExprError) as caught:
            evaluate(f"file_exists('{path}')", {}, workspace=workspace)
        assert caught.value.kind == "validation"
        assert "outside the workspace" in caught.value.message


def test_symlink_inside_the_jail(workspace: Path) -> None:
    (workspace / "alias.txt").symlink_to(workspace / "proof.txt")
    assert evaluate("file_exists('alias.txt')", {}, workspace=workspace) is True
    with pytest.raises(ExprError) as caught:  # file_contains opens with O_NOFOLLOW
        evaluate("file_contains('alias.txt', 'tests')", {}, workspace=workspace)
    assert caught.value.kind == "validation"


def test_file_exists(workspace: Path) -> None:
    assert evaluate("file_exists('proof.txt')", {}, workspace=workspace) is True
    assert evaluate("file_exists('missing.txt')", {}, workspace=workspace) is False
    assert evaluate("file_exists('a')", {}, workspace=workspace) is False  # directories are false
    assert evaluate("file_exists(input.p)", {"input": {"p": "a/inner.txt"}}, workspace=str(workspace))


def test_file_contains(workspace: Path) -> None:
    assert evaluate("file_contains('proof.txt', 'passed: 12 ✓')", {}, workspace=workspace) is True
    assert evaluate("file_contains('proof.txt', 'failed')", {}, workspace=workspace) is False
    assert evaluate("file_contains('missing.txt', 'x')", {}, workspace=workspace) is False
    assert evaluate("file_contains('a', 'x')", {}, workspace=workspace) is False
    (workspace / "bad.bin").write_bytes(b"ok \xff\xfe end")
    assert evaluate("file_contains('bad.bin', 'end')", {}, workspace=workspace) is True
    with pytest.raises(ExprError) as caught:
        evaluate("file_contains('proof.txt', 1)", {}, workspace=workspace)
    assert caught.value.kind == "type"


def test_file_size_cap(workspace: Path) -> None:
    with open(workspace / "big.txt", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ExprError) as caught:
        evaluate("file_contains('big.txt', 'x')", {}, workspace=workspace)
    assert caught.value.kind == "validation" and "larger than" in caught.value.message
    with open(workspace / "edge.txt", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES)
    assert evaluate("file_contains('edge.txt', 'x')", {}, workspace=workspace) is False


def test_file_predicates_need_a_workspace() -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("file_exists('proof.txt')", {})
    assert caught.value.kind == "validation" and "workspace" in caught.value.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_is_not_a_file(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    assert evaluate("file_exists('pipe')", {}, workspace=workspace) is False
    assert evaluate("file_contains('pipe', 'x')", {}, workspace=workspace) is False  # no wait
