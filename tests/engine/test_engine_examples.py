"""Each example of the source document, run to completion through the consumer protocol."""

from __future__ import annotations

from pathlib import Path

from engine_support import Fail, Script, drive

from lockgate.engine import Engine

EXAMPLES = Path(__file__).parent / "stratum_examples"


def spec(name: str) -> str:
    return (EXAMPLES / f"{name}.yaml").read_text()


def test_minimal_example_retries_a_low_confidence_answer(engine: Engine) -> None:
    agent = Script({"classify_text": [{"label": "positive", "confidence": 0.5},
                                      {"label": "positive", "confidence": 0.93}]})
    first = engine.plan(spec("minimal"), {"text": "I love it"})
    assert first["status"] == "execute_step"
    assert first["task"] == "Classify the sentiment of I love it"
    assert first["output_fields"] == {"label": "string", "confidence": "number"}
    assert first["retries_remaining"] == 1
    done = drive(engine, first["run_id"], agent)
    assert done["status"] == "complete"
    assert done["output"] == {"label": "positive", "confidence": 0.93}
    assert agent.calls == ["classify_text", "classify_text"]


def test_full_gate_example_revises_then_approves(engine: Engine) -> None:
    agent = Script({"work": [{"result": "v1", "quality_score": 0.85}, {"result": "v2", "quality_score": 0.9}]})
    run = engine.plan(spec("full_gate"), {"text": "a report"})["run_id"]
    done = drive(engine, run, agent, {"review": ["revise", "approve"]})
    assert done["status"] == "complete"
    assert done["output"] == {"result": "v2", "quality_score": 0.9}
    assert engine.audit(run)["rounds"] == 1


def test_step_types_example_runs_all_five_constructs(engine: Engine) -> None:
    agent = Script({
        "analyze": [{"summary": "fine", "score": 3}],
        "inspect/*": lambda e: {"value": f"inspected {e['item']}"},
        "child/write_summary": [{"message": "summary of rust"}],
        "finish": lambda e: {"message": e["task"]},
    })
    first = engine.plan(spec("step_types"), {"topic": "rust", "items": ["a", "b", "c"]})
    done = drive(engine, first["run_id"], agent)
    assert done["status"] == "complete"
    assert done["output"] == {"message": "Finalize summary of rust"}
    audit = engine.audit(first["run_id"])
    by_id = {t["step_id"]: t for t in audit["trace"]}
    assert by_id["normalize"]["output"] == {"summary": "fine", "score": 3}
    assert by_id["inspect"]["output"] == [{"value": "inspected a"}, {"value": "inspected b"},
                                          {"value": "inspected c"}]
    assert by_id["child"]["output"] == {"message": "summary of rust"}
    assert by_id["review"]["decisions"][0]["decision"] == "approve"


def test_composition_example_runs_the_subflow_inline(engine: Engine) -> None:
    agent = Script({"test/run_tests": [{"all_passed": False}, {"all_passed": True}],
                    "release": lambda e: {"status": e["task"]}})
    first = engine.plan(spec("composition"), {"project": "shop"})
    assert first["step_id"] == "test/run_tests"
    assert first["subflow"] == {"parent": "test", "flow": "integration_tests"}
    done = drive(engine, first["run_id"], agent)
    assert done["status"] == "complete"
    assert done["output"] == {"status": "Deploy after test result true"}


def test_routing_example_recovers_through_on_fail(engine: Engine) -> None:
    agent = Script({"generate": [Fail("compiler crashed")], "recover": [{"ok": True, "details": "fixed"}],
                    "publish": [{"ok": True, "details": "published"}]})
    run = engine.plan(spec("routing"), {"spec": "api"})["run_id"]
    done = drive(engine, run, agent)
    assert done["status"] == "complete"
    trace = {t["step_id"]: t for t in engine.audit(run)["trace"]}
    assert trace["generate"]["status"] == "failed"
    assert trace["verify"]["status"] == "pending" or trace["verify"]["status"] == "skipped"
    assert trace["recover"]["status"] == "succeeded"
    assert agent.calls == ["generate", "generate", "recover", "publish"]


def test_routing_example_skips_the_recovery_step_when_generation_succeeds(engine: Engine) -> None:
    agent = Script({"generate": [{"ok": True, "details": "g"}], "verify": [{"ok": True, "details": "v"}],
                    "publish": [{"ok": True, "details": "p"}]})
    run = engine.plan(spec("routing"), {"spec": "api"})["run_id"]
    done = drive(engine, run, agent)
    assert done["status"] == "complete"
    trace = {t["step_id"]: t for t in engine.audit(run)["trace"]}
    assert trace["recover"]["status"] == "skipped"


def test_iterations_example_iterates_until_quality(engine: Engine) -> None:
    agent = Script({"improve": [{"text": "a", "quality": 0.5}, {"text": "b", "quality": 0.8},
                                {"text": "c", "quality": 0.97}]})
    run = engine.plan(spec("iterations"), {"brief": "launch post"})["run_id"]
    done = drive(engine, run, agent)
    assert done["status"] == "complete"
    assert done["output"]["text"] == "c"
    assert engine.audit(run)["trace"][0]["iterations"] == 2


def test_workflow_example_accepts_optional_input_left_out(engine: Engine) -> None:
    first = engine.plan(spec("workflow_review"), {"files": ["a.py", "b.py"]})
    assert first["task"] == 'Review ["a.py","b.py"] for security, logic, and performance'
    done = drive(engine, first["run_id"], Script({"review": [{"summary": "clean"}]}))
    assert done == {**done, "status": "complete", "output": {"summary": "clean"}}
