"""Every step construct and its failure paths: when, set, attempts, identical evidence, iterate,
on_fail, gates (kill, revise, rounds), carry, budgets, subflows, ensures of every kind."""

from __future__ import annotations

import asyncio

import pytest
from engine_support import Fail, Script, Usage, drive, report

from lockgate.engine import Engine
from lockgate.errors import EngineError

HEAD = """
version: 1
contracts:
  Note:
    text: string
  Score:
    value: number
flows:
  entry: main
"""


def flow(body: str, output: str = "${last.output}", contract: str = "Note", extra: str = "",
         others: str = "") -> str:
    """Flow ``main`` (input ``topic``) with the steps ``body``; ``others``: more flows after it."""
    return HEAD + f"""  main:
    input:
      topic: string
    output:
      from: "{output}"
      contract: {contract}
{extra}    steps:
{body}{others}"""


def steps_of(engine: Engine, run: str) -> dict[str, dict]:
    return {t["step_id"]: t for t in engine.audit(run)["trace"]}


# -- when, set ------------------------------------------------------------------------------------

WHEN = flow("""      - id: first
        do: "first ${input.topic}"
        out: Score
      - id: maybe
        after: [first]
        when: "result.first.value > 5"
        do: "maybe"
        out: Note
      - id: last
        after: [maybe]
        do: "last"
        out: Note
""")


def test_when_false_skips_and_skipped_dependencies_release_dependents(engine: Engine) -> None:
    run = engine.plan(WHEN, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"first": [{"value": 1}], "last": [{"text": "end"}]}))
    assert done["status"] == "complete"
    assert steps_of(engine, run)["maybe"]["status"] == "skipped"


def test_rendering_a_skipped_steps_output_fails_the_attempt(engine: Engine) -> None:
    spec = WHEN.replace('do: "last"', 'do: "last after ${maybe.output.text}"').replace(
        "        out: Note\n\"\"\"", "        out: Note\n        attempts: 1\n\"\"\"")
    run = engine.plan(spec, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"first": [{"value": 1}]}))
    assert done["status"] == "error" and done["error_type"] == "retries_exhausted"
    assert "unavailable" in done["message"]


SET = flow("""      - id: first
        do: "first"
        out: Score
      - id: last
        after: [first]
        set:
          text: "str(result.first.value * 2)"
        out: Note
        ensure:
          - expr: "result.text != '0'"
""")


def test_set_computes_its_output_without_an_agent(engine: Engine) -> None:
    run = engine.plan(SET, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"first": [{"value": 21}]}))
    assert done["output"] == {"text": "42"}


def test_a_failing_set_ends_the_run_without_retry(engine: Engine) -> None:
    run = engine.plan(SET, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"first": [{"value": 0}]}))
    assert done["status"] == "error" and done["error_type"] == "set_failed"
    assert len(steps_of(engine, run)["last"]["failure"]["violations"]) == 1


# -- attempts, identical evidence, iterate, on_fail ---------------------------------------------------

RETRY = flow("""      - id: last
        do: "write"
        out: Note
        attempts: 3
        ensure:
          - expr: "len(result.text) > 5"
""")


def test_attempts_default_to_two() -> None:
    engine = Engine()
    spec = RETRY.replace("        attempts: 3\n", "")
    run = engine.plan(spec, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "a"}, {"text": "b"}]}))
    assert done["error_type"] == "retries_exhausted"
    assert steps_of(engine, run)["last"]["attempts"] == 2


def test_identical_evidence_stops_retries_early(engine: Engine) -> None:
    run = engine.plan(RETRY, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "same"}]}))
    assert done["status"] == "error"
    assert done["message"].endswith("(no retry: identical evidence)")
    assert steps_of(engine, run)["last"]["attempts"] == 2


def test_reported_failures_are_never_identical_evidence(engine: Engine) -> None:
    run = engine.plan(RETRY, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [Fail("timeout"), Fail("timeout"), {"text": "finally"}]}))
    assert done["status"] == "complete"
    assert steps_of(engine, run)["last"]["attempts"] == 3


