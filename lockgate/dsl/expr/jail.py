"""The file jail of ``file_exists`` / ``file_contains``: paths stay inside the workspace root.

A path must be non-empty, free of NUL, relative (neither POSIX ``/x`` nor Windows ``C:\\x`` or
``\\\\server\\x``), lexically inside the root once ``..`` is resolved, and, when it exists, its
real path must be inside the root's real path, so a symlink cannot lead out. Every violation is
an ``ExprError`` of kind ``validation``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from ...errors import ExprError
from .limits import MAX_FILE_BYTES

_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:|[\\/]{2})")


def resolve_in_workspace(root: str | os.PathLike[str], path: str) -> Path:
    """The absolute path of ``path`` inside ``root``; raises ExprError('validation') on escape."""
    if not isinstance(path, str) or path == "":
        raise ExprError("validation", "a file path must be a non-empty string")
    if "\0" in path:
        raise ExprError("validation", "a file path must not contain NUL")
    if path.startswith(("/", "\\")) or _WINDOWS_ABSOLUTE.match(path):
        raise ExprError("validation", f"the file path {path!r} must be relative to the workspace")
    base = os.path.abspath(os.fspath(root))
    candidate = os.path.normpath(os.path.join(base, path))
    if not _inside(base, candidate):
        raise ExprError("validation", f"the file path {path!r} escapes the workspace")
    if os.path.lexists(candidate):
        real_base, real_candidate = os.path.realpath(base), os.path.realpath(candidate)
        if not _inside(real_base, real_candidate):
            raise ExprError("validation", f"the file path {path!r} resolves outside the workspace")
    return Path(candidate)


def _inside(base: str, candidate: str) -> bool:
    return candidate == base or candidate.startswith(base.rstrip(os.sep) + os.sep)


def file_exists(root: str | os.PathLike[str] | None, path: str) -> bool:
    """True only for an existing regular file inside the jail (directories are false)."""
    target = resolve_in_workspace(_require_root(root), path)
    try:
        return stat.S_ISREG(os.stat(target).st_mode)
    except (OSError, ValueError):
        return False


def file_contains(root: str | os.PathLike[str] | None, path: str, needle: str) -> bool:
    """UTF-8 substring test on a regular file read with O_NOFOLLOW, at most 16 MiB."""
    target = resolve_in_workspace(_require_root(root), path)
    data = _read_bounded(target, path)
    if data is None:
        return False
    text = data.decode("utf-8", "replace")
    return needle in text


def _require_root(root: str | os.PathLike[str] | None) -> str | os.PathLike[str]:
    if root is None:
        raise ExprError("validation", "file predicates need a workspace root")
    return root


def _read_bounded(target: Path, shown: str) -> bytes | None:
    """The file's bytes, None when it is missing or not a regular file."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused as not regular below.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ExprError("validation", f"the file path {shown!r} is a symbolic link") from None
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_FILE_BYTES:
            raise _too_big(shown)
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise _too_big(shown)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_big(shown: str) -> ExprError:
    return ExprError("validation", f"the file {shown!r} is larger than {MAX_FILE_BYTES} bytes")
