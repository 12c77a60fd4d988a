"""Running an agent's command line: its own process group, a timeout, cancellation.

Every child starts a new session (``start_new_session=True``), so the whole tree it spawns shares
one process group. Timeouts and cancellation send SIGTERM to the group, give it a short grace
period, then SIGKILL the group, so grandchildren die too; a call stopped again during that
grace period (a second Ctrl-C) SIGKILLs its group at once. When the leader exits normally,
anything it left running in its group is killed as well: an agent call owns its processes and
nothing outlives it, not even this process killed with SIGKILL (see
:mod:`lockgate.engine.agents.guardian`).

What is read is bounded: stdout up to ``max_stdout`` bytes (more kills the group and fails the
call), stderr only its last ``STDERR_KEEP`` bytes. A descendant that left the group (``setsid``)
and still holds the pipes cannot delay the call: once the leader has exited, the pipes get
``PIPE_GRACE_S`` to reach end of file, then they are closed on our side.
"""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import AgentError, AgentUnavailable
from ..textargs import MAX_RESULT_BYTES
from .guardian import GUARDIAN

TERM_GRACE_S = 2.0
#: Seconds a call stopped mid-way waits, blocking, for its SIGKILLed leader to exit (see :func:`kill_now`).
KILL_WAIT_S = 1.0
#: Seconds between looks at whether a killed leader has been reaped by asyncio's child watcher.
REAP_POLL_S = 0.005
PIPE_GRACE_S = 1.0
TAIL_CHARS = 2000
#: A command's stdout is its result: no more is read than a result may be long.
MAX_STDOUT = MAX_RESULT_BYTES
STDERR_KEEP = 64 * 1024
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class ProcessResult:
    """How the command ended; ``bad_utf8_at`` is the offset of the first byte of stdout that is
    not UTF-8 (None when it all is): those bytes read as U+FFFD in ``stdout``."""

    returncode: int
    stdout: str
    stderr: str
    bad_utf8_at: int | None = None

    def stderr_tail(self, limit: int = TAIL_CHARS) -> str:
        text = self.stderr.strip()
        return text if len(text) <= limit else "..." + text[-limit:]

    def ended(self) -> str:
        """How a command that failed ended: ``exited with status 3``, or ``was killed by signal
        9 (SIGKILL)`` (a negative return code is the signal that ended it)."""
        if self.returncode >= 0:
            return f"exited with status {self.returncode}"
        number = -self.returncode
        try:
            name = f" ({signal.Signals(number).name})"
        except ValueError:
            name = ""
        return f"was killed by signal {number}{name}"


class ProcessTimeout(AgentError):
    """The command ran past its timeout and was killed."""


class ProcessCancelled(AgentError):
    """The command was killed because its agent was cancelled."""


class ProcessOutputTooLarge(AgentError):
    """The command printed more on stdout than the adapter reads, and was killed."""


class ProcessGroup:
    """The processes one adapter has in flight, so ``cancel()`` can kill them all."""

    def __init__(self) -> None:
        self._running: dict[asyncio.subprocess.Process, str | None] = {}  # process -> its run
        self._cancelled: set[int] = set()

    async def run(self, argv: Sequence[str], *, stdin: bytes = b"", cwd: str | None = None,
                  env: Mapping[str, str] | None = None, timeout: float | None = None,
                  max_stdout: int = MAX_STDOUT, run_id: str | None = None) -> ProcessResult:
        """Run ``argv`` to completion (for run ``run_id``, see :meth:`kill_all`); raise
        ProcessTimeout, ProcessOutputTooLarge, AgentUnavailable, another AgentError (it cannot be
        started) or CancelledError."""
        GUARDIAN.start()
        proc = await _started(_spawn(argv, cwd=cwd, env=env))
        self._running[proc] = run_id
        GUARDIAN.watch(proc.pid)  # killed with this process, if it dies first (before it reads stdin)
        ended = False
        try:
            result = await _communicate(proc, stdin, timeout, argv[0], max_stdout)
            ended = True
        finally:
            self._running.pop(proc, None)
            if not ended:
                # stopped, perhaps while its group was being terminated (a second Ctrl-C in the
                # SIGTERM grace period cancels that too): nothing it started may outlive the call
                kill_now(proc)
            GUARDIAN.forget(proc.pid)  # ended: the leader reaped or killed, the rest of the group killed
        if proc.pid in self._cancelled:
            self._cancelled.discard(proc.pid)
            raise ProcessCancelled(f"{argv[0]} was cancelled and its process group killed")
        return result

    async def kill_all(self, run_id: str | None = None) -> None:
        """Terminate every process group in flight (SIGTERM, grace, SIGKILL), or only those
        started for run ``run_id``."""
        procs = [p for p, owner in self._running.items() if run_id is None or owner == run_id]
        self._cancelled.update(p.pid for p in procs)
        await asyncio.gather(*(terminate_group(p) for p in procs))

    def __len__(self) -> int:
        return len(self._running)


