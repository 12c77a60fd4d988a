"""The OpenAI-compatible adapter against a hostile server: a raw TCP server on 127.0.0.1 that
answers each request with whatever bytes a test scripts (malformed bodies, oversized or endless
bodies, resets, redirects). Every case must end as a failed AgentResult with a one-line reason
within the adapter's own timeout, never an exception."""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable

import pytest

from lockgate.engine.agents import OpenAIAgent, Task
from lockgate.engine.agents.openai import MAX_BODY_BYTES

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}},
          "required": ["title"], "additionalProperties": False}
Action = Callable[[socket.socket], None]


def reply(status: int, body: bytes | str | dict, *, headers: dict | None = None,
          content_type: str = "application/json") -> Action:
    """A complete response with Content-Length."""
    data = body if isinstance(body, bytes) else (
        body.encode() if isinstance(body, str) else json.dumps(body).encode())

    def send(conn: socket.socket) -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}",
                 f"Content-Length: {len(data)}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
    return send


def completion(message: dict, **extra) -> dict:
    return {"model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            **extra}


def content(text: str) -> Action:
    return reply(200, completion({"role": "assistant", "content": text}))


def endless(chunk: bytes, pause: float, *, length: int = 10 ** 9) -> Action:
    """Headers announcing ``length`` bytes, then ``chunk`` after ``chunk`` until the client
    hangs up (a slowloris when ``pause`` is long and ``chunk`` short)."""
    def send(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {length}\r\n\r\n".encode())
        try:
            while True:
                conn.sendall(chunk)
                time.sleep(pause)  # the server's pace, not a test synchronisation
        except OSError:
            pass
    return send


def reset_mid_body(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"choices\": [")
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class HostileServer:
    """Accepts connections and plays the next scripted action on each request."""

    def __init__(self) -> None:
        self.actions: deque[Action] = deque()
        self.requests = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                _read_request(conn)
            except OSError:
                return
            self.requests += 1
            action = self.actions.popleft() if self.actions else reply(500, "no action")
            try:
                action(conn)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise OSError("closed")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += conn.recv(65536)


@pytest.fixture
def server():
    hostile = HostileServer()
    yield hostile
    hostile.close()


def agent(base_url: str, **kw) -> OpenAIAgent:
    kw.setdefault("max_retries", 0)
    return OpenAIAgent("reviewer", model="m", base_url=base_url, backoff=0, **kw)


def task(**kw) -> Task:
    return Task(run_id="r", step_id="draft", prompt="Draft", agent="reviewer", contract="Draft",
                schema=SCHEMA, **kw)


async def fails(server: HostileServer, *actions: Action, **kw) -> str:
    server.actions.extend(actions)
    result = await agent(server.base_url, **kw).execute(task(timeout=20))
    assert not result.ok
    assert "\n" not in result.failure and len(result.failure) < 1000, result.failure
    return result.failure


@pytest.mark.parametrize(("action", "expected"), [
    (reply(200, "<html>Bad gateway</html>", content_type="text/html"),
     "a body that is not JSON (Expecting value at line 1 column 1): '<html>Bad gateway</html>'"),
    (reply(200, {"id": "x", "object": "chat.completion"}), "answered without a choice"),
    (reply(200, {"choices": []}), "answered without a choice"),
    (reply(200, {"choices": ["text"]}), "answered without a choice"),
    (reply(200, {"choices": [{"message": "just a string"}]}), "answered without a choice"),
    (reply(200, [1, 2]), "answered without a choice"),
    (reply(200, b"{\"choices\": NaN}"), "not JSON (NaN is not a JSON number)"),
    (reply(200, b"\xff\xfe{}"), "not JSON (not UTF-8"),
    (reply(200, "[" * 100_000), "not JSON (nested too deeply to parse)"),
    (content("Sure! {\"title\": 1}"), "the model's answer is not JSON (Expecting value at line 1 column 1): 'Sure!"),
    (content("{\"title\": NaN}"), "the model's answer is not JSON"),
    (content("[" * 100_000), "the model's answer is not JSON"),
    (reply(200, completion({"role": "assistant", "content": [{"type": "text", "text": "{}"}]})),
     "the model's answer is not text but list"),
    (reply(200, completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]})),
     "answered with tool calls (lookup) instead of JSON content"),
    (reply(200, completion({"role": "assistant", "content": None, "refusal": "no " * 5000})),
     "the model refused: no no"),
    (reply(302, "", headers={"Location": "/v1/chat/completions"}),
     "HTTP 302 from {url} redirects to /v1/chat/completions; redirects are not followed"),
    (reply(404, {"error": {"message": "line one\nline two " + "x" * 5000}}),
     "HTTP 404 from {url}: line one line two xxx"),
])
async def test_a_malformed_reply_is_a_one_line_failure(server, action, expected):
    failure = await fails(server, action)
    assert expected.format(url=f"{server.base_url}/chat/completions") in failure


