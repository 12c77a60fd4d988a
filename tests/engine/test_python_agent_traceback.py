"""A Python agent that raises: its failure is the exception (the first line, what a retry is
told), then where in the agent's own code it was raised (the last frames, bounded, the
runner's own frames left out), kept in the attempt's failure in the audit record."""

from __future__ import annotations

import asyncio

from lockgate import run_sync
from lockgate.engine.agents import PythonAgent, Task
from lockgate.engine.agents.python import MAX_FRAMES, MAX_LINE
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s.output}", contract: Note}
    steps:
      - {id: s, agent: a, do: "x", out: Note}
"""


def parse(reply: dict) -> dict:
    return {"text": reply["score"]}


def buggy(task: Task) -> dict:
    return parse({"text": "ok"})


async def test_the_failure_says_where_in_the_agents_code_it_was_raised() -> None:
    for fn in (buggy, _async_buggy):
        failure = (await PythonAgent("a", fn).execute(Task("r", "s", "p"))).failure
        first, header, *frames = failure.split("\n")
        assert first == "KeyError: 'score'"
        assert header == "Traceback (the agent's frames, most recent call last):"
        text = "\n".join(frames)
        assert f"in {fn.__name__}" in text and "in parse" in text and 'reply["score"]' in text
        assert "lockgate/engine" not in text  # the runner's frames (threads, the adapter) are left out


async def _async_buggy(task: Task) -> dict:
    await asyncio.sleep(0)
    return parse({})


async def test_only_the_last_frames_are_kept_and_long_lines_are_cut() -> None:
    def bottom() -> None:
        raise ValueError("x" * 10 + "; " + "y" * (MAX_LINE * 2))

    chain = bottom
    for depth in range(MAX_FRAMES * 3):  # frames of distinct functions (repeated ones are folded)
        chain = _calling(chain, f"level_{depth}")

    def agent(task: Task) -> dict:
        chain()
        return {}

    failure = (await PythonAgent("a", agent).execute(Task("r", "s", "p"))).failure
    lines = failure.split("\n")
    assert lines[1] == (f"Traceback (the agent's frames, the last {MAX_FRAMES} of {MAX_FRAMES * 3 + 2}, "
                        "most recent call last):")
    assert sum(1 for line in lines if line.startswith("  File ")) == MAX_FRAMES
    assert all(len(line) <= MAX_LINE + 4 for line in lines[1:])


def _calling(inner, name: str):
    """A function named ``name`` calling ``inner`` (a frame of its own in a traceback)."""
    def call() -> None:
        inner()

    call.__code__ = call.__code__.replace(co_name=name)
    return call


def test_the_audit_keeps_the_traceback_of_the_attempts_failure() -> None:
    store = open_store("memory")
    result = run_sync(SPEC, {}, agents={"a": buggy}, store=store)
    assert result.status == "error"
    assert result.response["message"].startswith("agent reported failure: KeyError: 'score'\nTraceback")
    from lockgate.engine.engine import Engine

    failures = [e["detail"]["failure"]["reason"] for e in Engine(store=store).audit(result.run_id)["events"]
                if e["type"] == "result" and "failure" in e["detail"]]
    assert failures and all("in parse" in f and 'reply["score"]' in f for f in failures)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


def test_an_exception_whose_str_raises_is_still_the_steps_failure() -> None:
    def raises(task: Task) -> dict:
        raise _Unprintable()

    result = run_sync(SPEC, {}, agents={"a": raises}, store=open_store("memory"))
    assert result.status == "error"  # it crashed the drive, the run left running
    assert result.response["message"].startswith("agent reported failure: _Unprintable: <str() of it raised "
                                                  "RuntimeError>\nTraceback (the agent's frames")


def test_an_agent_file_whose_name_is_not_utf8_keeps_the_agents_error(tmp_path) -> None:
    import importlib.util
    import os

    path = os.path.join(os.fsencode(tmp_path), b"agent_\xff.py")
    with open(path, "wb") as file:
        file.write(b"def fn(task):\n    raise ValueError('boom')\n")
    spec = importlib.util.spec_from_file_location("agent_not_utf8", os.fsdecode(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = run_sync(SPEC, {}, agents={"a": module.fn}, store=open_store("memory"))
    message = result.response["message"]  # it was "the result cannot be stored: ... lone surrogate"
    assert message.startswith("agent reported failure: ValueError: boom\n"), message
    assert "agent_\\udcff.py" in message


def test_a_message_holding_a_file_name_that_is_not_utf8_is_kept_escaped() -> None:
    import os

    def raises(task: Task) -> dict:
        raise ValueError(f"no input file {os.fsdecode(b'caf' + bytes([0xE9]) + b'.txt')}")

    result = run_sync(SPEC, {}, agents={"a": raises}, store=open_store("memory"))
    message = result.response["message"]  # it was "the result cannot be stored: ... lone surrogate"
    assert message.startswith("agent reported failure: ValueError: no input file caf\\udce9.txt\n"), message


def test_a_failure_text_no_store_keeps_is_mended_not_lost(tmp_path) -> None:
    from lockgate.engine.agents import AgentResult

    def nul(task: Task) -> dict:
        raise ValueError("bad byte \x00 here")

    def reported(task: Task) -> AgentResult:
        return AgentResult.failed("lone \udcff surrogate")

    for agent, shown in ((nul, "ValueError: bad byte \ufffd here"), (reported, "lone \ufffd surrogate")):
        result = run_sync(SPEC, {}, agents={"a": agent}, store=open_store(tmp_path / f"{agent.__name__}.db"))
        assert result.response["message"].startswith(f"agent reported failure: {shown}"), result.response


def load_title(doc: dict) -> str:
    return doc["title"]


def wraps_its_cause(task: Task) -> dict:
    try:
        load_title({})
    except KeyError as exc:
        raise ValueError("no title found") from exc
    return {}


def fails_while_handling(task: Task) -> dict:
    try:
        load_title({})
    except KeyError:
        return {"text": 1 + "x"}  # a bug in the handler itself
    return {}


def hides_its_cause(task: Task) -> dict:
    try:
        load_title({})
    except KeyError:
        raise ValueError("no title found") from None
    return {}


async def test_an_exception_raised_from_another_names_it_and_where_it_was_raised() -> None:
    failure = (await PythonAgent("a", wraps_its_cause).execute(Task("r", "s", "p"))).failure
    message, _, rest = failure.partition("\n")
    assert message == "ValueError: no title found"  # the first line is still what a retry is told
    outer, _, cause = rest.partition("\ncaused by KeyError: 'title'\n")
    assert "in wraps_its_cause" in outer and "from exc" in outer
    assert "in load_title" in cause and 'doc["title"]' in cause


async def test_an_exception_raised_while_handling_another_names_the_one_handled() -> None:
    failure = (await PythonAgent("a", fails_while_handling).execute(Task("r", "s", "p"))).failure
    assert failure.startswith("TypeError: unsupported operand")
    assert "\nraised while handling KeyError: 'title'\n" in failure and "in load_title" in failure


async def test_raise_from_none_shows_no_cause() -> None:
    failure = (await PythonAgent("a", hides_its_cause).execute(Task("r", "s", "p"))).failure
    assert "KeyError" not in failure and "in load_title" not in failure


async def test_a_cycle_of_causes_ends() -> None:
    def cyclic(task: Task) -> dict:
        first, second = ValueError("first"), KeyError("second")
        first.__cause__, second.__cause__ = second, first
        raise first

    failure = (await PythonAgent("a", cyclic).execute(Task("r", "s", "p"))).failure
    assert failure.count("caused by") == 1 and "caused by KeyError: 'second'" in failure
