"""Running an agent's command line: its own process group, a timeout, cancellation.

Every child starts a new session (``start_new_session=True``), so the whole tree it spawns shares
one process group. Timeouts and cancellation send SIGTERM to the group, give it a short grace
period, then SIGKILL the group, so grandchildren die too. When the leader exits normally,
anything it left running in its group is killed as well: an agent call owns its processes and
nothing outlives it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import AgentError, AgentUnavailable

TERM_GRACE_S = 2.0
TAIL_CHARS = 2000


@dataclass(frozen=True)
class ProcessResult:
    returncode: int
    stdout: str
    stderr: str

    def stderr_tail(self, limit: int = TAIL_CHARS) -> str:
        text = self.stderr.strip()
        return text if len(text) <= limit else "..." + text[-limit:]


class ProcessTimeout(AgentError):
    """The command ran past its timeout and was killed."""


class ProcessCancelled(AgentError):
    """The command was killed because its agent was cancelled."""


class ProcessGroup:
    """The processes one adapter has in flight, so ``cancel()`` can kill them all."""

    def __init__(self) -> None:
        self._running: set[asyncio.subprocess.Process] = set()
        self._cancelled: set[int] = set()

    async def run(self, argv: Sequence[str], *, stdin: bytes = b"", cwd: str | None = None,
                  env: Mapping[str, str] | None = None, timeout: float | None = None,
                  ) -> ProcessResult:
        """Run ``argv`` to completion; raise ProcessTimeout, AgentUnavailable or CancelledError."""
        proc = await _spawn(argv, cwd=cwd, env=env)
        self._running.add(proc)
        try:
            result = await _communicate(proc, stdin, timeout, argv[0])
        finally:
            self._running.discard(proc)
        if proc.pid in self._cancelled:
            self._cancelled.discard(proc.pid)
            raise ProcessCancelled(f"{argv[0]} was cancelled and its process group killed")
        return result

    async def kill_all(self) -> None:
        """Terminate every process group in flight (SIGTERM, grace, SIGKILL)."""
        procs = list(self._running)
        self._cancelled.update(p.pid for p in procs)
        await asyncio.gather(*(terminate_group(p) for p in procs))

    def __len__(self) -> int:
        return len(self._running)


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
        where = f" (working directory {cwd})" if cwd and not os.path.isdir(cwd) else ""
        raise AgentUnavailable(f"cannot run {argv[0]!r}: not found{where}") from exc
    except PermissionError as exc:
        raise AgentUnavailable(f"cannot run {argv[0]!r}: permission denied") from exc


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes, timeout: float | None,
                       program: str) -> ProcessResult:
    assert proc.stdout is not None and proc.stderr is not None
    stdout_task = asyncio.ensure_future(proc.stdout.read())
    stderr_task = asyncio.ensure_future(proc.stderr.read())
    try:
        async with asyncio.timeout(timeout):
            await _feed(proc, stdin)
            await _leader_exited(proc)
    except TimeoutError:
        await terminate_group(proc)
        _drop(stdout_task, stderr_task)
        raise ProcessTimeout(f"{program} timed out after {timeout:g}s and was killed") from None
    except BaseException:
        await terminate_group(proc)
        _drop(stdout_task, stderr_task)
        raise
    _kill_leftovers(proc.pid)
    stdout, stderr = await asyncio.gather(stdout_task, stderr_task)
    await proc.wait()
    return ProcessResult(proc.returncode or 0, _decode(stdout), _decode(stderr))


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
    """SIGTERM the process group, wait up to the grace period, then SIGKILL whatever is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), TERM_GRACE_S)
    except TimeoutError:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


def _kill_leftovers(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _drop(*tasks: asyncio.Future[bytes]) -> None:
    for task in tasks:
        task.cancel()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
