"""A hostile or careless client: spec paths that are not workspace files, values strict JSON cannot
store, request lines the transport cannot read or whose envelope is invalid, a long argument echoed
by the answers, and a flood of calls waiting for a gate. Each is refused (a tool error, or a JSON-RPC error for an invalid envelope),
the server keeps serving, and the run stays verifiable."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp_support import CHECKED, REVIEWED, connect, lockgate_cli

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.mcp.handlers import ToolContext
from lockgate.mcp.server import MAX_WAITING_CALLS, call_tool
from lockgate.mcp.specfile import MAX_DOCUMENT_CHARS

CALL_TIMEOUT = 20


def _verified(store: Path, run_id: str) -> None:
    checked = lockgate_cli("verify", run_id, "--store", str(store))
    assert checked.returncode == 0 and "intact" in checked.stdout, checked.stdout + checked.stderr


async def test_spec_paths_that_are_not_workspace_files_are_refused_at_once(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside.stratum.yaml").write_text(CHECKED)
    os.mkfifo(work / "pipe.yaml")
    (work / "out.yaml").symlink_to(tmp_path / "outside.stratum.yaml")
    (work / "dir.yaml").mkdir()
    with (work / "huge.yaml").open("wb") as fh:
        fh.truncate(MAX_DOCUMENT_CHARS + 1)
    (work / "good.stratum.yaml").write_text(CHECKED)
    refused = {"pipe.yaml": "not a regular file (a FIFO)", "/dev/zero": "outside the workspace",
               "../outside.stratum.yaml": "outside the workspace", str(tmp_path / "outside.stratum.yaml"):
               "outside the workspace", "out.yaml": "outside the workspace", "dir.yaml": "(a directory)",
               "huge.yaml": f"larger than {MAX_DOCUMENT_CHARS} bytes", "nul\0.yaml": "must not contain NUL"}
    async with connect(tmp_path / "runs.db", work) as s:
        for tool in ("lockgate_validate", "lockgate_plan", "lockgate_graph"):
            for path, words in refused.items():
                with anyio.fail_after(CALL_TIMEOUT):
                    message, data = await s.refused(tool, {"path": path})
                assert data["error_type"] == "invalid_arguments" and words in message, (tool, path, message)
                assert "root:" not in message
        assert (await s.ok("lockgate_runs"))["runs"] == []
        inside = await s.ok("lockgate_plan", {"path": str(work / "good.stratum.yaml"), "inputs": {"topic": "t"}})
        assert inside["status"] == "execute_step"


async def test_a_long_argument_is_written_once_in_the_answers_text_and_kept_whole_in_its_data(tmp_path: Path) -> None:
    topic = "tea " * 250_000
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        with anyio.fail_after(CALL_TIMEOUT):
            planned = await s.raw("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": topic}})
    data, text = planned.structured_content, planned.content[0].text
    task = f"Write a note about {topic}"
    assert data["task"] == data["ready"][0]["task"] == task
    assert data["inputs"] == data["ready"][0]["inputs"] == {"${input.topic}": topic}
    assert text.count(topic) == 1 and len(text) < len(task) + 5_000
    shown = json.loads(text)
    assert shown["task"] == task and {"run_id", "step_id", "token", "output_schema", "ensure"} <= set(shown)
    offset = len("Write a note about ")
    assert shown["inputs"]["${input.topic}"] == (f"[elided: the {len(topic)} code points from code point {offset} "
                                                 "(counting from 0) of `task` above; structuredContent has it in full]")
    assert task[offset:offset + len(topic)] == topic  # a client reading only the text can take it out
    assert shown["ready"][0]["task"] == (f"[elided: {len(task)} characters, the same as `task` above; "
                                         "structuredContent has it in full]")
    assert shown["ready"][0]["inputs"] == "[elided: the same as `inputs` above; structuredContent has it in full]"
    assert {**shown["ready"][0], "task": task, "inputs": data["inputs"]} == data["ready"][0]
    assert {**shown, "inputs": data["inputs"], "ready": data["ready"]} == data
    assert planned.content[-1].text.startswith("Next: do step a")


def test_values_strict_json_cannot_store_are_refused_by_path_and_the_run_stays_usable(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    ctx = ToolContext(Engine(store=open_store(store)), tmp_path)
    try:
        first = call_tool(ctx, "lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}}).structured_content
        run, token = first["run_id"], first["token"]
        bad = [({"text": float("nan")}, None, "argument result.text is nan"),
               ({"text": "long enough"}, {"usd": float("inf")}, "argument usage.usd is inf"),
               ({"text": "ok \ud800 ok"}, None, "argument result.text holds a lone UTF-16 surrogate"),
               ({"\udc00": "x", "text": "long enough"}, None, "argument result has a key with a lone")]
        for result, usage, words in bad:
            args = {"run_id": run, "step_id": "a", "token": token, "result": result}
            if usage is not None:
                args["usage"] = usage
            refused = call_tool(ctx, "lockgate_step_done", args)
            assert refused.is_error and refused.structured_content["error_type"] == "invalid_arguments"
            assert words in refused.content[0].text
            json.dumps(refused.structured_content, ensure_ascii=False).encode("utf-8")
        planned = call_tool(ctx, "lockgate_plan", {"spec": CHECKED, "inputs": {"topic": float("-inf")}})
        assert planned.is_error and "argument inputs.topic is -inf" in planned.content[0].text
        done = call_tool(ctx, "lockgate_step_done", {"run_id": run, "step_id": "a", "token": token,
                                                     "result": {"text": "long enough"}})
        assert not done.is_error and done.structured_content["step_id"] == "b"
        assert len(call_tool(ctx, "lockgate_runs", {}).structured_content["runs"]) == 1
    finally:
        ctx.engine.close()
    _verified(store, run)


class RawClient:
    """A client writing JSON-RPC lines of its own making to `lockgate mcp` (as a careless host may)."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process, self.buffer = process, b""

    async def send(self, line: str) -> None:
        await self.process.stdin.send(line.encode("utf-8") + b"\n")

    async def answer(self, request_id: int | str) -> dict:
        with anyio.fail_after(CALL_TIMEOUT):
            while True:
                message = await self.next_message()
                if message.get("id") == request_id:
                    return message

    async def next_message(self) -> dict:
        """The next message the server writes, whatever it answers."""
        while b"\n" not in self.buffer:
            self.buffer += await self.process.stdout.receive()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def start(self) -> None:
        """The initialize handshake."""
        await self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        assert "result" in await self.answer(0)
        await self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    async def call(self, request_id: int, name: str, arguments: str) -> dict:
        await self.send(f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": '
                        f'{{"name": "{name}", "arguments": {arguments}}}}}')
        return await self.answer(request_id)


