"""The ``judge`` key of the project configuration, and the judge adapter on its own."""

from __future__ import annotations

import textwrap

import pytest
from test_judge_runner import JUDGED, STATEMENT

from lockgate.engine.agents import (
    AgentResult,
    Fail,
    ScriptedAgent,
    load_config,
    parse_config,
)
from lockgate.engine.engine import Engine
from lockgate.engine.judge import (
    STAKES_GUIDANCE,
    VERDICT_SCHEMA,
    AgentJudge,
    JudgeBridge,
    JudgeError,
    as_judge,
    judge_task,
)
from lockgate.errors import ConfigError


def test_judge_key_in_lockgate_toml(tmp_path):
    (tmp_path / "lockgate.toml").write_text(textwrap.dedent("""
        judge = "reviewer"

        [agents.reviewer]
        type = "openai"
        model = "m"
        """))
    assert load_config(start=tmp_path).judge == "reviewer"


def test_judge_key_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.lockgate]\njudge = "codex"\n')
    assert load_config(start=tmp_path).judge == "codex"


def test_no_judge_key_means_no_judge():
    assert parse_config({}).judge is None


@pytest.mark.parametrize("value, message", [
    (3, r"lockgate.toml: judge: expected a non-empty string, got 3"),
    ("", r"lockgate.toml: judge: expected a non-empty string"),
    ("Big Judge", r"lockgate.toml: judge: expected an agent name matching"),
])
def test_bad_judge_values_are_errors(tmp_path, value, message):
    with pytest.raises(ConfigError, match=message):
        parse_config({"judge": value}, path=tmp_path / "lockgate.toml")


def test_a_misspelt_judge_key_says_did_you_mean():
    with pytest.raises(ConfigError, match=r"unknown key 'judges' \(did you mean 'judge'\?\)"):
        parse_config({"judges": "x"})


@pytest.mark.parametrize("stakes", ["cheap", "default", "paranoid"])
def test_the_judge_task_carries_the_question_and_the_verdict_contract(stakes):
    task = judge_task("it rhymes", stakes, {"poem": "moon june"}, {"topic": "moon"}, agent="critic",
                      run_id="r1", step_id="poem", cwd="/work")
    assert (task.run_id, task.step_id, task.agent, task.cwd) == ("r1", "poem", "critic", "/work")
    assert task.schema == VERDICT_SCHEMA and task.contract == "JudgeVerdict"
    assert task.inputs == {"statement": "it rhymes", "stakes": stakes,
                           "result": {"poem": "moon june"}, "input": {"topic": "moon"}}
    assert "Statement: it rhymes" in task.prompt and STAKES_GUIDANCE[stakes] in task.prompt
    assert '"poem": "moon june"' in task.prompt and '"topic": "moon"' in task.prompt


async def test_agent_judge_passes_the_answer_on_and_raises_on_agent_failure():
    judge = AgentJudge(ScriptedAgent({"judge": [{"holds": True, "reason": "ok"}, Fail("overloaded")]},
                                     name="critic"))
    assert await judge("s", "default", 1, {}) == {"holds": True, "reason": "ok"}
    with pytest.raises(JudgeError, match="judge agent 'critic': overloaded"):
        await judge("s", "default", 1, {})


def test_as_judge_accepts_agents_and_callables_and_refuses_the_rest():
    agent = ScriptedAgent(name="critic")
    assert isinstance(as_judge(agent), AgentJudge) and as_judge(agent).name == "critic"

    def fn(*args):
        return {"holds": True, "reason": ""}

    assert as_judge(fn) is fn
    with pytest.raises(ConfigError, match="a judge is an agent name, an agent or a callable"):
        as_judge(42)


def test_engine_with_an_agent_judge_works_without_a_runner():
    """Outside a runner the engine asks an agent judge synchronously, as it asks any judge;
    the bridge the runner installs behaves the same when called from there."""
    critic = ScriptedAgent(default=AgentResult.success({"holds": False, "reason": "no rain"}), name="critic")
    for judge in (AgentJudge(critic), JudgeBridge(AgentJudge(critic))):
        engine = Engine(judge=judge)
        first = engine.plan(JUDGED, {"topic": "rain"})
        answer = engine.step_done(first["run_id"], "draft", {"title": "sun"}, first["token"])
        assert answer["status"] == "ensure_failed"
        assert answer["violations"][0]["ensure"] == f"judged: {STATEMENT}"
        assert answer["violations"][0]["detail"] == "no rain"
