"""Reading a spec file named by a tool call's `path`, safely for a server that must keep serving.

The path is the client's: it may lead out of the workspace (``../../etc/passwd``, an absolute
path, a symlink), to a device that never ends (``/dev/zero``), to a FIFO whose ``open`` waits
for a writer forever, or to a file too large to be a spec. Each is refused as data, a
:class:`SpecFileError` with the reason, before more than the loader's document limit is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..dsl.loader import read_at_most
from ..dsl.yamlevents import MAX_DOCUMENT_CHARS

# O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused as not regular below.
_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class SpecFileError(Exception):
    """The spec file cannot be used; ``str()`` says why, ``path`` is the path it resolved to."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def spec_path(root: Path, given: str) -> Path:
    """``given`` (relative to ``root``, or absolute) as an absolute path that, symlinks resolved,
    stays inside ``root``."""
    if "\0" in given:
        raise SpecFileError("the spec path must not contain NUL", root)
    path = Path(os.path.normpath(root / Path(given).expanduser()))
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    if not (_inside(os.path.normpath(root), str(path)) and _inside(real_root, real)):
        raise SpecFileError(f"the spec file {path} is outside the workspace {root}; give a path inside it "
                            "or the spec inline as `spec`", path)
    return path


def read_spec_file(path: Path) -> bytes:
    """The bytes of a regular file of at most the loader's document limit."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise SpecFileError(f"cannot read spec file {path}: {exc}", path) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SpecFileError(f"the spec file {path} is not a regular file ({_kind(info.st_mode)})", path)
        return _read_bounded(fd, path, info.st_size)
    except OSError as exc:
        raise SpecFileError(f"cannot read spec file {path}: {exc}", path) from exc
    finally:
        os.close(fd)


def _read_bounded(fd: int, path: Path, size: int) -> bytes:
    data = b"" if size > MAX_DOCUMENT_CHARS else read_at_most(fd, MAX_DOCUMENT_CHARS + 1)
    if size > MAX_DOCUMENT_CHARS or len(data) > MAX_DOCUMENT_CHARS:
        raise SpecFileError(f"the spec file {path} is larger than {MAX_DOCUMENT_CHARS} bytes, the limit "
                            "for a spec", path)
    return data


def _inside(base: str, candidate: str) -> bool:
    return candidate == base or candidate.startswith(base.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")
