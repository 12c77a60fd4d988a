"""Size limits on what callers hand the engine: a result longer than ``MAX_RESULT_BYTES`` of
JSON is the agent's wrong answer (a schema failure, retried with the violation, nothing of it
kept), on the consumer protocol, through the runner and over MCP; a reported failure is kept cut
to its limit; a gate decision's rationale and decider over theirs are refused, naming them.

The boundary is tested with the limits patched small; one test per path runs at the real size."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from specs import REVIEWED, fan_spec

from lockgate.cli import main
from lockgate.engine import Engine, textargs
from lockgate.engine.agents.process import MAX_STDOUT
from lockgate.engine.runner import run, run_sync
from lockgate.engine.store import open_store
from lockgate.errors import EngineError

MIB = 1024 * 1024

LOOSE = """
version: 1
contracts:
  T:
    t: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${work.output}"
      contract: T
    steps:
      - id: work
        do: "anything"
        out: T
        attempts: 2
"""


@pytest.fixture(params=["memory", "sqlite"])
def engine(request, tmp_path):
    engine = Engine(store=open_store("memory" if request.param == "memory" else tmp_path / "s.db"))
    yield engine
    engine.close()


def _stored_text(engine: Engine, run_id: str) -> str:
    return json.dumps([engine.status(run_id), engine.audit(run_id)])


@pytest.mark.parametrize(("char", "width"), [("x", 1), ("é", 2), ("€", 3), ("\U0001f600", 4), ("\n", 2)])
def test_a_result_of_exactly_the_limit_passes(engine: Engine, monkeypatch, char, width) -> None:
    """UTF-8 bytes count, not characters (a control character is the 2 bytes of its escape)."""
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", 8 + 120 * width)
    first = engine.plan(LOOSE, {})
    done = engine.step_done(first["run_id"], "work", {"t": char * 120}, first["token"])
    assert done["status"] == "complete"


@pytest.mark.parametrize("char", ["x", "é", "\U0001f600"])
def test_one_byte_over_the_limit_is_a_schema_failure_retried_and_not_kept(engine: Engine, monkeypatch,
                                                                          char) -> None:
    width = len(char.encode())
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", 8 + 100 * width - 1)
    first = engine.plan(LOOSE, {})
    retry = engine.step_done(first["run_id"], "work", {"t": char * 100}, first["token"])
    assert retry["status"] == "schema_failed" and retry["retries_remaining"] == 0
    (violation,) = retry["violations"]
    assert violation["path"] == "result"
    assert f"{8 + 100 * width} bytes in UTF-8" in violation["message"]
    assert f"at most {8 + 100 * width - 1}" in violation["message"]
    assert "write large outputs to a file in the workspace and return its path" in violation["message"]
    assert char * 100 not in _stored_text(engine, first["run_id"])
    done = engine.step_done(first["run_id"], "work", {"t": "small"}, retry["token"])
    assert done["status"] == "complete"
    assert engine.verify(first["run_id"])["ok"]


def test_a_result_over_the_limit_is_told_its_size(engine: Engine, monkeypatch) -> None:
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", 1000)
    first = engine.plan(LOOSE, {})
    retry = engine.step_done(first["run_id"], "work", {"t": ["y" * 600, "z" * 600]}, first["token"])
    assert retry["status"] == "schema_failed"
    assert "its JSON text is 1213 bytes in UTF-8" in retry["violations"][0]["message"]


def test_a_result_that_contains_itself_is_refused_at_once(engine: Engine) -> None:
    """A cycle (a Python agent's bug) is no JSON: refused as such at once, as the store refuses
    it; an earlier size check walked it for minutes (exponentially: a list holding itself twice)."""
    first = engine.plan(LOOSE, {})
    looped: list = []
    looped += [looped, looped]
    assert textargs.oversize_result({"t": looped}) is None
    retry = engine.step_done(first["run_id"], "work", {"t": looped}, first["token"])
    assert retry["status"] == "schema_failed"
    assert retry["failure"]["reason"].startswith("the result cannot be stored")


def test_sizes_of_nested_values_are_exact_at_the_boundary(monkeypatch) -> None:
    value = {"a": [1, -2.5e-300, True, None, {"b": "é\u0001", "7": [[], {}]}], "c": 10**40, "d": False}
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", size)
    assert textargs.oversize_result(value) is None
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", size - 1)
    assert f"is {size} bytes" in textargs.oversize_result(value)["reason"]


def test_an_oversize_fanout_item_result_fails_that_item_attempt(engine: Engine, monkeypatch) -> None:
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", 100)
    first = engine.plan(fan_spec(concurrency=1), {"words": ["a"]})
    retry = engine.step_done(first["run_id"], "fan/0", {"word": "a" * 200}, first["token"])
    (entry,) = retry["ready"]
    assert entry["step_id"] == "fan/0" and entry["attempt"] == 2
    assert entry["previous_failure"]["reason"].startswith("the result is too large: ")
    assert "a" * 200 not in _stored_text(engine, first["run_id"])
    done = engine.step_done(first["run_id"], "fan/0", {"word": "a"}, entry["token"])
    assert done["status"] == "complete"


def test_a_command_reads_no_more_stdout_than_a_result_may_be_long() -> None:
    assert MAX_STDOUT == textargs.MAX_RESULT_BYTES == 32 * MIB


async def test_a_python_agent_result_over_32_mib_is_retried_with_the_violation_and_not_stored(tmp_path) -> None:
    seen = []

    def agent(task):
        seen.append((task.attempt, task.previous_failure, task.violations))
        return {"t": "x" * (32 * MIB)} if task.attempt == 1 else {"t": "small"}

    store = tmp_path / "runs.db"
    result = await run(LOOSE, {}, agents={"claude": agent}, store=str(store))
    assert result.ok, result
    (first_try, retry) = seen
    assert first_try == (1, None, ())
    attempt, reason, (violation,) = retry
    assert attempt == 2 and reason.startswith("the result is too large: its JSON text is 33554440 bytes")
    assert violation["path"] == "result" and "at most 33554432 (32 MiB)" in violation["message"]
    stored = sum(f.stat().st_size for f in tmp_path.iterdir())
    assert stored < 2 * MIB, f"the store holds {stored} bytes"
    with sqlite3.connect(store) as db:
        assert db.execute("select count(*) from events where detail like '%xxxxxxxxxx%'").fetchone() == (0,)


def test_a_long_reported_failure_is_kept_cut_saying_so(engine: Engine, monkeypatch) -> None:
    monkeypatch.setattr(textargs, "MAX_FAILURE_BYTES", 100)
    first = engine.plan(LOOSE, {})
    kept = engine.step_done(first["run_id"], "work", None, first["token"], failure="é" * 50)
    assert kept["failure"]["reason"] == "agent reported failure: " + "é" * 50
    cut = engine.step_done(first["run_id"], "work", None, kept["token"], failure="é" * 51)
    note = " ... [cut: the failure text was 102 bytes long in UTF-8; the first 20 are kept]"
    assert cut["status"] == "error" and cut["message"] == "agent reported failure: " + "é" * 10 + note
    assert len(("é" * 10 + note).encode()) <= 100


def test_a_failure_cut_once_is_kept_as_it_is_when_reported_again(monkeypatch) -> None:
    """A failure held while a judge is asked is reported again on resume: cutting it again must
    not restate its size as that of the cut text."""
    for limit in (100, textargs.MAX_FAILURE_BYTES):
        monkeypatch.setattr(textargs, "MAX_FAILURE_BYTES", limit)
        once = textargs.reported_failure("x" * 200_000)
        assert len(once.encode()) <= limit and "was 200000 bytes long" in once
        assert textargs.reported_failure(once) == once


def test_a_failure_over_the_real_limit_through_the_runner_fails_the_attempt_not_the_run() -> None:
    """An agent's exception message is its failure: cut, it fails the attempt, and the retry
    is told what was kept."""
    told = []

    def agent(task):
        if task.attempt == 1:
            raise ValueError("v" * MIB)
        told.append(task.previous_failure)
        return {"t": "fine"}

    result = run_sync(LOOSE, {}, agents={"claude": agent}, store="memory")
    assert result.ok, result
    (reason,) = told
    assert reason.startswith("agent reported failure: ValueError: vvv")
    assert f"[cut: the failure text was {MIB + 12} bytes long in UTF-8; the first " in reason
    assert len(reason.encode()) <= len("agent reported failure: ") + 65536


JUDGED = LOOSE.replace("        attempts: 2\n", "        attempts: 2\n        ensure:\n"
                       "          - judged: {statement: \"the work is done\"}\n")


def test_an_oversize_result_is_neither_held_nor_judged(monkeypatch) -> None:
    """A spec that may ask a judge holds a result before checking it; one too large is failed
    at once instead, asking no judge."""
    monkeypatch.setattr(textargs, "MAX_RESULT_BYTES", 100)
    asked = []
    engine = Engine(judge=lambda statement, stakes, result, input: asked.append(result) or {"holds": True})
    first = engine.plan(JUDGED, {})
    written = []
    save = engine.store.save_run

    def saving(run_id, **records):
        written.append(json.dumps(records))
        return save(run_id, **records)

    monkeypatch.setattr(engine.store, "save_run", saving)
    retry = engine.step_done(first["run_id"], "work", {"t": "j" * 200}, first["token"])
    assert retry["status"] == "schema_failed" and asked == []
    assert written and not any("j" * 200 in text for text in written)
    done = engine.step_done(first["run_id"], "work", {"t": "j"}, retry["token"])
    assert done["status"] == "complete" and asked == [{"t": "j"}]


def _at_gate(engine: Engine) -> tuple[str, str]:
    first = engine.plan(REVIEWED, {"text": "t"})
    waiting = engine.step_done(first["run_id"], "work", {"result": "r"}, first["token"])
    (gate,) = waiting["gates"]
    return first["run_id"], gate["token"]


@pytest.mark.parametrize(("argument", "limit", "name"), [("rationale", 64 * 1024, "the decision's rationale"),
                                                         ("resolved_by", 1000, "who decided (resolved_by)")])
def test_a_gate_decision_text_over_its_limit_is_refused_naming_it(engine: Engine, argument, limit, name) -> None:
    run_id, token = _at_gate(engine)
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(run_id, "review", "approve", token=token, **{argument: "é" * (limit // 2) + "x"})
    assert refused.value.error_type == "invalid_arguments"
    assert str(refused.value) == f"{name} is {limit + 1} bytes long in UTF-8; it may have at most {limit}"
    assert engine.status(run_id)["gates"][0]["token"] == token  # nothing changed
    done = engine.gate_resolve(run_id, "review", "approve", token=token, **{argument: "é" * (limit // 2)})
    assert done["status"] == "complete"


def test_the_cli_refuses_a_gate_note_over_the_limit(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    store = str(tmp_path / "runs.db")
    engine = Engine(store=open_store(store))
    run_id, _ = _at_gate(engine)
    engine.close()
    runner = CliRunner()
    refused = runner.invoke(main, ["gate", "approve", run_id, "review", "--note", "n" * (64 * 1024 + 1),
                                   "--store", store])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == ("error: the decision's rationale is 65537 bytes long in UTF-8; "
                                      "it may have at most 65536")
    approved = runner.invoke(main, ["gate", "approve", run_id, "review", "--note", "n" * (64 * 1024),
                                    "--store", store])
    assert approved.exit_code == 0, approved.stderr


def _mcp_support():
    """tests/mcp/mcp_support.py (its folder is on the import path only for the tests in it)."""
    path = Path(__file__).parents[1] / "mcp" / "mcp_support.py"
    spec = importlib.util.spec_from_file_location("mcp_support", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_an_mcp_client_reporting_an_oversize_result_gets_schema_failed(tmp_path) -> None:
    support = _mcp_support()
    async with support.connect(tmp_path / "runs.db", tmp_path) as session:
        first = await session.ok("lockgate_plan", {"spec": support.CHECKED, "inputs": {"topic": "t"}})
        retry = await session.ok("lockgate_step_done", {"run_id": first["run_id"], "step_id": "a",
                                                        "token": first["token"],
                                                        "result": {"text": "m" * (32 * MIB)}})
        assert retry["status"] == "schema_failed"
        assert "its JSON text is 33554443 bytes in UTF-8" in retry["violations"][0]["message"]
        done = await session.ok("lockgate_step_done", {"run_id": first["run_id"], "step_id": "a",
                                                       "token": retry["token"], "result": {"text": "short"}})
        assert done["status"] == "execute_step"