async def _started(spawn: Coroutine[Any, Any, asyncio.subprocess.Process]) -> asyncio.subprocess.Process:
    """The process ``spawn`` starts. A cancellation that lands while it starts waits for the
    start to finish, then kills the new process group: cancelled inside asyncio's start, only
    the leader would be killed, and the start would wait for the pipes its children hold open
    (a command's ``sleep 20`` left running, and the stop held up that long)."""
    starting = asyncio.ensure_future(spawn)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        if not starting.cancelled():
            proc = None
            try:
                proc = await starting
                await terminate_group(proc)
            except Exception:  # noqa: BLE001 - it did not start: nothing to kill
                pass
            except BaseException:  # stopped again while it was being stopped
                if proc is not None:
                    kill_now(proc)
                raise
        raise


async def _spawn(argv: Sequence[str], *, cwd: str | None,
                 env: Mapping[str, str] | None) -> asyncio.subprocess.Process:
    if not argv:
        raise AgentError("the agent command is empty")
    try:
        return await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=cwd,
            env=dict(env) if env is not None else None, start_new_session=True)
    except FileNotFoundError as exc:
        raise AgentUnavailable(f"cannot run {argv[0]!r}: {_not_found(argv[0], cwd, env)}") from exc
    except PermissionError as exc:
        raise AgentUnavailable(f"cannot run {argv[0]!r}: permission denied") from exc
    except (OSError, ValueError) as exc:  # a bad cwd, E2BIG, a NUL byte or '=' in env/argv
        raise AgentError(f"cannot start {argv[0]!r}: {exc}") from exc


def _not_found(program: str, cwd: str | None, env: Mapping[str, str] | None) -> str:
    """Why exec reported ENOENT: no working directory, no such program, or a program that exists
    but whose interpreter (its ``#!`` line) does not."""
    if cwd and not os.path.isdir(cwd):
        return f"not found (working directory {cwd})"
    found = find_program(program, env, cwd)
    interpreter = _interpreter(found) if found else None
    if interpreter:
        crlf = (" (the line ends in a carriage return: give the file Unix line endings)"
                if interpreter.endswith("\r") else "")
        return f"the interpreter its first line names, {interpreter!r}, was not found{crlf}"
    if found:
        return "the file exists, but the interpreter or loader it needs was not found"
    return "not found"


def find_program(program: str, env: Mapping[str, str] | None = None,
                 cwd: str | None = None) -> str | None:
    """The executable file exec would run for ``program`` given environment ``env`` (None: this
    process's) in folder ``cwd`` (None: this one), or None: a path is taken from ``cwd``, a name
    is looked for on *env's* PATH, as exec looks for it (an agent's own ``env.PATH`` counts)."""
    if os.sep in program:
        path = os.path.join(cwd or os.getcwd(), program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program, path=os.pathsep.join(os.get_exec_path(env)))


def _interpreter(path: str) -> str | None:
    """The interpreter a script's ``#!`` line names, or None (no such line, or unreadable)."""
    try:
        with open(path, "rb") as script:
            first = script.readline(4096)
    except OSError:
        return None
    # as the kernel reads it: up to a space, tab or newline (a carriage return is kept)
    words = first[2:].rstrip(b"\n").replace(b"\t", b" ").split(b" ") if first.startswith(b"#!") else []
    named = next((word for word in words if word), None)
    return os.fsdecode(named) if named else None


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes, timeout: float | None,
                       program: str, max_stdout: int) -> ProcessResult:
    assert proc.stdout is not None and proc.stderr is not None
    stdout = _Capture(max_stdout, on_overflow=lambda: _signal_group(proc.pid, signal.SIGKILL))
    stderr = _Capture(STDERR_KEEP, keep_tail=True)
    readers = [asyncio.ensure_future(stdout.drain(proc.stdout)),
               asyncio.ensure_future(stderr.drain(proc.stderr))]
    try:
        async with asyncio.timeout(timeout):
            await _feed(proc, stdin)
            await _leader_exited(proc)
    except TimeoutError:
        await _stop(proc, readers)
        raise ProcessTimeout(f"{program} timed out after {timeout:g}s and was killed") from None
    except BaseException:
        await _stop(proc, readers)
        raise
    _kill_leftovers(proc.pid)
    await _finish_reading(proc, readers)
    returncode = await proc.wait()  # prompt: the leader has exited and our pipe ends are closed
    if stdout.overflowed:
        raise ProcessOutputTooLarge(
            f"{program} printed more than {_size(max_stdout)} on stdout (the most that is read) "
            "and was killed")
    out, bad_utf8_at = _decode_checked(stdout.data())
    return ProcessResult(returncode or 0, out, _decode(stderr.data()), bad_utf8_at)


