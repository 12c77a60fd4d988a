"""Hostile message framing on ``lockgate lsp``'s stdin (review s13b F1, F3).

A real ``python -m lockgate lsp`` gets raw bytes: one malformed or oversized frame, then a valid
``initialize``. The server either answers it, having logged what it skipped (the stream could be
read on), or exits with status 1 and one line on stderr (it could not): never a crash, never a
silent server. Every read has a timeout; nothing sleeps.
"""

from __future__ import annotations

import io
import json
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from lockgate.lsp.framing import MAX_MESSAGE_BYTES, FramedInput

#: Long enough for a server start on a busy machine; a hung server fails the test after it.
TIMEOUT_S = 60


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: int | str, method: str, params: Any = None) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


INITIALIZE = request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})


class RawServer:
    """``lockgate lsp`` in a subprocess, written to as raw bytes; what it sends is parsed into
    a queue by a reader thread (None once its output ends)."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lockgate", "lsp"], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.logged: list[str] = []  # the window/logMessage texts seen so far
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while (length := _header(out)) is not None:
            self.inbox.put(json.loads(out.read(length)))
        self.inbox.put(None)

    def write(self, data: bytes) -> None:
        """Write to the server's stdin; a server that has exited reads nothing more."""
        try:
            self.process.stdin.write(data)  # type: ignore[union-attr]
            self.process.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass

    def answer(self, msg_id: int | str) -> dict[str, Any] | None:
        """The answer to request ``msg_id``; None when the server's output ended first."""
        while True:
            try:
                message = self.inbox.get(timeout=TIMEOUT_S)
            except queue.Empty:
                pytest.fail(f"no answer to request {msg_id!r} in {TIMEOUT_S} s: the server hangs")
            if message is None:
                return None
            if message.get("method") == "window/logMessage":
                self.logged.append(message["params"]["message"])
            if message.get("id") == msg_id and "method" not in message:
                return message

    def end(self) -> tuple[int, str]:
        """Close stdin; the exit status and stderr of the server."""
        try:
            self.process.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
        status = self.process.wait(timeout=TIMEOUT_S)
        return status, self.process.stderr.read().decode()  # type: ignore[union-attr]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _header(out: Any) -> int | None:
    """Read a header block from the server's output: its Content-Length; None at the end."""
    length = None
    while line := out.readline():
        if not line.strip():
            return length
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return None


@pytest.fixture
def server(tmp_path):
    started = RawServer(tmp_path)
    yield started
    started.kill()


def assert_serves_on(server: RawServer) -> None:
    """The server answers ``initialize`` and ends cleanly on ``shutdown`` and ``exit``."""
    answer = server.answer(1)
    assert answer is not None and "capabilities" in answer["result"], answer
    server.write(request(2, "shutdown") + frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.answer(2) == {"jsonrpc": "2.0", "id": 2, "result": None}
    assert server.end() == (0, "")


RESYNCED = {
    "header without Content-Length": (b"Content-Type: x\r\n\r\n{}", "its header has no Content-Length"),
    "non-numeric Content-Length": (b"Content-Length: abc\r\n\r\n{}", "Content-Length 'abc' is not a positive"),
    "negative Content-Length": (b"Content-Length: -5\r\n\r\n{}", "Content-Length '-5' is not a positive"),
    "zero Content-Length": (b"Content-Length: 0\r\n\r\n", "Content-Length '0' is not a positive"),
    "two Content-Lengths": (b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                            "two Content-Length lines"),
    "a Content-Length with no value, then the next header": (b"Content-Length:\r\n",
                                                              "Content-Length '' is not a positive"),
    "Content-Length shorter than its body": (b'Content-Length: 3\r\n\r\n{"jsonrpc":"2.0","method":"x"}',
                                             "junk before a Content-Length header"),
    "line that is no header": (b"hello world\r\n", "'hello world' is not a message header"),
    "a megabyte without a line break": (b"x" * 2**20, "a line too long to be a message header"),
}


@pytest.mark.parametrize("hostile", RESYNCED.values(), ids=list(RESYNCED))
def test_a_malformed_frame_is_skipped_and_logged_and_the_next_is_answered(server, hostile):
    data, logged = hostile
    server.write(data + INITIALIZE)
    assert_serves_on(server)
    assert any("skipped" in text and logged in text for text in server.logged), server.logged


TOO_LARGE = {
    "the review's frame": (b"99999999999", "Content-Length 99999999999, over the limit of 67,108,864 bytes"),
    "one byte over the limit": (b"%d" % (MAX_MESSAGE_BYTES + 1), f"Content-Length {MAX_MESSAGE_BYTES + 1}, over"),
    "a thousand digits": (b"9" * 1000, "Content-Length a number of 1,000 digits, over the limit"),
}


@pytest.mark.parametrize("hostile", TOO_LARGE.values(), ids=list(TOO_LARGE))
def test_a_frame_over_the_limit_ends_the_server_with_one_line_on_stderr(server, hostile):
    length, said = hostile
    server.write(b"Content-Length: " + length + b"\r\n\r\n{}" + INITIALIZE)
    assert server.answer(1) is None  # the output ended: the body was not read, nor what follows
    status, stderr = server.end()
    assert status == 1
    assert stderr.count("\n") == 1 and stderr.startswith("error: a message announced " + said), stderr
    assert "the language server stops" in stderr
    assert any(said in text for text in server.logged), server.logged


def test_input_ending_inside_a_message_is_logged(server):
    server.write(INITIALIZE + b"Content-Length: 100\r\n\r\n{")
    assert server.answer(1) is not None
    status, stderr = server.end()
    assert (status, stderr) == (0, "")
    while (message := server.inbox.get(timeout=TIMEOUT_S)) is not None:
        if message.get("method") == "window/logMessage":
            server.logged.append(message["params"]["message"])
    assert "lockgate: the input ended 1 bytes into a message of 100 bytes" in server.logged


# -- random header bytes -----------------------------------------------------------------------------

#: A Content-Length that the reader would take as one: junk holding it announces a real frame.
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]", re.IGNORECASE)

