"""An OpenAI-compatible agent as the judge, against the real chat-completions test server."""

from __future__ import annotations

import json
import textwrap

from test_agents_openai import completion, server  # noqa: F401 (the server fixture)
from test_judge_runner import JUDGED, STATEMENT, Recorder, retry_violations

from lockgate.engine.agents import OpenAIAgent
from lockgate.engine.judge import VERDICT_SCHEMA
from lockgate.engine.runner import run


def verdict(holds: bool, reason: str) -> tuple[int, dict]:
    return 200, completion(json.dumps({"holds": holds, "reason": reason}))


async def test_openai_judge_from_lockgate_toml_answers_with_the_verdict_schema(server, tmp_path):  # noqa: F811
    (tmp_path / "lockgate.toml").write_text(textwrap.dedent(f"""
        judge = "critic"

        [agents.critic]
        type = "openai"
        base_url = "{server.base_url}"
        model = "tiny-judge"
        backoff = 0
        """))
    server.replies.extend([verdict(False, "the title never mentions rain"),
                           verdict(True, "it mentions rain")])
    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent}, store="memory",
                       workspace=tmp_path)
    assert result.ok and result.output == {"title": "rain"}
    assert "the title never mentions rain" in retry_violations(agent.tasks)
    first = server.requests[0]
    assert first["model"] == "tiny-judge"
    assert first["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "JudgeVerdict", "schema": VERDICT_SCHEMA, "strict": True}}
    prompt = server.user_message(0)
    assert STATEMENT in prompt and "Stakes: paranoid" in prompt
    assert '"title": "sun"' in prompt and '"topic": "rain"' in prompt
    assert '"title": "rain"' in server.user_message(1)


async def test_openai_judge_answering_off_contract_fails_closed(server):  # noqa: F811
    server.replies.extend([(200, completion('{"verdict": "yes"}')),
                           (200, completion("Looks good to me."))])
    critic = OpenAIAgent("critic", model="tiny-judge", base_url=server.base_url, backoff=0)
    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent}, store="memory", judge=critic)
    assert result.status == "error"
    assert "the judge answered malformed {'verdict': 'yes'}" in retry_violations(agent.tasks)
    assert "the judge failed: judge agent 'critic': agent 'critic': the model's answer is not JSON" \
        in str(result.response["violations"])


async def test_openai_judge_http_error_fails_closed_with_the_server_message(server):  # noqa: F811
    server.replies.extend([(401, {"error": {"message": "invalid api key"}})] * 2)
    critic = OpenAIAgent("critic", model="tiny-judge", base_url=server.base_url, backoff=0,
                         max_retries=0)
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": Recorder()}, store="memory",
                       judge=critic)
    assert result.status == "error"
    assert "the judge failed: judge agent 'critic': agent 'critic': HTTP 401" in str(result.response["violations"])
    assert "invalid api key" in str(result.response["violations"])