ITERATE = flow("""      - id: last
        do: "improve"
        out: Score
        iterate:
          max: 4
          until: "result.value >= 10"
        on_fail: fallback
      - id: fallback
        do: "fallback"
        out: Score
""", output="${last.output}", contract="Score")


def test_iterate_redispatches_until_the_predicate_holds(engine: Engine) -> None:
    run = engine.plan(ITERATE, {"topic": "t"})["run_id"]
    seen = []

    def agent(entry):
        seen.append(entry["iteration"])
        return {"value": 4 * entry["iteration"]}

    done = drive(engine, run, Script({"last": agent}))
    assert done["output"] == {"value": 12}
    assert seen == [1, 2, 3]
    assert steps_of(engine, run)["fallback"]["status"] == "skipped"


def test_iterate_stops_early_on_repeated_output_and_routes_on_fail(engine: Engine) -> None:
    run = engine.plan(ITERATE, {"topic": "t"})["run_id"]
    agent = Script({"last": [{"value": 1}, {"value": 2}, {"value": 2}], "fallback": [{"value": 99}]})
    done = drive(engine, run, agent)
    assert agent.calls == ["last", "last", "last", "fallback"]
    trace = steps_of(engine, run)
    assert trace["last"]["status"] == "failed"
    assert trace["last"]["failure"]["reason"].endswith("(no retry: identical evidence)")
    # the flow output reads the failed step: the run cannot complete
    assert done["status"] == "error" and done["error_type"] == "output_unavailable"


def test_iterate_max_exhaustion_takes_the_failure_path(engine: Engine) -> None:
    run = engine.plan(ITERATE, {"topic": "t"})["run_id"]
    agent = Script({"last": lambda e: {"value": e["iteration"]}, "fallback": [{"value": 0}]})
    drive(engine, run, agent)
    assert agent.calls == ["last"] * 4 + ["fallback"]
    assert "iterate max 4 reached" in steps_of(engine, run)["last"]["failure"]["reason"]


def test_on_fail_target_receives_the_routing_failure(engine: Engine) -> None:
    spec = ITERATE.replace("        iterate:\n          max: 4\n          until: \"result.value >= 10\"\n",
                           "        attempts: 1\n")
    first = engine.plan(spec, {"topic": "t"})
    routed = engine.step_done(first["run_id"], "last", None, first["token"], failure="crashed")
    assert routed["status"] == "execute_step" and routed["step_id"] == "fallback"
    assert routed["routed_from"] == "last" and routed["routed_to"] == "fallback"
    assert routed["previous_failure"]["reason"] == "agent reported failure: crashed"


RECOVERY_AFTER = flow("""      - id: primary
        do: "p"
        out: Note
        attempts: 1
        on_fail: fallback
      - id: fallback
        after: [primary]
        do: "fallback for ${input.topic}"
        out: Note
      - id: last
        after: [fallback]
        do: "after ${fallback.output.text}"
        out: Note
""", output="${last.output}")


def test_a_recovery_step_that_lists_the_failing_step_in_after_still_runs(engine: Engine) -> None:
    run = engine.plan(RECOVERY_AFTER, {"topic": "t"})["run_id"]
    agent = Script({"primary": [Fail("boom")], "fallback": [{"text": "saved"}], "last": [{"text": "end"}]})
    done = drive(engine, run, agent)
    assert agent.calls == ["primary", "fallback", "last"]
    assert done["status"] == "complete" and done["output"] == {"text": "end"}
    assert steps_of(engine, run)["fallback"]["status"] == "succeeded"


# -- gates --------------------------------------------------------------------------------------------

GATED = flow("""      - id: draft
        do: "draft ${input.topic}"
        out: Note
      - id: polish
        do: "polish ${draft.output.text}"
        out: Note
      - id: gate
        after: [polish]
        gate:
          on_approve: last
          on_revise: draft
          on_kill: last
          max_rounds: 2
      - id: last
        set:
          text: "'shipped'"
        out: Note
""", extra="    max_rounds: 3\n")


