"""Requests over the size limit (review s13b F4): a ~1 GiB request line made the server's memory grow
with it, then quote the value whole to make an excerpt, until it failed with "unhandled errors in a
TaskGroup" and a 91-line traceback. A line over :data:`MAX_REQUEST_BYTES` is now read in pieces and
dropped, its request answered with the limit when its id can be found (before or after its params)
or logged when not, and the server goes on serving; excerpts cost memory in proportion to the
excerpt, not the value."""

from __future__ import annotations

import io
import json
import os
import sys
import tracemalloc
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from mcp_support import CHECKED, connect
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from lockgate.mcp.excerpts import cut_quotes
from lockgate.mcp.requestsize import MAX_REQUEST_BYTES, Oversized, RequestLines

CALL_TIMEOUT = 60
MIB = 1024 * 1024
LIMIT_WORDS = f"a request may be at most {MAX_REQUEST_BYTES:,} bytes ({MAX_REQUEST_BYTES // MIB} MiB)"

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's peak memory")


async def test_an_oversized_call_is_refused_naming_the_limit_and_the_next_call_is_served(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        with anyio.fail_after(CALL_TIMEOUT):
            message, data = await s.refused("lockgate_validate", {"spec": "a" * (MAX_REQUEST_BYTES + 1)})
        assert data["error_type"] == "invalid_arguments", data
        assert message.startswith("invalid_arguments: the request was not read: it is ") and LIMIT_WORDS in message
        assert "give a large one as a file by `path`" in message and len(message) < 500
        assert (await s.ok("lockgate_validate", {"spec": CHECKED}))["valid"] is True
        # a spec over its own limit, in a request under the limit, still gets the spec's answer
        checked = await s.ok("lockgate_validate", {"spec": "a" * (12 * MIB)})
        assert checked["errors"][0]["code"] == "LG101", checked


class RawClient:
    """`lockgate mcp` driven with request lines of the test's own making."""

    def __init__(self, process: Process) -> None:
        self.process, self.buffer = process, b""

    async def start(self) -> None:
        await self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert "result" in await self.answer(0)
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def send(self, message: dict) -> None:
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def answer(self, request_id: int | str) -> dict:
        """The next message the server writes, which must answer ``request_id``."""
        with anyio.fail_after(CALL_TIMEOUT):
            while b"\n" not in self.buffer:
                self.buffer += await self.process.stdout.receive()
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        assert message.get("id") == request_id, message
        return message

    async def served(self) -> None:
        """Whether the server still answers a tool call."""
        await self.send({"jsonrpc": "2.0", "id": "next", "method": "tools/call",
                         "params": {"name": "lockgate_runs", "arguments": {}}})
        assert (await self.answer("next"))["result"]["structuredContent"] == {"runs": []}

    def peak_memory(self) -> int:
        """The server's peak resident memory so far, in bytes."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:"))

    async def stderr(self) -> str:
        """What the server wrote on stderr, once it has ended (stdin closed)."""
        await self.process.stdin.aclose()
        with anyio.fail_after(CALL_TIMEOUT):
            assert await self.process.wait() == 0
        assert self.process.stderr is not None
        chunks = [chunk async for chunk in self.process.stderr]
        return b"".join(chunks).decode()


def test_an_oversized_line_is_dropped_and_its_top_level_id_found_whatever_it_holds() -> None:
    nested = {"id": "nested", "method": "ping", "text": 'a "quoted" \\ [{' + "é" * 300, "list": [{"id": 3}] * 50}
    request = {"method": "tools/call", "params": {"arguments": nested, "id": "in params"}, "jsonrpc": "2.0",
               "id": "real"}
    oversized = json.dumps(request).encode()
    stream = io.BytesIO(b'{"id": 1}\n' + oversized + b"\n" + b'{"id": 2}\n' + b"[" * 2000 + b"\n")
    lines = RequestLines(stream, limit=1000)
    assert lines.readline() == '{"id": 1}\n'
    stand_in = lines.readline()
    assert json.dumps(request) not in stand_in and lines.readline() == '{"id": 2}\n'
    brackets = lines.readline()
    with pytest.raises(ValidationError) as unreadable:
        jsonrpc_message_adapter.validate_json(stand_in, by_name=False)
    assert lines.take(unreadable.value) == Oversized(len(oversized), ("real", "tools/call"))
    assert lines.take(unreadable.value) is None  # answered once
    with pytest.raises(ValidationError) as unreadable:
        jsonrpc_message_adapter.validate_json(brackets, by_name=False)
    assert lines.take(unreadable.value) == Oversized(2000, None)
    assert lines.readline() == ""


def _server(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "lockgate", "mcp", "--store", str(tmp_path / "runs.db"), "--workspace", str(tmp_path)]


async def test_a_line_four_times_the_limit_with_its_id_after_its_params_is_answered_in_bounded_memory(
        tmp_path: Path) -> None:
    """The order the TypeScript SDK writes (``{"method", "params", "jsonrpc", "id"}``): the id is
    found after 256 MiB of a string full of escaped quotes and brackets, without holding it."""
    async with await anyio.open_process(_server(tmp_path), cwd=tmp_path) as process:
        client = RawClient(process)
        await client.start()
        before = client.peak_memory()
        head, tail = b'{"method":"tools/call","params":{"name":"lockgate_validate","arguments":{"spec":"', \
            b'"}},"jsonrpc":"2.0","id":"big"}'
        piece = b'\\"}]{[\\"id\\":1,' * (MIB // 16)  # an id in a string: brackets and escaped quotes
        pieces = 4 * MAX_REQUEST_BYTES // len(piece)
        await process.stdin.send(head)
        for _ in range(pieces):
            await process.stdin.send(piece)
        await process.stdin.send(tail + b"\n")
        result = (await client.answer("big"))["result"]
        assert result["isError"] is True and result["structuredContent"]["error_type"] == "invalid_arguments"
        size = len(head) + pieces * len(piece) + len(tail)
        assert f"it is {size:,} bytes long" in result["content"][0]["text"], result
        assert LIMIT_WORDS in result["content"][0]["text"]
        # the line is read in pieces: its first MAX_REQUEST_BYTES held once or twice, never the line
        assert client.peak_memory() - before < 3 * MAX_REQUEST_BYTES, (before, client.peak_memory())
        await client.served()
        assert "Traceback" not in await client.stderr()


async def test_an_oversized_line_whose_id_is_unknown_is_logged_and_the_next_call_is_served(tmp_path: Path) -> None:
    async with await anyio.open_process(_server(tmp_path), cwd=tmp_path) as process:
        client = RawClient(process)
        await client.start()
        await process.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"'
                                 + b"a" * (MAX_REQUEST_BYTES + MIB) + b'"}}\n')
        await client.served()  # the first answer after the dropped line
        # the wire is read from a descriptor of its own: a child inheriting stdin reads nothing off it
        assert os.readlink(f"/proc/{process.pid}/fd/0") == os.devnull
        stderr = await client.stderr()
    assert "lockgate mcp: a request was not read and cannot be answered (its id was not found)" in stderr
    assert LIMIT_WORDS in stderr and "Traceback" not in stderr, stderr[-2000:]


async def test_a_line_of_many_escapes_the_transport_cannot_read_is_answered_in_bounded_memory(tmp_path: Path) -> None:
    """Under the limit, a line the transport refuses is searched for its id; a string of 16 MiB
    escaped quotes cost some 1.1 GB there (the search kept a state per escape)."""
    async with await anyio.open_process(_server(tmp_path), cwd=tmp_path) as process:
        client = RawClient(process)
        await client.start()
        before = client.peak_memory()
        await process.stdin.send(b'{"method":"tools/call","params":{"name":"lockgate_validate","arguments":{"spec":"'
                                 + b'\\"' * (8 * MIB) + b'\\ud800"}},"jsonrpc":"2.0","id":7}\n')
        result = (await client.answer(7))["result"]
        assert result["isError"] is True and "lone UTF-16 surrogate" in result["content"][0]["text"]
        assert client.peak_memory() - before < 300 * MIB, (before, client.peak_memory())
        await client.served()


@pytest.mark.parametrize("quote", [repr, json.dumps, lambda value: json.dumps(value, ensure_ascii=False)],
                         ids=["repr", "json", "json-unicode"])
def test_excerpts_of_a_long_value_cost_memory_for_the_excerpt_only(quote) -> None:
    """Each form was made whole to be looked for: some 700 MB for this 64 Mi character value."""
    value = "it's \"quoted\" é " * (4 * MIB)
    message = f"no run with id {quote(value)} in the store"
    tracemalloc.start()
    try:
        cut, data = cut_quotes(message, {"message": message}, {"run_id": value})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cut == data["message"] and len(cut) < 300, cut
    assert cut == f"no run with id {quote(value[:80])[:-1]}…{quote(value)[-1]} ({len(value)} characters) in the store"
    assert peak < 4 * MIB, peak
