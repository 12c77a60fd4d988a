"""The terminal gate prompt states the revision limit that applies to the gate (its own or the
flow's ``max_rounds``, whichever a revise meets first), worded as ``lockgate why`` words it, and
not the flow-wide round count alone.

Each run is driven in-process by the runner, with :class:`TerminalGates` reading scripted answers
(``ask``) and keeping what it says; ``why`` is asked while the gate waits, so both wordings of the
same wait are compared.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

from lockgate.engine.engine import Engine
from lockgate.engine.gatechannel import TerminalGates
from lockgate.engine.runner import run


def spec(flow_max: int, gate_max: int | None, on_revise: str = "work") -> str:
    gate_rounds = f", max_rounds: {gate_max}" if gate_max is not None else ""
    return textwrap.dedent(f"""
        version: 1
        contracts:
          Note: {{text: string}}
        flows:
          entry: main
          main:
            input: {{}}
            output: {{from: "${{work.output}}", contract: Note}}
            max_rounds: {flow_max}
            steps:
              - id: work
                do: "work"
                agent: quick
                out: Note
              - id: review
                after: [work]
                gate: {{on_approve: null, on_revise: {on_revise}, on_kill: null{gate_rounds}}}
        """).lstrip()


class Person:
    """Answers each gate prompt from ``decisions`` (a revise gets a note), keeping the gate
    summaries it was shown and, while each gate waited, how ``why`` worded that wait."""

    def __init__(self, engine: Engine, decisions: list[str]) -> None:
        self.engine = engine
        self.decisions: Iterator[str] = iter(decisions)
        self.summaries: list[str] = []
        self.reasons: list[str] = []
        self.said: list[str] = []

    def say(self, text: str) -> None:
        self.said.append(text)
        if text.startswith("Gate "):
            self.summaries.append(text)
            run_id = text.split(" of run ", 1)[1].split()[0]
            self.reasons.append(self.engine.why(run_id)["waits"][0]["reason"])

    def ask(self, prompt: str) -> str:
        return next(self.decisions) if prompt.startswith("Decision") else "change it"


async def prompted(text: str, decisions: list[str]) -> tuple[Person, Any]:
    engine = Engine()
    person = Person(engine, decisions)

    async def quick(task: Any) -> dict[str, Any]:
        return {"text": "done"}

    gates = TerminalGates(ask=person.ask, say=person.say)
    result = await run(text, {}, engine=engine, gates=gates, agents={"quick": quick})
    return person, result


async def test_the_prompt_states_the_gates_own_limit_when_a_revise_meets_it_first() -> None:
    person, result = await prompted(spec(flow_max=5, gate_max=1), ["r", "a"])
    assert result.status == "complete"
    assert [s.split(". ", 1)[1] for s in person.summaries] == [
        "Round 0/1, the gate's max_rounds.", "Round 1/1, the gate's max_rounds."]
    assert "revise is not offered: revise would fail the run" in " ".join(person.said)


async def test_the_prompt_states_the_flows_limit_when_a_revise_meets_it_first() -> None:
    person, result = await prompted(spec(flow_max=2, gate_max=3), ["r", "a"])
    assert result.status == "complete"
    assert [s.split(". ", 1)[1] for s in person.summaries] == [
        "Round 0/2, the flow's max_rounds.", "Round 1/2, the flow's max_rounds."]


async def test_the_prompt_words_the_limit_as_why_does() -> None:
    person, _ = await prompted(spec(flow_max=2, gate_max=1), ["r", "a"])
    for summary, reason in zip(person.summaries, person.reasons, strict=True):
        words = reason.split(" (", 1)[1].split(")", 1)[0]  # "round 0/1, the gate's max_rounds"
        assert f" {words[0].upper()}{words[1:]}." in summary


async def test_a_gate_with_no_limit_states_the_flows_round() -> None:
    """A gate that sends no work back has no revision limit: the prompt says the flow's round."""
    text = spec(flow_max=2, gate_max=None).replace("on_revise: work", "on_revise: null")
    person, result = await prompted(text, ["a"])
    assert result.status == "complete"
    assert [s.split(". ", 1)[1] for s in person.summaries] == ["Round 0."]
