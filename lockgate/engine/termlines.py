"""The lines a terminal gate prompt reads (:class:`~lockgate.engine.gatechannel.TerminalGates`).

A prompt must be able to stop waiting when its gate is decided elsewhere, and must never drop
what was typed in silence. :class:`TerminalLines` reads standard input through a selector on the
event loop (a prompt can end at once); :class:`AskedLines` calls a blocking ``ask`` in a worker
thread, whose late line is reported instead of lost; :class:`PromptedLines` shows the question.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any, Protocol

Ask = Callable[[str], str]


class LineReader(Protocol):
    """Where a prompt's answers come from: ``read`` shows a question and returns the line
    typed (EOFError at end of input); ``interrupt`` ends the line of a question left unanswered;
    ``abandon`` hands lines typed from now on, while no question waits, to ``report``."""

    async def read(self, prompt: str) -> str: ...

    def interrupt(self) -> None: ...

    def abandon(self, report: Callable[[str], Any]) -> None: ...


class AskedLines:
    """Lines read by ``ask(prompt)`` in a worker thread, one read at a time. A thread cannot be
    interrupted: the read of an abandoned prompt goes on, its line goes to the ``report`` given
    to :meth:`abandon`, or, when another prompt comes first, is that prompt's answer (its
    question shown with ``show``)."""

    def __init__(self, ask: Ask, show: Callable[[str], Any]) -> None:
        self.ask = ask
        self.show = show
        self._pending: asyncio.Future[str] | None = None  # a read whose line nobody took yet
        self._report: Callable[[str], Any] | None = None

    async def read(self, prompt: str) -> str:
        self._report = None
        if self._pending is None:
            self._pending = asyncio.ensure_future(asyncio.to_thread(self.ask, prompt))
            self._pending.add_done_callback(self._done)
        else:  # an abandoned prompt's read is still going: it reads this answer
            self.show(prompt)
        pending = self._pending
        try:
            return await asyncio.shield(pending)
        finally:
            if pending.done() and self._report is None:
                self._pending = None

    def interrupt(self) -> None:
        if self._pending is not None and not self._pending.done():
            self.show("")  # ask showed a question and reads on: what is said next starts a line

    def abandon(self, report: Callable[[str], Any]) -> None:
        self._report = report
        if self._pending is not None and self._pending.done():  # read as the prompt was abandoned
            self._done(self._pending)

    def _done(self, read: asyncio.Future[str]) -> None:
        if self._report is None or read is not self._pending:
            return
        self._pending = None
        if not read.cancelled() and read.exception() is None:
            self._report(read.result())


class PromptedLines:
    """Lines of :class:`TerminalLines`, each after ``prompt(text)`` shows the question."""

    def __init__(self, lines: TerminalLines, prompt: Callable[[str], Any]) -> None:
        self.lines = lines
        self.prompt = prompt
        self._open = False  # a question is shown and its answer not read: the line is open

    async def read(self, prompt: str) -> str:
        self.prompt(prompt)
        self._open = True
        line = await self.lines.readline()
        self._open = False
        return line

    def interrupt(self) -> None:
        if self._open:
            self.prompt("\n")  # what is said next starts a line of its own
            self._open = False

    def abandon(self, report: Callable[[str], Any]) -> None:
        self.lines.abandon(report)


class TerminalLines:
    """Lines from file descriptor ``fd`` (standard input: a terminal or a pipe), read on the
    event loop: a selector wakes the loop when input is ready, so a prompt can stop waiting
    (its gate decided elsewhere) with no thread left blocked in a read. After
    :meth:`abandon`, lines typed while no prompt reads are handed to its ``report``, never
    left for the next prompt to take as its answer. A descriptor a selector cannot watch (a
    regular file, /dev/null) never blocks, and is read directly."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._ended = False  # the last read found end of input (a terminal may give more later)
        self._waiter: asyncio.Future[None] | None = None
        self._report: Callable[[str], Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def readline(self) -> str:
        """The next line (without its end); EOFError at end of input."""
        self._report = None  # a prompt reads again: lines are its answers
        while True:
            line = self._take()
            if line is not None:
                return line
            if self._ended:
                self._ended = False
                raise EOFError
            if not self._watch():
                self._fill()
                continue
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
                self._deliver_strays()  # abandoned meanwhile: what was read is not an answer
                self._settle_watch()

    def abandon(self, report: Callable[[str], Any]) -> None:
        """No prompt reads now: hand each line that comes to ``report`` until one does."""
        self._report = report
        self._deliver_strays()
        if self._report is not None:
            self._watch()

    def stop(self) -> None:
        """Stop handing lines to the report of :meth:`abandon` (no prompt reads now)."""
        self._report = None
        self._settle_watch()

    def _watch(self) -> bool:
        """Have the loop call :meth:`_ready` when input is ready; False when ``fd`` cannot be
        watched."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return True
        try:
            loop.add_reader(self.fd, self._ready)
        except (OSError, ValueError, NotImplementedError):
            return False
        self._loop = loop
        return True

    def _settle_watch(self) -> None:
        """Stop watching when nobody wants lines any more (or input ended)."""
        if self._loop is not None and self._waiter is None and (self._report is None or self._ended):
            if not self._loop.is_closed():
                self._loop.remove_reader(self.fd)
            self._loop = None

    def _ready(self) -> None:
        self._fill()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
            return
        self._deliver_strays()
        self._settle_watch()

    def _deliver_strays(self) -> None:
        while self._report is not None:
            line = self._take()
            if line is None:
                break
            self._report(line)
        if self._ended and self._report is not None:
            self._report, self._ended = None, False  # nothing more now (a terminal may give more later)

    def _fill(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._buffer += data
        else:
            self._ended = True

    def _take(self) -> str | None:
        end = self._buffer.find(b"\n")
        if end < 0:
            if not self._ended or not self._buffer:
                return None
            end = len(self._buffer)  # the last line, with no end of line
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        return line.decode("utf-8", "replace").rstrip("\r")


def fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


def write_prompt(text: str) -> None:
    """Show a prompt without ending the line (on stdout, as ``input`` does)."""
    sys.stdout.write(text)
    sys.stdout.flush()
