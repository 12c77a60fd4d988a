"""The OpenAI-compatible adapter's ``timeout`` is a deadline for the whole call (every request,
every wait between retries), ``Retry-After`` is honoured in both its forms while the deadline
allows, and failures say what happened: the deadline, the provider's content filter, the API
key that was (or was not) sent. Against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lockgate.engine.agents import OpenAIAgent, Task

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}},
          "required": ["title"], "additionalProperties": False}
OK = {"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": '{"title": "t"}'}}]}


class Reply:
    """One scripted answer: ``status`` with ``body`` and ``headers``, sent after ``delay``
    seconds (the server's own pace); ``hang`` holds the request until the test ends."""

    def __init__(self, status: int = 200, body: object = OK, *, headers: dict | None = None,
                 delay: float = 0.0, hang: bool = False) -> None:
        self.status, self.body, self.headers = status, body, headers or {}
        self.delay, self.hang = delay, hang


class ScriptedServer:
    """Answers each POST with the next queued Reply (the last one again when the queue ends),
    recording when each request arrived and its Authorization header."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.arrivals: list[float] = []
        self.authorizations: list[str | None] = []
        self.ending = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                server.arrivals.append(time.monotonic())
                server.authorizations.append(self.headers.get("authorization"))
                reply = server.replies.popleft() if len(server.replies) > 1 else server.replies[0]
                if reply.hang or server.ending.wait(reply.delay):
                    server.ending.wait(60)
                    return
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:])]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    scripted.thread.start()
    yield scripted
    scripted.ending.set()
    scripted.httpd.shutdown()
    scripted.httpd.server_close()


def agent(server: ScriptedServer, **kw) -> OpenAIAgent:
    kw.setdefault("backoff", 0)
    return OpenAIAgent("reviewer", model="m", base_url=server.base_url, **kw)


def task(**kw) -> Task:
    return Task(run_id="r", step_id="draft", prompt="Draft", agent="reviewer", contract="Draft",
                schema=SCHEMA, **kw)


def error(status: int, message: str, **kw) -> Reply:
    return Reply(status, {"error": {"message": message}}, **kw)


async def timed(server: ScriptedServer, *replies: Reply, **kw) -> tuple[str, float]:
    """(the failure, seconds the call took) of one call against ``replies``."""
    server.replies.extend(replies)
    started = time.monotonic()
    result = await agent(server, **kw).execute(task())
    assert not result.ok
    return result.failure, time.monotonic() - started


async def test_timeout_bounds_the_whole_call_retries_included(server):
    url = f"{server.base_url}/chat/completions"
    failure, took = await timed(server, error(503, "overloaded", delay=0.8), error(503, "overloaded", delay=0.8),
                                Reply(hang=True), timeout=2, max_retries=5)
    assert 1.9 <= took < 3.0  # each request used to get the whole timeout: 0.8 + 0.8 + 2 s
    assert len(server.arrivals) == 3
    assert re.match(r"agent 'reviewer': gave up after 2\.\d s \(the 2 s timeout\): ", failure), failure
    assert failure.endswith(f"no complete answer from {url} to retry 2 "
                            f"(the failure before: HTTP 503 from {url}: overloaded)")


async def test_a_backoff_that_would_pass_the_deadline_is_not_waited_for(server):
    failure, took = await timed(server, error(503, "overloaded"), timeout=1, backoff=5, max_backoff=8)
    assert took < 0.9 and len(server.arrivals) == 1
    assert re.search(r"gave up after 0\.\d s \(the 1 s timeout\): HTTP 503 from ", failure), failure
    assert failure.endswith(": overloaded; no time is left for a retry (the next would be in 5 s)")


async def test_retry_after_longer_than_max_backoff_is_honoured(server):
    server.replies.extend([error(429, "slow down", headers={"Retry-After": "1"}), Reply()])
    result = await agent(server, max_retries=2, max_backoff=0.01, timeout=20).execute(task())
    assert result.output == {"title": "t"}
    assert server.gaps()[0] >= 0.95  # it used to be cut to max_backoff


async def test_retry_after_as_an_http_date_is_honoured(server):
    when = email.utils.formatdate(time.time() + 3, usegmt=True)  # whole seconds: 2 to 3 s away, so a
    # loaded machine taking a second to send the first request still leaves at least 1 s to wait
    server.replies.extend([error(503, "busy", headers={"Retry-After": when}), Reply()])
    result = await agent(server, max_retries=2, timeout=20).execute(task())
    assert result.output == {"title": "t"}
    assert server.gaps()[0] >= 0.9  # the date form used to be ignored (backoff 0)


async def test_a_past_http_date_means_retry_now(server):
    when = email.utils.formatdate(time.time() - 3600, usegmt=True)
    server.replies.extend([error(503, "busy", headers={"Retry-After": when}), Reply()])
    result = await agent(server, max_retries=1, timeout=20).execute(task())
    assert result.output == {"title": "t"} and len(server.arrivals) == 2


@pytest.mark.parametrize(("retry_after", "asked"), [
    ("60", "60"),
    ("3600", "3600"),
    ("in 7200 s, as an HTTP date", r"7[12]\d\d(\.\d)?"),
])
async def test_retry_after_past_the_timeout_fails_at_once(server, retry_after, asked):
    if retry_after.startswith("in "):  # dated when the test runs, not when it was collected
        retry_after = email.utils.formatdate(time.time() + 7200, usegmt=True)
    url = f"{server.base_url}/chat/completions"
    failure, took = await timed(server, error(429, "rate limited", headers={"Retry-After": retry_after}),
                                timeout=3, max_retries=3)
    assert took < 2.5 and len(server.arrivals) == 1
    assert re.fullmatch(f"agent 'reviewer': HTTP 429 from {re.escape(url)}: rate limited; the server "
                        f"asked to retry after {asked} s, past the 3 s timeout", failure), failure


async def test_retry_after_past_the_tasks_own_timeout_names_it(server):
    server.replies.append(error(503, "busy", headers={"Retry-After": "60"}))
    result = await agent(server, timeout=120, max_retries=3).execute(task(timeout=5))
    assert result.failure.endswith("the server asked to retry after 60 s, past the task's 5 s timeout")


async def test_retry_after_that_fits_then_one_that_does_not(server):
    failure, took = await timed(server, error(503, "busy", headers={"Retry-After": "1"}),
                                error(503, "busy", headers={"Retry-After": "1"}), timeout=1.6, max_retries=3)
    assert 0.95 <= took < 2.5 and len(server.arrivals) == 2
    assert re.search(r"the server asked to retry after 1 s, past the 1\.6 s timeout \(1\.\d s of it spent\)$",
                     failure), failure


async def test_content_filter_says_the_provider_stopped_the_answer(server):
    filtered = {"model": "m", "usage": {"prompt_tokens": 3, "completion_tokens": 0},
                "choices": [{"index": 0, "finish_reason": "content_filter",
                             "message": {"role": "assistant", "content": None}}]}
    failure, _ = await timed(server, Reply(200, filtered))
    assert failure == ("agent 'reviewer': the provider's content filter stopped the answer "
                       "(finish_reason content_filter)")


@pytest.mark.parametrize("status", [401, 403])
async def test_an_auth_failure_without_a_key_says_none_was_sent(server, monkeypatch, status):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-openai-only")
    failure, _ = await timed(server, error(status, "missing bearer token"))
    assert server.authorizations == [None]
    assert failure.endswith(f"HTTP {status} from {server.base_url}/chat/completions: missing bearer token "
                            "(no API key was sent: set api_key_env to the environment variable that "
                            "holds this server's key; OPENAI_API_KEY is set, but it is sent only to "
                            "api.openai.com unless api_key_env names it)")


async def test_an_auth_failure_names_the_variable_the_key_came_from(server, monkeypatch):
    monkeypatch.setenv("TEAM_LLM_KEY", "sk-team")
    failure, _ = await timed(server, error(401, "invalid key"), api_key_env="TEAM_LLM_KEY")
    assert server.authorizations == ["Bearer sk-team"]
    assert failure.endswith(": invalid key (the API key sent came from $TEAM_LLM_KEY; api_key_env "
                            "names the variable to send)")


async def test_an_auth_failure_names_the_unset_variable(server, monkeypatch):
    monkeypatch.delenv("TEAM_LLM_KEY", raising=False)
    failure, _ = await timed(server, error(403, "forbidden"), api_key_env="TEAM_LLM_KEY")
    assert failure.endswith(": forbidden (no API key was sent: $TEAM_LLM_KEY, which api_key_env "
                            "names, is not set)")


async def test_other_client_errors_carry_no_key_note(server):
    failure, _ = await timed(server, error(404, "no such model"))
    assert failure.endswith(": no such model")
