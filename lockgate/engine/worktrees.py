"""Git worktrees for ``isolation: worktree`` fanout items, their patches and the sequential merge.

Each item works in a detached ``git worktree`` of the workspace's HEAD; the commit it starts from
is recorded in the worktree's own ref :data:`BASE_REF`, so its patch, captured as
``git add -N . && git diff --binary <base>``, holds what the item committed there as well as its
uncommitted and new files (agents often commit their work). The worktree is removed, and the
patches are applied in index order with ``git apply --index --3way``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import lockdir
from .store.codec import is_unicode

PRE_MERGE_TIMEOUT = 600
#: a git attributes file marking every file binary (see :func:`capture_patch`)
_ALL_BINARY = str(Path(__file__).with_name("all-binary.gitattributes"))
#: The commit an item's worktree was created from. A ``refs/worktree/`` ref belongs to one
#: worktree (git keeps it apart from the workspace's refs) and goes when the worktree is removed,
#: so the record lives exactly as long as the checkout it describes and no stored record changes.
BASE_REF = "refs/worktree/lockgate-base"


class GitError(RuntimeError):
    pass


def _git(cwd: Path | str, *args: str, stdin: str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # surrogateescape: a file name that is not UTF-8 comes back as the same bytes when passed on
    return subprocess.run(["git", "-C", str(cwd), *args], input=stdin, capture_output=True, text=True,
                          encoding="utf-8", errors="surrogateescape",
                          env=None if env is None else {**os.environ, **env})


def unusable(workspace: Path) -> str | None:
    """Why item worktrees cannot be made from ``workspace`` (not a git repository, no commit
    yet), or None: said once, before any item is dispatched."""
    inside = _git(workspace, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return f"the workspace {workspace} is not a git repository (git init and commit first)"
    if _git(workspace, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").returncode != 0:
        return f"the git repository {workspace} has no commit yet (the item worktrees start from HEAD: commit first)"
    if _git(workspace, "rev-parse", "--show-prefix").stdout.strip():
        # an item's patch spans the whole repository, and `git apply` in a folder of it would
        # leave out, silently, every change made outside that folder
        top = _git(workspace, "rev-parse", "--show-toplevel").stdout.strip()
        return (f"the workspace {workspace} is a folder inside the git repository {top}: items change the "
                f"whole repository, so run from its top level ({top}) or give that as the workspace")
    return None


def ensure(workspace: Path, existing: str | None) -> str:
    """The item's worktree: ``existing`` if it is still there, else a new detached checkout."""
    if existing and Path(existing).is_dir():
        return existing
    target = tempfile.mkdtemp(prefix="lockgate-wt-")
    shutil.rmtree(target)
    done = _git(workspace, "worktree", "add", "--detach", target, "HEAD")
    if done.returncode != 0:
        raise GitError(f"git worktree add failed: {done.stderr.strip()}")
    marked = _git(target, "update-ref", BASE_REF, "HEAD")
    if marked.returncode != 0:
        _unlink(workspace, target)
        raise GitError(f"git update-ref {BASE_REF} failed in {target}: {marked.stderr.strip()}")
    return target


def capture_patch(worktree: str) -> str:
    """The item's work as one binary patch against the commit its worktree started from: what it
    committed, changed or created there. A worktree made before that commit was recorded (by an
    older engine, still held by a stored run) is diffed against its current HEAD."""
    _git(worktree, "add", "-N", ".")
    done = _git(worktree, "diff", "--binary", _base(worktree))
    if done.returncode == 0 and _storable(done.stdout):
        return done.stdout
    if done.returncode == 0:
        # text that is not UTF-8 (a Latin-1 file), or holds U+0000 past the part git looks at to
        # tell binary files, cannot be kept as the run's text: the patch is taken again with
        # every file as binary (git's base85 patches are ASCII)
        done = _git(worktree, "-c", f"core.attributesFile={_ALL_BINARY}", "diff", "--binary", _base(worktree))
    if done.returncode != 0:
        raise GitError(f"git diff failed in {worktree}: {done.stderr.strip()}")
    if not _storable(done.stdout):  # the repository's own .gitattributes say text: they win
        raise GitError("the item's changes hold text that is not UTF-8 or holds U+0000, in files the repository's "
                       ".gitattributes mark as text (a diff attribute): their patch cannot be carried; write them "
                       "as UTF-8 text, or mark them binary (-diff) in .gitattributes")
    return done.stdout


def _storable(patch: str) -> bool:
    """Whether every store can keep ``patch`` as text (see :mod:`lockgate.engine.store.codec`)."""
    return "\0" not in patch and is_unicode(patch)




