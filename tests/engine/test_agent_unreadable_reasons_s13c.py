"""Why an agent's answer could not be read, said in the user's terms (review s13b F8): a number
of more digits than Python converts is "an integer has more than 4,300 digits", not Python's
advice to call sys.set_int_max_str_digits(); and an ``openai`` agent whose answer is JSON nested
too deeply says so, as the command agent does, instead of calling it "not JSON". A real command
subprocess and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from agent_support import write_script

from lockgate.engine.agents import CommandAgent, OpenAIAgent, Task

DIGITS = sys.get_int_max_str_digits()
HUGE_INT = '{"title": "t", "n": ' + "9" * (DIGITS + 700) + "}"
DEEP = '{"title": "t", "d": ' + "[" * 5000 + "]" * 5000 + "}"
TOO_MANY_DIGITS = f"an integer has more than {DIGITS:,} digits, too many to read"


def task() -> Task:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    return Task(run_id="r", step_id="draft", prompt="Draft", agent="writer", contract="Draft", schema=schema)


async def test_a_command_printing_a_huge_integer_is_told_in_its_terms(tmp_path):
    script = write_script(tmp_path, "agent.py", f"import sys; sys.stdout.write({HUGE_INT!r})\n")
    result = await CommandAgent("writer", [sys.executable, str(script)]).execute(task())
    assert f"did not print JSON on stdout ({TOO_MANY_DIGITS}): " in result.failure
    assert "sys.set_int_max_str_digits" not in result.failure


class _Answers(BaseHTTPRequestHandler):
    """A chat-completions endpoint answering with the model content the server was given."""

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"role": "assistant",
                                                                  "content": self.server.answer}}]})
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("answer, reason", ids=["deep", "huge-integer", "prose"], argvalues=[
    (DEEP, "nested too deeply to parse"),
    (HUGE_INT, TOO_MANY_DIGITS),
    ("Sure! here it is", "Expecting value at line 1 column 1"),
])
async def test_an_openai_answer_that_cannot_be_read_says_why(server, answer, reason):
    server.answer = answer
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    agent = OpenAIAgent("writer", model="m", base_url=url, max_retries=0, backoff=0)
    result = await agent.execute(task())
    assert result.failure.startswith(f"agent 'writer': the model's answer is not JSON ({reason}): ")
    assert "sys.set_int_max_str_digits" not in result.failure
