"""A fanout item's stage result settles its usage as a ``do`` step's result does (semantics
§6.4 steps 2-4, §6.8 "the same settlement kernel"): reported ``dispatches`` fail the attempt,
the other keys still count (§8.18), and an invalid usage records nothing. An item used to
succeed with its ``dispatches`` silently dropped (review s11, finding 3)."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import Script, Usage, drive
from specs import fan_spec, note_flow

from lockgate.engine import Engine

ENGINE_ACCOUNTED = "dispatches are engine-accounted; do not report them in usage (other keys were recorded)"
STEP = note_flow("""      - id: a
        do: "write"
        out: Note
""", output="a")


def _first_item(engine: Engine, dispatch: str) -> dict[str, Any]:
    """The first dispatch of ``fan/0`` in a one-item fanout of ``dispatch`` (``engine``: the
    items are handed to the caller, who runs them, as the runner and MCP clients do)."""
    first = engine.plan(fan_spec(dispatch=dispatch), {"words": ["a"]})
    assert first["step_id"] == "fan/0" and first["dispatch"] == dispatch
    return first


def _debits(engine: Engine, run: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e["step_id"], e["detail"]["usage"]) for e in engine.audit(run)["events"] if e["type"] == "usage_debit"]


@pytest.mark.parametrize("dispatch", ["consumer", "engine"])
def test_an_item_reporting_dispatches_fails_the_attempt_and_its_other_keys_count(dispatch: str) -> None:
    engine = Engine()
    first = _first_item(engine, dispatch)
    run = first["run_id"]
    retry = engine.step_done(run, "fan/0", {"word": "a"}, first["token"], usage={"usd": 0.5, "dispatches": 2})
    assert retry["status"] == "schema_failed" and retry["step_id"] == "fan/0" and retry["attempt"] == 2
    assert retry["failed_step"] == "fan/0" and retry["failure"]["kind"] == "usage"
    assert retry["failure"]["reason"] == ENGINE_ACCOUNTED
    assert retry["violations"] == [{"path": "usage.dispatches", "message": ENGINE_ACCOUNTED}]
    assert retry["previous_failure"] == retry["failure"]
    assert _debits(engine, run) == [("fan/0", {"usd": 0.5})]  # recorded, dispatches left out
    item = {t["step_id"]: t for t in engine.audit(run)["trace"]}["fan/0"]
    assert item["status"] == "ready" and item["failure"]["reason"] == ENGINE_ACCOUNTED

    done = engine.step_done(run, "fan/0", {"word": "a"}, retry["token"], usage={"usd": 0.25})
    assert done["status"] == "complete"
    assert engine.audit(run)["spent"] == {"dispatches": 2, "usd": 0.75}  # the engine's count: two dispatches


def test_the_item_fails_as_a_do_step_does() -> None:
    """One check decides both: the same failure, but for where it happened."""
    engine = Engine()
    step = engine.plan(STEP, {})
    step_retry = engine.step_done(step["run_id"], "a", {"text": "t"}, step["token"], usage={"tokens": 3, "dispatches": 1})
    item = _first_item(engine, "consumer")
    item_retry = engine.step_done(item["run_id"], "fan/0", {"word": "a"}, item["token"],
                                  usage={"tokens": 3, "dispatches": 1})
    assert step_retry["status"] == item_retry["status"] == "schema_failed"
    assert {k: v for k, v in item_retry["failure"].items() if k not in ("stage", "attempt")} == \
        {k: v for k, v in step_retry["failure"].items() if k != "attempt"}
    spent = {"dispatches": 2, "tokens": 3}  # the tokens recorded; the first dispatch and its retry counted
    assert engine.audit(step["run_id"])["spent"] == engine.audit(item["run_id"])["spent"] == spent


def test_reported_dispatches_fail_the_attempt_before_the_agents_own_failure_is_read() -> None:
    """Semantics §6.4: settle the usage (3), reported dispatches (4), then the reported failure (5)."""
    engine = Engine()
    first = _first_item(engine, "consumer")
    retry = engine.step_done(first["run_id"], "fan/0", None, first["token"], failure="gave up",
                             usage={"tokens": 7, "dispatches": 1})
    assert retry["failure"]["reason"] == ENGINE_ACCOUNTED
    assert engine.audit(first["run_id"])["spent"]["tokens"] == 7


def test_an_item_reporting_invalid_usage_records_none_of_it() -> None:
    engine = Engine()
    first = _first_item(engine, "consumer")
    run = first["run_id"]
    retry = engine.step_done(run, "fan/0", {"word": "a"}, first["token"], usage={"usd": 1, "ms": -5})
    assert retry["status"] == "schema_failed" and retry["failure"]["kind"] == "usage"
    assert retry["failure"]["reason"].startswith("invalid usage (nothing recorded): usage ms must be")
    assert retry["violations"] == [{"path": "usage.ms", "message": retry["failure"]["reason"]}]
    assert _debits(engine, run) == [] and "usd" not in engine.audit(run)["spent"]


def test_items_that_report_dispatches_every_time_exhaust_their_attempts(backend) -> None:
    """Through a store: the failure (with its violation) is kept, and require fails the fanout."""
    engine = Engine(store=backend.open())
    run = engine.plan(fan_spec(), {"words": ["a", "b"]})["run_id"]
    done = drive(engine, run, Script({"fan/*": lambda e: Usage({"word": e["item"]}, {"dispatches": 1})}))
    assert done["status"] == "error" and "fanout require all not met (0/2 succeeded)" in done["message"]
    again = Engine(store=backend.open())
    trace = {t["step_id"]: t for t in again.audit(run)["trace"]}
    assert trace["fan/1"]["status"] == "failed" and trace["fan/1"]["failure"]["reason"] == ENGINE_ACCOUNTED
    assert trace["fan/1"]["failure"]["violations"][0]["path"] == "usage.dispatches"