def test_revise_resets_the_descendant_region_with_new_epochs(engine: Engine) -> None:
    agent = Script({"draft": lambda e: {"text": f"d{e['attempt']}"}, "polish": lambda e: {"text": e["task"]}})
    run = engine.plan(GATED, {"topic": "t"})["run_id"]
    drive(engine, run, agent, {"gate": ["revise", "approve"]})
    trace = steps_of(engine, run)
    assert trace["draft"]["epoch"] == 1 and trace["polish"]["epoch"] == 1
    assert trace["gate"]["iterations"] == 1
    assert trace["last"]["status"] == "succeeded"
    reset = [e for e in engine.audit(run)["events"] if e["type"] == "step_reset"]
    assert [r["step_id"] for r in reset[0]["detail"]["reset"]] == ["draft", "polish", "gate", "last"]


def test_gate_max_rounds_is_enforced_before_the_flows(engine: Engine) -> None:
    agent = Script({"draft": [{"text": "d"}], "polish": [{"text": "p"}]})
    run = engine.plan(GATED, {"topic": "t"})["run_id"]
    done = drive(engine, run, agent, {"gate": ["revise", "revise", "revise"]})
    assert done["status"] == "error" and done["error_type"] == "rounds_exhausted"
    assert engine.audit(run)["rounds"] == 2


def test_flow_max_rounds_bounds_all_revisions() -> None:
    engine = Engine()
    spec = GATED.replace("    max_rounds: 3\n", "    max_rounds: 1\n")
    run = engine.plan(spec, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"draft": [{"text": "d"}], "polish": [{"text": "p"}]}),
                 {"gate": ["revise", "revise"]})
    assert done["error_type"] == "rounds_exhausted"
    assert engine.audit(run)["rounds"] == 1


def test_kill_with_a_route_activates_it_and_kill_null_ends_the_run(engine: Engine) -> None:
    agent = Script({"draft": [{"text": "d"}], "polish": [{"text": "p"}]})
    run = engine.plan(GATED, {"topic": "t"})["run_id"]
    assert drive(engine, run, agent, {"gate": ["kill"]})["output"] == {"text": "shipped"}
    killer = GATED.replace("on_kill: last", "on_kill: null")
    run = engine.plan(killer, {"topic": "t"})["run_id"]
    done = drive(engine, run, agent, {"gate": ["reject"]})
    assert done["status"] == "killed" and done["reason"] == "gate gate killed flow"
    assert done["rationale"] == "scripted reject"


def test_a_gate_decision_is_recorded_with_its_rationale(engine: Engine) -> None:
    run = engine.plan(GATED, {"topic": "t"})["run_id"]
    drive(engine, run, Script({"draft": [{"text": "d"}], "polish": [{"text": "p"}]}),
          lambda gate: ("approve", "looks right"))
    decision = steps_of(engine, run)["gate"]["decisions"][0]
    assert decision["rationale"] == "looks right" and decision["resolved_by"] == "test"


CARRY = """
version: 1
contracts:
  Draft:
    text: string
  Critique:
    comments: string
flows:
  entry: essay
  essay:
    input:
      topic: string
    output:
      from: "${write.output}"
      contract: Draft
    max_rounds: 3
    carry:
      guidance:
        initial: "${input.topic}"
        on_revise:
          decide: "${critique.output.comments}"
    steps:
      - id: write
        do: "Write. Guidance: ${guidance}"
        out: Draft
      - id: critique
        do: "Critique ${write.output.text}"
        out: Critique
      - id: decide
        after: [critique]
        gate:
          on_approve: null
          on_revise: write
          on_kill: null
"""


def test_carry_takes_the_reviewers_comments_across_a_revise(engine: Engine) -> None:
    tasks = []
    agent = Script({"write": lambda e: tasks.append(e["task"]) or {"text": e["task"]},
                    "critique": [{"comments": "shorter please"}]})
    run = engine.plan(CARRY, {"topic": "owls"})["run_id"]
    done = drive(engine, run, agent, {"decide": ["revise", "approve"]})
    assert tasks == ["Write. Guidance: owls", "Write. Guidance: shorter please"]
    assert done["output"] == {"text": "Write. Guidance: shorter please"}
    carry = engine.audit(run)["carry"]["guidance"]
    assert carry["value"] == "shorter please" and carry["provenance"]["kind"] == "revise"