async def test_usage_and_model_of_the_wrong_types_are_ignored(server):
    server.actions.append(reply(200, {
        "model": ["not", "a", "name"], "usage": {"prompt_tokens": "12", "completion_tokens": -4,
                                                 "total_tokens": {"n": 1}},
        "choices": [{"message": {"content": "{\"title\": \"t\"}"}}]}))
    result = await agent(server.base_url).execute(task())
    assert result.output == {"title": "t"}
    assert result.usage.tokens == 0 and result.telemetry.model == "m"


async def test_an_oversized_body_is_not_read_past_the_bound(server):
    failure = await fails(server, endless(b" " * 65536, 0))
    bound = MAX_BODY_BYTES // (1024 * 1024)
    assert f"answered with a body larger than {bound} MiB (the most that is read)" in failure


async def test_a_compressed_body_is_bounded_by_its_decoded_size(server):
    bomb = gzip.compress(b" " * (64 << 20), compresslevel=9)
    failure = await fails(server, reply(200, bomb, headers={"Content-Encoding": "gzip"}))
    assert "answered with a body larger than" in failure


async def test_a_trickled_body_is_bounded_by_the_request_timeout(server):
    started = time.monotonic()
    failure = await fails(server, endless(b" ", 0.05), timeout=1.0)
    assert "gave up after 1.0 s (the 1 s timeout): no complete answer from" in failure
    assert time.monotonic() - started < 10


async def test_a_connection_reset_mid_body_is_retried_then_a_failure(server):
    failure = await fails(server, reset_mid_body, reset_mid_body, max_retries=1)
    assert server.requests == 2
    assert f"cannot reach {server.base_url}/chat/completions" in failure


async def test_a_reset_then_an_answer_succeeds(server):
    server.actions.extend([reset_mid_body, content("{\"title\": \"t\"}")])
    result = await agent(server.base_url, max_retries=1).execute(task())
    assert result.output == {"title": "t"}


async def test_an_unreadable_retry_after_leaves_the_backoff(server):
    server.actions.extend([
        reply(429, {"error": {"message": "slow"}}, headers={"Retry-After": "in a while"}),
        reply(503, "down", headers={"Retry-After": "soon"}),
        reply(500, "down"),
        content("{\"title\": \"late\"}")])
    result = await agent(server.base_url, max_retries=3, max_backoff=0.01).execute(
        task(timeout=20))
    assert result.output == {"title": "late"} and server.requests == 4


async def test_a_redirect_is_not_followed(server):
    failure = await fails(server, reply(307, "", headers={"Location": server.base_url}))
    assert server.requests == 1 and "redirects are not followed" in failure


@pytest.mark.parametrize(("base_url", "expected"), [
    ("http://[::1/v1", "invalid base_url 'http://[::1/v1'"),
    ("notaurl", "invalid base_url 'notaurl'"),
    ("ftp://127.0.0.1/v1", "invalid base_url 'ftp://127.0.0.1/v1'"),
])
async def test_a_malformed_base_url_is_a_failure(base_url, expected):
    result = await agent(base_url, max_retries=3).execute(task())
    assert expected in result.failure


async def test_a_closed_port_is_a_failure_after_retries():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        result = await agent(f"http://127.0.0.1:{port}/v1", max_retries=2).execute(task())
    assert f"cannot reach http://127.0.0.1:{port}/v1/chat/completions" in result.failure


async def test_extra_body_that_is_not_json_is_a_failure(server):
    result = await agent(server.base_url, extra_body={"seed": float("nan")}).execute(task())
    assert "the request body is not JSON (check extra_body)" in result.failure
    assert server.requests == 0


async def test_a_header_with_a_line_break_is_a_failure(server):
    result = await agent(server.base_url, headers={"X-Team": "a\r\nEvil: 1"}).execute(task())
    assert "cannot send the request" in result.failure
