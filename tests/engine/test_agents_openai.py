"""The OpenAI-compatible adapter against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lockgate.engine.agents import OpenAIAgent, Task
from lockgate.errors import AgentUnavailable

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}},
          "required": ["title"], "additionalProperties": False}


def completion(content: str, *, model: str = "tiny-model", finish: str = "stop") -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}}


class ChatServer:
    """A chat-completions endpoint replaying queued replies and recording every request."""

    def __init__(self) -> None:
        self.replies: deque = deque()
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                length = int(self.headers.get("content-length", 0))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.headers.append(dict(self.headers))
                reply = server.replies.popleft() if server.replies else (500, {"error": "empty"})
                if reply == "hang":
                    server.release.wait(30)
                    return
                status, body, *extra = reply
                headers = extra[0] if extra else {}
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
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

    def user_message(self, index: int = -1) -> str:
        return self.requests[index]["messages"][-1]["content"]


@pytest.fixture
def server():
    chat = ChatServer()
    chat.thread.start()
    yield chat
    chat.release.set()
    chat.httpd.shutdown()
    chat.httpd.server_close()


def agent(server: ChatServer, **kw) -> OpenAIAgent:
    return OpenAIAgent("reviewer", model="tiny-model", base_url=server.base_url, backoff=0, **kw)


def task(**kw) -> Task:
    base = dict(run_id="r", step_id="draft", prompt="Draft a title", agent="reviewer",
                contract="Draft", schema=SCHEMA)
    base.update(kw)
    return Task(**base)


async def test_structured_output_from_the_contract_schema(server):
    server.replies.append((200, completion('{"title": "Hello"}')))
    result = await agent(server).execute(task())
    assert result.ok and result.output == {"title": "Hello"}
    assert result.usage.tokens == 17 and result.telemetry.model == "tiny-model"
    body = server.requests[0]
    assert body["model"] == "tiny-model"
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Draft", "schema": SCHEMA, "strict": True}}
    assert server.user_message() == "Draft a title"
    assert "authorization" not in {k.lower() for k in server.headers[0]}


async def test_optional_fields_send_the_schema_non_strict(server):
    loose = {"type": "object", "properties": {"title": {"type": "string"},
                                              "note": {"type": "string"}},
             "required": ["title"], "additionalProperties": False}
    server.replies.append((200, completion('{"title": "x"}')))
    await agent(server).execute(task(schema=loose))
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is False


async def test_retry_carries_the_previous_violations_into_the_prompt(server):
    server.replies.append((200, completion('{"title": "Better"}')))
    retry = task(attempt=2, violations=({"path": "result.title", "message": "too long"},),
                 previous_failure=None)
    result = await agent(server).execute(retry)
    assert result.output == {"title": "Better"}
    prompt = server.user_message()
    assert prompt.startswith("Draft a title")
    assert "previous attempt (attempt 1) was rejected" in prompt
    assert "- result.title: too long" in prompt


async def test_server_error_then_success_is_retried(server):
    server.replies.extend([(500, {"error": {"message": "overloaded"}}),
                           (429, {"error": {"message": "slow down"}}, {"retry-after": "0"}),
                           (200, completion('{"title": "ok"}'))])
    result = await agent(server).execute(task())
    assert result.output == {"title": "ok"}
    assert len(server.requests) == 3


async def test_retries_are_bounded(server):
    server.replies.extend([(503, {"error": {"message": "down for maintenance"}})] * 5)
    result = await agent(server, max_retries=2).execute(task())
    assert len(server.requests) == 3
    assert "HTTP 503" in result.failure and "after 2 retries" in result.failure
    assert "down for maintenance" in result.failure


async def test_client_error_is_a_failure_with_the_server_message(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.replies.append((401, {"error": {"message": "Incorrect API key provided"}}))
    result = await agent(server).execute(task())
    assert len(server.requests) == 1
    assert result.failure == (f"agent 'reviewer': HTTP 401 from {server.base_url}/chat/completions"
                              ": Incorrect API key provided (no API key was sent: set api_key_env "
                              "to the environment variable that holds this server's key)")


async def test_rejected_json_schema_falls_back_to_json_object(server):
    server.replies.extend([
        (400, {"error": {"message": "response_format json_schema is not supported"}}),
        (200, completion('{"title": "fallback"}')),
        (200, completion('{"title": "again"}'))])
    reviewer = agent(server)
    result = await reviewer.execute(task())
    assert result.output == {"title": "fallback"}
    assert server.requests[1]["response_format"] == {"type": "json_object"}
    assert '"title"' in server.user_message(1) and "JSON Schema" in server.user_message(1)
    await reviewer.execute(task())
    assert len(server.requests) == 3
    assert server.requests[2]["response_format"] == {"type": "json_object"}


async def test_prose_is_never_cleaned_into_json(server):
    server.replies.append((200, completion('Sure! {"title": "x"}')))
    result = await agent(server).execute(task())
    assert "the model's answer is not JSON" in result.failure and "Sure!" in result.failure


async def test_truncated_answer_is_a_failure(server):
    server.replies.append((200, completion('{"title": "x', finish="length")))
    result = await agent(server).execute(task())
    assert "cut off" in result.failure


async def test_request_timeout(server):
    server.replies.append("hang")
    result = await agent(server, timeout=0.3).execute(task())
    assert "gave up after 0.3 s (the 0.3 s timeout): no complete answer from" in result.failure


async def test_task_timeout_bounds_the_whole_call(server):
    server.replies.append("hang")
    result = await agent(server, timeout=30).execute(task(timeout=0.3))
    assert "no answer" in result.failure and "0.3s" in result.failure


async def test_unreachable_server_after_retries():
    unreachable = OpenAIAgent("reviewer", model="m", base_url="http://127.0.0.1:9/v1",
                              backoff=0, max_retries=1)
    result = await unreachable.execute(task())
    assert "cannot reach http://127.0.0.1:9/v1/chat/completions" in result.failure


async def test_api_key_from_the_configured_variable(server, monkeypatch):
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-test")
    server.replies.append((200, completion('{"title": "k"}')))
    reviewer = agent(server, api_key_env="LOCAL_LLM_KEY")
    reviewer.preflight()
    await reviewer.execute(task())
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_preflight_names_the_missing_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AgentUnavailable, match="OPENAI_API_KEY"):
        OpenAIAgent("gpt", model="gpt-4o-mini").preflight()
    OpenAIAgent("local", model="llama3", base_url="http://127.0.0.1:11434/v1").preflight()


async def test_without_a_contract_json_object_is_requested(server):
    server.replies.append((200, completion('["a", "b"]')))
    result = await agent(server).execute(task(schema=None, contract=None))
    assert result.output == ["a", "b"]
    assert server.requests[0]["response_format"] == {"type": "json_object"}