# -- budgets ------------------------------------------------------------------------------------------

BUDGET = flow("""      - id: last
        do: "write"
        out: Note
        attempts: 5
        budget:
          dispatches: 2
        ensure:
          - expr: "len(result.text) > 3"
""", extra="    budget:\n      usd: 1.0\n      tokens: 1000\n      ms: 5000\n")


def test_task_dispatch_budget_fails_the_attempt(engine: Engine) -> None:
    run = engine.plan(BUDGET, {"topic": "t"})["run_id"]
    agent = Script({"last": [{"text": "a"}, {"text": "b"}, {"text": "long enough"}]})
    done = drive(engine, run, agent)
    assert done["status"] == "error" and done["error_type"] == "retries_exhausted"
    assert agent.calls == ["last", "last"]
    assert "task budget exhausted" in done["message"]


@pytest.mark.parametrize("usage", [{"usd": 1.5}, {"tokens": 1200}, {"ms": 6000}])
def test_flow_budget_overrun_is_budget_exhausted(engine: Engine, usage) -> None:
    run = engine.plan(BUDGET, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [Usage({"text": "long enough"}, usage)]}))
    assert done["status"] == "error" and done["error_type"] == "budget_exhausted"
    assert engine.audit(run)["spent"] == {"dispatches": 1, **usage}


def test_flow_dispatch_budget_stops_before_dispatching() -> None:
    engine = Engine()
    spec = BUDGET.replace("      ms: 5000\n", "      ms: 5000\n      dispatches: 1\n")
    run = engine.plan(spec, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "a"}]}))
    assert done["error_type"] == "budget_exhausted"
    assert engine.audit(run)["spent"]["dispatches"] == 1


def test_usage_within_budget_is_recorded_and_dispatches_are_engine_accounted(engine: Engine) -> None:
    first = engine.plan(BUDGET.replace("          dispatches: 2\n", "          usd: 0.5\n"), {"topic": "t"})
    run = first["run_id"]
    retry = engine.step_done(run, "last", {"text": "long enough"}, first["token"],
                             usage={"usd": 0.25, "dispatches": 1})
    assert retry["status"] == "schema_failed" and "engine-accounted" in retry["failure"]["reason"]
    bad = engine.step_done(run, "last", {"text": "long enough"}, retry["token"], usage={"usd": -1})
    assert "invalid usage" in bad["failure"]["reason"]
    assert engine.audit(run)["spent"] == {"dispatches": 3, "usd": 0.25}


# -- subflows -------------------------------------------------------------------------------------------

SUB = flow("""      - id: wrap
        run: child
        with:
          subject: "${input.topic}"
          level: 2
        on_fail: rescue
      - id: rescue
        do: "rescue"
        out: Note
      - id: last
        after: [wrap, rescue]
        do: "finish"
        out: Note
""", others="""  child:
    input:
      subject: string
      level: integer
    output:
      from: "${digest.output}"
      contract: Note
    steps:
      - id: digest
        do: "Digest ${input.subject} at level ${input.level}"
        out: Note
        attempts: 1
""")


def test_subflow_children_are_scoped_and_feed_the_run_step(engine: Engine) -> None:
    first = engine.plan(SUB, {"topic": "owls"})
    assert first["step_id"] == "wrap/digest" and first["task"] == "Digest owls at level 2"
    done = drive(engine, first["run_id"], Script({"wrap/digest": [{"text": "owl digest"}],
                                                  "last": [{"text": "fin"}]}))
    assert done["status"] == "complete"
    trace = steps_of(engine, first["run_id"])
    assert trace["wrap"]["output"] == {"text": "owl digest"}
    assert trace["rescue"]["status"] == "skipped"


def test_a_failing_subflow_fails_its_run_step_which_routes_on_fail(engine: Engine) -> None:
    run = engine.plan(SUB, {"topic": "owls"})["run_id"]
    agent = Script({"wrap/digest": [Fail("no")], "rescue": [{"text": "saved"}], "last": [{"text": "fin"}]})
    done = drive(engine, run, agent)
    assert done["status"] == "complete"
    assert agent.calls == ["wrap/digest", "rescue", "last"]
    assert steps_of(engine, run)["wrap"]["failure"]["kind"] == "subflow"


