"""Any command line as an agent: the task as JSON on stdin, the output as JSON on stdout.

The command runs in the task's working directory (the workspace or the fanout item's worktree),
or in ``cwd`` when one is set, in its own process group. A fanout item isolated in a worktree
always runs in its worktree: ``cwd`` is then the same folder of that worktree (see
:meth:`CommandAgent.workdir`). Its whole stdout must be one JSON value (UTF-8, no NaN or
Infinity, at most :data:`~lockgate.engine.agents.process.MAX_STDOUT` bytes): that value is the
step's output. A non-zero exit, output that is not JSON, too much output, or a timeout is the
task's failure, with a message naming the command (and the tail of its stderr).

An agent from a configuration file is given the file's folder (``base_dir``): the program,
when it is a relative path (``./agent.sh``), and every script the command names (a word ending
in ``.py``, ``.sh``, ``.js``...) are taken from that folder when they exist there, so the file works
from any folder; otherwise they are relative to the folder the command runs in.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import AgentError, AgentUnavailable
from ..worktrees import BASE_REF
from .base import AgentResult, Task, Telemetry
from .jsontext import NotJSON, loads
from .process import ProcessGroup, ProcessResult, find_program

PREVIEW_CHARS = 300
#: What a word of a command ends in when it names a script (an interpreter's program file).
SCRIPT_SUFFIXES = frozenset({".py", ".pyw", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts",
                             ".mts", ".rb", ".pl", ".php", ".lua", ".r", ".jl", ".tcl"})


class CommandAgent:
    """Runs ``command`` once per task."""

    def __init__(self, name: str, command: Sequence[str], *, timeout: float | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | None = None,
                 base_dir: str | None = None) -> None:
        if not command:
            raise ValueError(f"agent {name!r}: the command is empty")
        self.name = name
        self.command = tuple(command)
        self.timeout = timeout
        self.env = dict(env or {})
        self.cwd = cwd
        self.base_dir = base_dir
        self._processes = ProcessGroup()

    @property
    def display(self) -> str:
        return shlex.join(self.command)

    def argv(self) -> tuple[str, ...]:
        """The command as it is run: its program, when a relative path, and the scripts it
        names, taken from ``base_dir`` (the configuration file's folder) when they are there."""
        if self.base_dir is None:
            return self.command
        program, *rest = self.command
        return (self._from_base(program) if os.sep in program else program,
                *(self._from_base(word) if _script(word) else word for word in rest))

    def _from_base(self, word: str) -> str:
        assert self.base_dir is not None
        path = os.path.join(self.base_dir, word)
        return path if not os.path.isabs(word) and os.path.isfile(path) else word

    def _environ(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def preflight(self) -> None:
        """Raise AgentUnavailable when the program is not there (looked for as exec looks: on
        the agent's own ``env.PATH`` for a bare name), or a script the command names is not.

        A relative script is checked for an agent from a configuration file only: it is either
        beside the file or in the folder the command runs in (``cwd``, else this folder, the
        CLI's workspace). Without one, it is relative to each task's folder, known only then."""
        program, *rest = self.argv()
        folder = self.cwd or os.getcwd()
        if find_program(program, self._environ(), folder) is None:
            if os.sep not in program:
                searched = f" (its env.PATH: {self.env['PATH']})" if "PATH" in self.env else ""
                raise AgentUnavailable(f"agent {self.name!r}: {program!r} is not on PATH{searched}")
            raise AgentUnavailable(f"agent {self.name!r}: {program!r} is not an executable file"
                                   f"{self._looked_in(program, folder)}")
        for word in rest:
            if not _script(word) or (self.base_dir is None and not os.path.isabs(word)):
                continue
            if not os.path.isfile(os.path.join(folder, word)):
                raise AgentUnavailable(f"agent {self.name!r}: the script {word!r} its command names "
                                       f"is not there{self._looked_in(word, folder)}")

    def _looked_in(self, word: str, folder: str) -> str:
        if os.path.isabs(word):
            return ""
        beside = f"{self.base_dir} (the configuration file's folder) and " if self.base_dir else ""
        return f" (looked in {beside}{folder}, where the command runs)"

    async def execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        try:
            payload = json.dumps(task.to_json(), allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            return AgentResult.failed(f"command `{self.display}`: the task is not JSON: {exc}")
        try:
            cwd = await self.workdir(task)
        except Unplaceable as exc:
            return AgentResult.failed(f"agent {self.name!r}: {exc}")
        try:
            result = await self._processes.run(
                self.argv(), stdin=payload, cwd=cwd, env=self._environ(),
                timeout=_timeout(task, self.timeout), run_id=task.run_id)
        except AgentError as exc:
            return AgentResult.failed(f"command `{self.display}`: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        return self._interpret(result, elapsed)

    async def workdir(self, task: Task) -> str | None:
        """Where the command runs for ``task``: ``cwd`` when set, else the task's folder.

        A fanout item isolated in a worktree (``task.cwd``) never runs outside it: a ``cwd`` in
        the repository the worktree was made from is taken as the same folder of the worktree;
        a ``cwd`` anywhere else, or one the worktree lacks, raises :class:`Unplaceable`.
        """
        if self.cwd is None or task.cwd is None:
            return self.cwd or task.cwd
        item = await asyncio.to_thread(_checkout, task.cwd, item=True)
        cwd = os.path.realpath(self.cwd)
        if item is None or _within(cwd, item.top):
            return self.cwd
        home = await asyncio.to_thread(_checkout, cwd)
        if home is None or home.common != item.common:
            raise Unplaceable(
                f"{task.step_id} runs isolated in its worktree {item.top}, and the agent's cwd "
                f"{self.cwd} is not in the repository it was made from, so it cannot run there: "
                + _OUTSIDE_ADVICE)
        folder = os.path.normpath(os.path.join(item.top, os.path.relpath(cwd, home.top)))
        if not os.path.isdir(folder):
            raise Unplaceable(
                f"{task.step_id} runs isolated in its worktree {item.top}, which has no folder "
                f"{os.path.relpath(cwd, home.top)!r} (the agent's cwd): a worktree holds what is "
                f"committed, so {_UNCOMMITTED_ADVICE}")
        return folder

    def check_placeable(self, workspace: str) -> None:
        """Raise AgentUnavailable when the fanout items of ``workspace`` isolated in git worktrees
        could not run where ``cwd`` says (see :meth:`workdir`): ``cwd`` is outside the repository
        the worktrees are made from, or names a folder its last commit lacks. Checked before a
        run starts, so that such a run is refused rather than failing each item's every attempt.
        """
        if self.cwd is None:
            return
        home = _checkout(workspace)
        if home is None:
            return  # the fanout itself refuses a workspace that is no git repository
        cwd = os.path.realpath(self.cwd)
        own = _checkout(cwd)
        if own is None or own.common != home.common:
            raise AgentUnavailable(
                f"agent {self.name!r} runs fanout items isolated in git worktrees of {home.top}, and "
                f"its cwd {self.cwd} is not in that repository, so they cannot run there: " + _OUTSIDE_ADVICE)
        folder = os.path.relpath(cwd, own.top)
        if folder != "." and not _committed_folder(own.top, folder):
            raise AgentUnavailable(
                f"agent {self.name!r} runs fanout items isolated in git worktrees of {home.top}, and "
                f"its cwd {folder!r} is not in the repository's last commit, which the worktrees "
                f"hold: {_UNCOMMITTED_ADVICE}")

    def _interpret(self, result: ProcessResult, elapsed: float) -> AgentResult:
        telemetry = Telemetry(duration_ms=elapsed)
        if result.returncode != 0:
            tail = result.stderr_tail()
            detail = f": {tail}" if tail else " (no stderr)"
            return AgentResult.failed(
                f"command `{self.display}` {result.ended()}{detail}",
                telemetry=telemetry)
        if result.bad_utf8_at is not None:
            return AgentResult.failed(
                f"command `{self.display}` printed bytes that are not UTF-8 on stdout (at byte "
                f"{result.bad_utf8_at}): {preview(result.stdout)}{_stderr_note(result)}",
                telemetry=telemetry)
        try:
            output = loads(result.stdout)
        except NotJSON as exc:
            return AgentResult.failed(
                f"command `{self.display}` did not print JSON on stdout ({exc}): "
                f"{preview(result.stdout)}{_stderr_note(result)}", telemetry=telemetry)
        return AgentResult.success(output, telemetry=telemetry)

    async def cancel(self, run_id: str | None = None) -> None:
        """Kill every call's process group, or only those of run ``run_id``."""
        await self._processes.kill_all(run_id)

    def __repr__(self) -> str:
        return f"CommandAgent({self.name!r}, {self.display!r})"


#: What to do about a cwd an isolated item cannot run in (see CommandAgent.workdir and .check_placeable).
_OUTSIDE_ADVICE = ("set cwd to a folder of that repository (an item then runs in the same folder of its worktree), "
                   "or remove cwd")
_UNCOMMITTED_ADVICE = "commit that folder (a file in it), or remove cwd"


class Unplaceable(AgentError):
    """An isolated fanout item cannot run where the agent's ``cwd`` says."""


@dataclass(frozen=True)
class _Checkout:
    top: str  # the checkout's top-level folder
    common: str  # the git directory every checkout of its repository shares


def _checkout(folder: str, *, item: bool = False) -> _Checkout | None:
    """The git checkout ``folder`` is in; None when it is in none (or git is missing). With
    ``item``, only when it is an isolated fanout item's worktree (it carries BASE_REF)."""
    done = _git(folder, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir",
                *([BASE_REF, "--"] if item else []))
    lines = done.stdout.splitlines() if done is not None else []
    if done is None or done.returncode != 0 or len(lines) < 2:
        return None
    return _Checkout(os.path.realpath(lines[0]), os.path.realpath(lines[1]))


def _committed_folder(top: str, folder: str) -> bool:
    """Whether the commit checked out at ``top`` has the folder ``folder`` (relative to top)."""
    done = _git(top, "cat-file", "-t", f"HEAD:{folder.replace(os.sep, '/')}")
    if done is None:
        return True  # not knowable here: each item's attempt still checks
    return done.returncode == 0 and done.stdout.strip() == "tree"


def _git(folder: str, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``git -C folder ARGS``, finished; None when git cannot be run (missing, timed out)."""
    try:
        return subprocess.run(["git", "-C", folder, *args], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def _within(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def _script(word: str) -> bool:
    """Whether a word of a command names a script file (not an option, a URL or a code line)."""
    return (not word.startswith("-") and "://" not in word and not any(c.isspace() for c in word)
            and os.path.splitext(word)[1].lower() in SCRIPT_SUFFIXES)


def _stderr_note(result: ProcessResult) -> str:
    """What the command printed on stderr, briefly, for a failure about its stdout (JSON
    printed on the wrong stream shows at once)."""
    tail = result.stderr_tail(PREVIEW_CHARS)
    return f" (its stderr: {tail!r})" if tail else ""


def _timeout(task: Task, default: float | None) -> float | None:
    limits = [t for t in (task.timeout, default) if t is not None]
    return min(limits) if limits else None


def preview(text: str) -> str:
    """A short quoted excerpt of ``text`` for an error message."""
    text = text.strip()
    if not text:
        return "(empty output)"
    if len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS] + "..."
    return repr(text)


def clip(value: object, limit: int = PREVIEW_CHARS) -> str:
    """``value`` as one line of at most ``limit`` characters (a message from the other side)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."