def _base(worktree: str) -> str:
    """The commit :data:`BASE_REF` names in ``worktree``, or ``HEAD`` when it names none."""
    done = _git(worktree, "rev-parse", "--verify", "--quiet", f"{BASE_REF}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "HEAD"


def remove(workspace: Path | None, worktree: str) -> None:
    """Remove one worktree and prune git's record of it."""
    _unlink(workspace, worktree)
    if workspace is not None:
        _git(workspace, "worktree", "prune")


def release(workspace: Path | None, worktrees: list[str]) -> None:
    """Remove those of ``worktrees`` still on disk, with one prune for all: the worktrees of
    items whose record was dropped or whose run ended. Idempotent (one already gone is left
    alone), so a transition that is replayed may release the same worktrees again."""
    there = [w for w in worktrees if w and Path(w).is_dir()]
    for worktree in there:
        _unlink(workspace, worktree)
    if there and workspace is not None:
        _git(workspace, "worktree", "prune")


def _unlink(workspace: Path | None, worktree: str) -> None:
    if workspace is not None:
        _git(workspace, "worktree", "remove", "--force", worktree)
    shutil.rmtree(worktree, ignore_errors=True)


@dataclass(frozen=True)
class Refused:
    """Why an item's patch did not apply: what git said, and the files left in conflict (with
    git's markers in them) when the three-way merge found some; then the rest of the patch is
    staged, else nothing of it was applied (``git apply`` applies all or nothing)."""

    said: str
    conflicted: tuple[str, ...] = ()
    #: whether the patch went in cannot be told (its apply was interrupted, and its files were
    #: changed since): nothing is known of it, and nothing is said of it as applied or not
    unknown: bool = False


def apply_patch(workspace: Path, patch: str, paths: list[str]) -> Refused | None:
    """Apply one item's patch (``git apply --index --3way``), which changes ``paths`` (see
    :func:`patch_paths`); None when it applied cleanly."""
    already = set(unmerged(workspace, paths))  # the user's own conflicts at its paths
    done = _git(workspace, "apply", "--index", "--3way", "-", stdin=patch)
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).strip() or "git apply failed"
    if already:
        said += (f" ({', '.join(sorted(already))} was in conflict before the merge, from a merge of the workspace's "
                 "own: resolve that first, then apply this item's patch)")
    return Refused(said, tuple(path for path in unmerged(workspace, paths) if path not in already))