def test_subflow_input_is_checked_against_the_callee_contract(engine: Engine) -> None:
    spec = SUB.replace("level: 2", "level: two")
    run = engine.plan(spec, {"topic": "owls"})["run_id"]
    drive(engine, run, Script({"rescue": [{"text": "saved"}], "last": [{"text": "fin"}]}))
    wrap = steps_of(engine, run)["wrap"]
    assert wrap["status"] == "failed" and wrap["failure"]["violations"][0]["path"] == "input.level"


# -- ensures --------------------------------------------------------------------------------------------

JUDGED = flow("""      - id: last
        do: "write"
        out: Note
        attempts: 1
        ensure:
          - judged:
              statement: "the text is polite"
              stakes: paranoid
""")


def test_judged_ensures_fail_closed_without_a_judge(engine: Engine) -> None:
    run = engine.plan(JUDGED, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "hello"}]}))
    assert done["status"] == "error" and "no judge is configured" in done["message"]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_judged_ensures_ask_the_configured_judge(asynchronous: bool) -> None:
    asked = []

    def verdict(statement, stakes, result, input):
        asked.append((statement, stakes, result, input))
        return {"holds": "please" in result["text"], "reason": "tone checked"}

    async def async_judge(*args):
        await asyncio.sleep(0)
        return verdict(*args)

    engine = Engine(judge=async_judge if asynchronous else verdict)
    run = engine.plan(JUDGED, {"topic": "t"})["run_id"]
    assert drive(engine, run, Script({"last": [{"text": "yes please"}]}))["status"] == "complete"
    assert asked == [("the text is polite", "paranoid", {"text": "yes please"}, {"topic": "t"})]
    run = engine.plan(JUDGED, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "no"}]}))
    assert "tone checked" in done["message"]


FILES = flow("""      - id: last
        do: "write the report"
        out: Note
        attempts: 2
        ensure:
          - file_exists: "out/report.md"
          - file_contains:
              path: "out/report.md"
              text: "PASS"
""")


def test_file_predicates_are_jailed_to_the_workspace(tmp_path) -> None:
    engine = Engine(workspace=tmp_path)
    first = engine.plan(FILES, {"topic": "t"})
    retry = engine.step_done(first["run_id"], "last", {"text": "one"}, first["token"])
    assert retry["status"] == "ensure_failed" and "file_exists" in retry["violations"][0]["ensure"]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text("all PASS")
    assert engine.step_done(first["run_id"], "last", {"text": "two"}, retry["token"])["status"] == "complete"
    nowhere = Engine()
    first = nowhere.plan(FILES, {"topic": "t"})
    assert nowhere.step_done(first["run_id"], "last", {"text": "x"}, first["token"])["status"] == "ensure_failed"


def test_file_predicates_take_paths_and_text_with_control_characters(tmp_path) -> None:
    spec = FILES.replace('"out/report.md"', '"out/tab\\there.md"').replace('"PASS"', '"col1\\tcol2\\r"')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tab\there.md").write_text("x\ncol1\tcol2\r\n", newline="")
    engine = Engine(workspace=tmp_path)
    first = engine.plan(spec, {"topic": "t"})
    assert first["ensure"] == ['file_exists("out/tab\\there.md")',
                               'file_contains("out/tab\\there.md", "col1\\tcol2\\r")']
    assert engine.step_done(first["run_id"], "last", {"text": "x"}, first["token"])["status"] == "complete"


def test_flow_output_is_checked_when_its_source_completes(engine: Engine) -> None:
    spec = flow("""      - id: last
        do: "write"
        out: Score
""", contract="Note")
    first = engine.plan(spec, {"topic": "t"})
    bad = engine.step_done(first["run_id"], "last", {"value": 1}, first["token"])
    assert bad["status"] == "schema_failed" and bad["failure"]["kind"] == "schema"
    assert "flow output" in bad["failure"]["reason"]