class _Capture:
    """Drains one pipe to its end, keeping at most ``limit`` bytes: the head (stdout, where
    more than the limit is an overflow) or the tail (stderr, where only the end matters)."""

    def __init__(self, limit: int, *, keep_tail: bool = False,
                 on_overflow: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.keep_tail = keep_tail
        self.on_overflow = on_overflow
        self.overflowed = False
        self._chunks: list[bytes] = []
        self._size = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_CHUNK):
            if self.overflowed and not self.keep_tail:
                continue  # the group is being killed; read on so nothing blocks on the pipe
            self._chunks.append(chunk)
            self._size += len(chunk)
            if self._size > self.limit:
                self._overflow()

    def _overflow(self) -> None:
        if self.keep_tail:
            data = b"".join(self._chunks)[-self.limit:]
            self._chunks, self._size = [data], len(data)
            return
        self.overflowed = True
        self._chunks, self._size = [], 0
        if self.on_overflow is not None:
            self.on_overflow()

    def data(self) -> bytes:
        return b"".join(self._chunks)


async def _finish_reading(proc: asyncio.subprocess.Process, readers: list[asyncio.Future]) -> None:
    """Let the pipes reach end of file, but not for long: a descendant outside the group may
    hold them open forever. Whatever the leader printed is in the pipe when it exits."""
    try:
        done, pending = await asyncio.wait(readers, timeout=PIPE_GRACE_S)
    finally:
        _abandon(proc, readers)  # also closes the transport when we are cancelled here
    await asyncio.gather(*pending, return_exceptions=True)
    for reader in done:
        reader.result()


async def _stop(proc: asyncio.subprocess.Process, readers: list[asyncio.Future]) -> None:
    """Kill the group, stop reading, and reap the leader (so its transport is finished)."""
    await terminate_group(proc)
    _abandon(proc, readers)
    await proc.wait()


def _abandon(proc: asyncio.subprocess.Process, readers: list[asyncio.Future]) -> None:
    """Stop reading and close our ends of the pipes, so the transport (and ``wait()``)
    finishes even while a process outside the group still holds the other ends."""
    for reader in readers:
        reader.cancel()
    transport = getattr(proc, "_transport", None)  # asyncio offers no public way to the pipes
    for fd in (0, 1, 2):
        pipe = transport.get_pipe_transport(fd) if transport is not None else None
        if pipe is not None:
            pipe.close()


def _size(limit: int) -> str:
    mib = limit / (1024 * 1024)
    return f"{mib:g} MiB" if mib >= 1 else f"{limit} bytes"


async def _leader_exited(proc: asyncio.subprocess.Process) -> None:
    """Wait for the leader itself to exit.

    ``Process.wait()`` also waits for the pipes to close, which never happens while a grandchild
    holds them; a pidfd becomes readable as soon as the leader exits.
    """
    if proc.returncode is not None:
        return
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, or already reaped: returncode is near
        while proc.returncode is None:
            await asyncio.sleep(0.02)
        return
    loop = asyncio.get_running_loop()
    exited = loop.create_future()
    loop.add_reader(fd, lambda: exited.done() or exited.set_result(None))
    try:
        await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    assert proc.stdin is not None
    try:
        if data:
            proc.stdin.write(data)
            await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read its input; its exit status tells the rest
    finally:
        proc.stdin.close()


async def terminate_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, wait up to the grace period, then SIGKILL whatever is left;
    returns once the leader is reaped (no zombie left behind for whoever looks next)."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(_leader_exited(proc), TERM_GRACE_S)
    except TimeoutError:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    await _leader_exited(proc)  # not proc.wait(): that also waits for the pipes to close
    while proc.returncode is None:  # exited: asyncio's child watcher reaps it in a moment
        await asyncio.sleep(REAP_POLL_S)


def kill_now(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL ``proc``'s group without awaiting anything, wait (blocking, at most
    :data:`KILL_WAIT_S`) for the leader to exit, and close our ends of its pipes: for a call
    stopped while, or before, its group was terminated, where there may be no event loop left to
    await on. SIGKILL cannot be caught or ignored: whatever is left of the group dies."""
    _signal_group(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        _wait_exit(proc.pid, KILL_WAIT_S)
    transport = getattr(proc, "_transport", None)  # asyncio offers no public way to close it
    try:
        if transport is not None:
            transport.close()  # now, while its loop runs: not when it is collected after the loop closed
    except RuntimeError:  # the loop is closed already
        pass


def _wait_exit(pid: int, timeout: float) -> None:
    """Block until process ``pid`` has exited (a zombie counts), or ``timeout`` seconds pass."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # reaped already (or not Linux: SIGKILL has to do)
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def _kill_leftovers(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _decode_checked(data: bytes) -> tuple[str, int | None]:
    """(``data`` decoded as :func:`_decode` does, the offset of its first byte that is not
    UTF-8 or None): one strict decode, a lenient one only when that fails."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return _decode(data), exc.start