_header_lines = st.lists(st.one_of(
    st.binary(max_size=40),
    st.builds(lambda v: b"Content-Length: " + v, st.binary(max_size=12)),
    st.builds(lambda n, v: n + b": " + v, st.sampled_from([b"Content-Type", b"content-length", b"X"]),
              st.text(max_size=12).map(str.encode)),
).map(lambda line: line.replace(b"\n", b"") + b"\r\n"), max_size=6)


def junk_frame(lines: list[bytes], body: bytes) -> bytes:
    """A frame of random header lines, ended by a blank line, and a random body."""
    return b"".join(lines) + b"\r\n" + body


def usable(junk: bytes) -> bool:
    """Whether ``junk`` holds no Content-Length the reader would take (and so no frame)."""
    return _LENGTH.search(junk) is None


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    started = RawServer(tmp_path_factory.mktemp("framing"))
    started.write(INITIALIZE)
    assert started.answer(1) is not None
    yield started
    started.kill()


_asked = iter(range(100, 10**9))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_header_lines, body=st.binary(max_size=60))
@example(lines=[b"\x84~\x06\r\n", b"\r\n"], body=b"Content-Length: %d\r\n")  # a broken length, then a real one
def test_random_header_bytes_never_cost_the_next_request(shared_server, lines, body):
    junk = junk_frame(lines, body)
    assume(usable(junk))
    msg_id = next(_asked)
    params = {"textDocument": {"uri": "file:///nowhere.stratum.yaml"}, "position": {"line": 0, "character": 0}}
    shared_server.write(junk + request(msg_id, "textDocument/hover", params))
    assert shared_server.answer(msg_id) is not None, "the server's output ended"


def read_all(data: bytes) -> tuple[list[bytes], list[str], FramedInput]:
    """Every body pygls would get from ``data``, and what was reported on the way."""
    reports: list[str] = []
    framed = FramedInput(io.BufferedReader(io.BytesIO(data)), reports.append)  # type: ignore[arg-type]
    bodies = []
    while True:
        header = framed.readline()
        if not header:
            return bodies, reports, framed
        assert re.fullmatch(rb"Content-Length: [1-9][0-9]*\r\n", header) and framed.readline() == b"\r\n"
        body = framed.read(int(header.split(b":")[1]))
        assert len(body) == int(header.split(b":")[1]) <= MAX_MESSAGE_BYTES
        bodies.append(body)


@settings(max_examples=300, deadline=None)
@given(junk=st.binary(max_size=200), lines=_header_lines, body=st.binary(max_size=60))
@example(junk=b"", lines=[], body=b"Content-Length:\n")  # a length with no value, then a real one
def test_any_input_reads_as_frames_an_end_or_a_failure(junk, lines, body):
    """Whatever comes first, reading goes on to the end of the input (or stops with a stated
    failure), and a junk header block costs none of the messages after it."""
    hover = request(7, "textDocument/hover")
    bodies, reports, framed = read_all(junk + b"\r\n" + junk_frame(lines, body) + hover + hover)
    if framed.failure is not None:
        assert "over the limit of 67,108,864 bytes" in str(framed.failure)
        assert str(framed.failure) in reports
    elif usable(junk + b"\r\n" + junk_frame(lines, body)):
        assert bodies[-2:] == [hover.split(b"\r\n\r\n", 1)[1]] * 2