async def test_request_lines_the_transport_cannot_read_are_answered_and_serving_goes_on(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    command = [sys.executable, "-m", "lockgate", "mcp", "--store", str(store), "--workspace", str(tmp_path)]
    async with await anyio.open_process(command, cwd=tmp_path) as process:
        client = RawClient(process)
        await client.start()
        planned = await client.call(1, "lockgate_plan", json.dumps({"spec": CHECKED, "inputs": {"topic": "tea"}}))
        first = planned["result"]["structuredContent"]
        done = f'{{"run_id": "{first["run_id"]}", "step_id": "a", "token": "{first["token"]}", "result": %s}}'
        unreadable = {2: (done % ('{"text": ' + "[" * 10_000 + "]" * 10_000 + "}"), "nests deeper"),
                      3: (done % '{"text": "a\\ud800b"}', "surrogate"),
                      4: (done % '{"\\udc00": "a"}', "lone UTF-16 surrogate")}
        for request_id, (arguments, words) in unreadable.items():
            answered = await client.call(request_id, "lockgate_step_done", arguments)
            assert answered["result"]["isError"] is True, answered
            assert answered["result"]["structuredContent"]["error_type"] == "invalid_arguments"
            assert words in answered["result"]["content"][0]["text"]
        await client.send('{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"x": "\\ud800"}}')
        assert (await client.answer(5))["error"]["code"] == -32700
        accepted = await client.call(6, "lockgate_step_done", done % '{"text": "long enough"}')
        assert accepted["result"]["structuredContent"]["step_id"] == "b"
        await process.stdin.aclose()
        with anyio.fail_after(CALL_TIMEOUT):
            assert await process.wait() == 0
    _verified(store, first["run_id"])


# requests whose JSON parses but whose envelope is no valid request, each with a usable id:
# (line, the error code answering it, words of its message)
INVALID_ENVELOPES = [
    ('{"jsonrpc": "2.0", "id": "p1", "method": "tools/call", "params": "lockgate_runs"}', -32602,
     '`params` must be an object of named parameters, not "lockgate_runs"'),
    ('{"jsonrpc": "2.0", "id": "p2", "method": "tools/call", "params": ["lockgate_runs", {}]}', -32602,
     "`params` must be an object of named parameters, not an array"),
    ('{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": true}', -32602, "not a boolean"),
    ('{"id": "p4", "method": "tools/list"}', -32600, '`jsonrpc` must be "2.0", but it is missing'),
    ('{"jsonrpc": "1.0", "id": "p5", "method": "tools/list"}', -32600, '`jsonrpc` must be "2.0", not "1.0"'),
    ('{"jsonrpc": "2.0", "id": "p6", "method": 5}', -32600, "`method` must be a string, not a number"),
    ('{"jsonrpc": "2.0", "id": "p7"}', -32600, "`method` must be a string, but it is missing"),
    ('{"id": "p8", "method": null, "params": "x"}', -32600, "`jsonrpc` must be"),
    ('[{"jsonrpc": "2.0", "id": "p9", "method": "tools/list"}, {"jsonrpc": "2.0", "method": "notifications/x"}]',
     -32600, "a batch (a JSON array of messages) is not supported"),
]
# lines JSON-RPC answers with nothing: notifications, responses, requests without a usable id
UNANSWERED = ['{"jsonrpc": "2.0", "method": "tools/list", "params": "x"}', '{"jsonrpc": "1.0", "method": "x"}',
              '{"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": "x"}',
              '{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list", "params": "x"}',
              '{"jsonrpc": "2.0", "id": true, "method": 5}', '{"jsonrpc": "2.0", "id": 7, "result": 5}',
              '{"jsonrpc": "2.0", "id": "s\\ud800", "method": "tools/list"}', "[1, 2]", '"x"', "null", "{"]


async def test_requests_with_an_invalid_envelope_are_answered_by_id_and_others_get_no_answer(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "lockgate", "mcp", "--store", str(tmp_path / "runs.db"),
               "--workspace", str(tmp_path)]
    async with await anyio.open_process(command, cwd=tmp_path) as process:
        client = RawClient(process)
        await client.start()
        for line, code, words in INVALID_ENVELOPES:
            await client.send(line)
            with anyio.fail_after(CALL_TIMEOUT):
                error = (await client.next_message())["error"]
            assert error["code"] == code and words in error["message"], (line, error)
        for number, line in enumerate(UNANSWERED):
            await client.send(line)
            await client.send(json.dumps({"jsonrpc": "2.0", "id": f"ping{number}", "method": "ping"}))
            with anyio.fail_after(CALL_TIMEOUT):
                assert (await client.next_message()) == {"jsonrpc": "2.0", "id": f"ping{number}", "result": {}}, line
        listed = await client.call(10, "lockgate_runs", "{}")
        assert listed["result"]["structuredContent"]["runs"] == []
        await process.stdin.aclose()
        with anyio.fail_after(CALL_TIMEOUT):
            assert await process.wait() == 0


async def test_many_calls_waiting_for_a_gate_do_not_stall_other_tools(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    waiting = MAX_WAITING_CALLS * 5
    async with connect(store, tmp_path) as s:
        work = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
        gate = await s.ok("lockgate_step_done", {"run_id": work["run_id"], "step_id": "work", "token": work["token"],
                                                 "result": {"result": "done", "quality_score": 0.9}})
        assert gate["status"] == "await_gate"
        answers: list[str] = []

        async def wait_for_decision() -> None:
            answers.append((await s.ok("lockgate_status", {"run_id": gate["run_id"], "wait_seconds": 300}))["status"])

        async with anyio.create_task_group() as group:
            for _ in range(waiting):
                group.start_soon(wait_for_decision)
            await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(CALL_TIMEOUT):
                assert len((await s.ok("lockgate_runs"))["runs"]) == 1
                assert (await s.ok("lockgate_audit", {"run_id": gate["run_id"]}))["status"] == "running"
            approved = await anyio.to_thread.run_sync(
                lambda: lockgate_cli("gate", "approve", gate["run_id"], "review", "--store", str(store)))
            assert approved.returncode == 0, approved.stderr
        assert answers == ["complete"] * waiting
    _verified(store, gate["run_id"])