def index_state(workspace: Path, paths: list[str], env: dict[str, str] | None = None) -> str:
    """A digest of what the index holds at ``paths`` (each entry's mode, blob and stage, as
    ``git ls-files -s`` lists them, conflicts included), whatever the rest of it holds. The
    whole index is listed and the paths picked here: a patch may change more files than a
    command line holds."""
    wanted = set(paths)
    listed = _git(workspace, "ls-files", "-s", "-z", env=env).stdout.split("\0")
    own = [entry for entry in listed if entry.partition("\t")[2] in wanted]
    return hashlib.sha256("\0".join(own).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def state_with(workspace: Path, patch: str, paths: list[str]) -> str | None:
    """The :func:`index_state` at ``paths`` once ``patch`` is applied as :func:`apply_patch`
    applies it, 3-way fallback included (worked out in a copy of the index, the workspace
    untouched), or None when it would leave conflicts."""
    index = Path(_git(workspace, "rev-parse", "--git-path", "index").stdout.strip())
    with tempfile.TemporaryDirectory(prefix="lockgate-index-") as scratch:
        copy = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        if (Path(workspace) / index).exists():
            shutil.copyfile(Path(workspace) / index, copy["GIT_INDEX_FILE"])
        if _git(workspace, "apply", "--cached", "--3way", "-", stdin=patch, env=copy).returncode != 0:
            return None
        return index_state(workspace, paths, env=copy)


def patch_paths(workspace: Path, patch: str) -> list[str]:
    """The paths ``patch`` changes (both sides of a rename), as ``git apply --numstat -z`` lists
    them: ``added<TAB>deleted<TAB>path``, or for a rename an empty path then the old and the
    new one as entries of their own (a path may hold a tab)."""
    entries = _git(workspace, "apply", "--numstat", "-z", "-", stdin=patch).stdout.split("\0")
    paths: list[str] = []
    renamed = 0
    for entry in entries:
        if renamed:
            paths.append(entry)
            renamed -= 1
            continue
        parts = entry.split("\t", 2)
        if len(parts) == 3:
            if parts[2]:
                paths.append(parts[2])
            else:
                renamed = 2
    return [path for path in paths if path]


def unmerged(workspace: Path, paths: list[str] | None = None) -> tuple[str, ...]:
    """The files the index holds in conflict (unmerged), among ``paths`` when given (picked
    here, not on git's command line: see :func:`index_state`)."""
    listed = _git(workspace, "diff", "--name-only", "-z", "--diff-filter=U").stdout
    wanted = None if paths is None else set(paths)
    return tuple(name for name in listed.split("\0") if name and (wanted is None or name in wanted))


def _own_folder(workspace: Path, *parts: str) -> Path:
    """``.lockgate/PARTS`` in the workspace, made if need be. ``.lockgate`` is kept out of git
    (its own ``.gitignore``): a ``git add -A`` while resolving a conflict must not commit it."""
    root = Path(workspace) / lockdir.NAME
    folder = root.joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    lockdir.keep_out_of_git(root)
    return folder


class MergeJournal:
    """What the merges of a run's fanout did to the workspace, one line an act, in
    ``.lockgate/merged/RUN/STEP.log``: ``pre_merge <merge>`` once its commands passed for that
    merge, ``applying <token> <digest> <before> <after>`` just before an item's patch goes in
    (what the index holds at the patch's paths then, and will hold with the patch in, ``None``
    when it would leave conflicts: see :func:`index_state`), ``applied <token> <digest>`` once
    it is in. Written (and synced)
    right after the act, outside the run's store: the transaction that merges may be replayed or
    die before it is saved, and the workspace keeps what it did either way."""

    def __init__(self, workspace: Path, run_id: str, fan_key: str) -> None:
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in fan_key)
        self.path = _own_folder(workspace, "merged", run_id) / f"{name}.log"
        self.order = self.path.read_text().splitlines() if self.path.exists() else []
        self.lines = set(self.order)

    def has(self, line: str) -> bool:
        return line in self.lines

    def begin(self, act: str, before: str, after: str | None) -> None:
        """Note that the patch of ``act`` (an ``applied ...`` line) is about to go into the index,
        which holds ``before`` at its paths now and will hold ``after`` there with it."""
        self.note(f"{_begun(act)} {before} {after}")

    def states(self, act: str) -> tuple[str | None, str | None] | None:
        """(before, after) of the last :meth:`begin` of ``act`` (None for one not known), or None
        when it was not begun."""
        begun = _begun(act) + " "
        found = next((line[len(begun):] for line in reversed(self.order) if line.startswith(begun)), None)
        if found is None:
            return None
        before, _, after = found.partition(" ")
        return (None if before == "None" else before), (None if after in ("", "None") else after)

    def note(self, line: str) -> None:
        with open(self.path, "a") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.lines.add(line)
        self.order.append(line)


def _begun(act: str) -> str:
    return "applying " + act.removeprefix("applied ")


def save_patches(workspace: Path, run_id: str, patches: dict[int, str]) -> Path:
    """Write each item's patch to ``.lockgate/unmerged/RUN/item-N.patch`` in the workspace (the
    items a merge could not take), in place of those an earlier merge of the run left there; the
    folder."""
    folder = _own_folder(workspace, "unmerged", run_id)
    for old in folder.glob("item-*.patch"):
        old.unlink()
    for index, patch in patches.items():
        (folder / f"item-{index}.patch").write_text(patch)
    return folder


def run_pre_merge(workspace: Path, commands: tuple[str, ...]) -> str | None:
    """Run the ``pre_merge`` commands in the workspace; the first failure in words, or None."""
    for command in commands:
        try:
            code, out, err = _in_own_session(["sh", "-lc", command], workspace, PRE_MERGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"pre_merge command {command!r} timed out"
        if code != 0:
            tail = (err or out).strip()[-500:]
            return f"pre_merge command {command!r} exited {code}: {tail}"
    return None


def _in_own_session(argv: list[str], cwd: Path, timeout: float) -> tuple[int, str, str]:
    """Run ``argv`` in a session of its own, as agent commands are: a Ctrl-C at the terminal
    interrupts Lockgate (which then stops it), not the command, which would fail the run for
    good. Its whole process group is killed when it times out or Lockgate is interrupted."""
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        with _interruptible():
            out, err = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc)
        raise
    return proc.returncode, out, err


@contextmanager
def _interruptible() -> Iterator[None]:
    """A Ctrl-C raises KeyboardInterrupt here and now, in the main thread: an event loop's own
    handler (``asyncio.run``'s) would only cancel its task once this blocking call returned,
    minutes of tests later. Elsewhere, or where SIGINT is ignored, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    if before in (None, signal.SIG_IGN, signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def path(worktree: str | None) -> Path | None:
    return Path(worktree) if worktree else None