def test_carry_revise_value_that_cannot_resolve_keeps_the_gate_waiting(engine: Engine) -> None:
    spec = CARRY.replace("${critique.output.comments}", "${critique.output.comments}").replace(
        "      - id: critique\n        do: \"Critique ${write.output.text}\"\n        out: Critique\n",
        "      - id: critique\n        do: \"Critique ${write.output.text}\"\n        out: Critique\n"
        "        when: \"input.topic == 'never'\"\n")
    run = engine.plan(spec, {"topic": "owls"})["run_id"]
    first = engine.status(run)
    report(engine, run, first, {"text": "w"})
    gate = engine.status(run)
    assert gate["status"] == "await_gate"
    with pytest.raises(EngineError) as caught:
        engine.gate_resolve(run, "decide", "revise", "", "human", gate["token"])
    assert caught.value.error_type == "carry_revise_unresolved"
    assert engine.gate_resolve(run, "decide", "approve", "", "human", gate["token"])["status"] == "complete"


SUB_GATE = flow("""      - id: wrap
        run: child
        with:
          subject: "${input.topic}"
        budget:
          dispatches: 3
      - id: last
        after: [wrap]
        do: "finish ${wrap.output.text}"
        out: Note
""", others="""  child:
    input:
      subject: string
    output:
      from: "${draft.output}"
      contract: Note
    max_rounds: 5
    steps:
      - id: draft
        do: "Draft ${input.subject}"
        out: Note
      - id: ok
        after: [draft]
        gate:
          on_approve: null
          on_revise: draft
          on_kill: null
""")


def test_a_gate_inside_a_subflow_revises_within_the_child(engine: Engine) -> None:
    agent = Script({"wrap/draft": lambda e: {"text": f"draft {e['attempt']}"},
                    "last": lambda e: {"text": e["task"]}})
    run = engine.plan(SUB_GATE, {"topic": "owls"})["run_id"]
    done = drive(engine, run, agent, {"wrap/ok": ["revise", "approve"]})
    assert done["status"] == "complete" and done["output"] == {"text": "finish draft 1"}
    trace = steps_of(engine, run)
    assert trace["wrap/draft"]["epoch"] == 1 and engine.audit(run)["rounds"] == 0


def test_a_subflow_budget_exhaustion_fails_the_run_step(engine: Engine) -> None:
    run = engine.plan(SUB_GATE, {"topic": "owls"})["run_id"]
    agent = Script({"wrap/draft": lambda e: {"text": "d"}})
    done = drive(engine, run, agent, {"wrap/ok": ["revise", "revise", "revise"]})
    assert done["status"] == "error"
    wrap = steps_of(engine, run)["wrap"]
    assert wrap["status"] == "failed" and "subflow budget exhausted" in wrap["failure"]["reason"]
    assert agent.calls == ["wrap/draft"] * 3


def test_the_child_that_overspends_a_subflow_budget_fails_and_the_run_step_with_it(engine: Engine) -> None:
    spec = SUB_GATE.replace("          dispatches: 3", "          tokens: 100")
    run = engine.plan(spec, {"topic": "owls"})["run_id"]
    drive(engine, run, Script({"wrap/draft": [Usage({"text": "d"}, {"tokens": 150})]}))
    trace = steps_of(engine, run)
    assert trace["wrap/draft"]["status"] == "failed" and trace["wrap/draft"]["spent"] == {"dispatches": 1, "tokens": 150}
    assert trace["wrap/draft"]["failure"]["reason"] == "subflow budget exhausted: tokens 150 spent of 100"
    assert trace["wrap"]["status"] == "failed" and "subflow budget exhausted" in trace["wrap"]["failure"]["reason"]


def test_the_route_a_gate_did_not_take_is_skipped(engine: Engine) -> None:
    spec = GATED.replace("on_kill: last", "on_kill: cleanup") + """      - id: cleanup
        set:
          text: "'cleaned'"
        out: Note
"""
    run = engine.plan(spec, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"draft": [{"text": "d"}], "polish": [{"text": "p"}]}), {"gate": ["approve"]})
    assert done["status"] == "complete"
    trace = steps_of(engine, run)
    assert trace["cleanup"]["status"] == "skipped" and trace["last"]["status"] == "succeeded"
