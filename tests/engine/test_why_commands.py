"""``Engine.why`` names each command that unblocks a wait twice: as an action (data a caller can
extend, as the CLI adds its --store) and as the command line that action renders to; the two say
the same thing, and the line reads back (shlex) as the action's words."""

from __future__ import annotations

import shlex
from pathlib import Path

from lockgate.engine import Engine
from lockgate.engine.explain import FILL_IN, render

#: a flow whose step ``work`` goes to gate ``review``, which can approve, revise or kill
SPEC = (Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml").read_text()


def argv(action: dict) -> list[str]:
    options = [word for name, value in action["options"].items() for word in (f"--{name}", value)]
    return ["lockgate", *action["command"], *action["args"], *options]


def at_gate(engine: Engine) -> str:
    first = engine.plan(SPEC, {"text": "tea"})
    engine.step_done(first["run_id"], "work", {"result": "r", "quality_score": 1}, first["token"])
    return first["run_id"]


def test_a_waiting_gate_is_decided_by_actions_whose_lines_are_as_before(engine: Engine) -> None:
    run = at_gate(engine)
    (wait,) = engine.why(run)["waits"]
    assert wait["actions"] == [{"command": ["gate", verb], "args": [run, "review"], "options": {"note": FILL_IN}}
                               for verb in ("approve", "revise", "reject")]
    assert wait["commands"] == [f'lockgate gate {verb} {run} review --note "..."'
                                for verb in ("approve", "revise", "reject")]
    assert [shlex.split(line) for line in wait["commands"]] == [argv(a) for a in wait["actions"]]


def test_a_dispatched_step_is_resumed_or_cancelled(engine: Engine) -> None:
    run = engine.plan(SPEC, {"text": "tea"})["run_id"]
    (wait,) = engine.why(run)["waits"]
    assert wait["actions"] == [{"command": ["run"], "args": [], "options": {"resume": run}},
                               {"command": ["cancel"], "args": [run], "options": {}}]
    assert wait["commands"] == [f"lockgate run --resume {run}", f"lockgate cancel {run}"]


def test_a_checkpoint_label_is_quoted_in_the_line_and_verbatim_in_the_action(engine: Engine) -> None:
    run = at_gate(engine)
    label = "it's \"done\" $HOME"
    engine.commit(run, label)
    engine.resolve_waiting_gate(run, "review", "kill", "no", "human")
    (wait,) = engine.why(run)["waits"]
    assert wait["kind"] == "finished"
    assert wait["actions"] == [{"command": ["revert"], "args": [run, label], "options": {}}]
    assert shlex.split(wait["commands"][0]) == ["lockgate", "revert", run, label]


def test_a_finished_run_without_checkpoints_points_at_its_audit(engine: Engine) -> None:
    run = at_gate(engine)
    engine.resolve_waiting_gate(run, "review", "kill", "no", "human")
    assert engine.why(run)["waits"][0]["commands"] == [f"lockgate audit {run}"]


def test_render_appends_options_after_the_action_s_own() -> None:
    action = {"command": ["gate", "approve"], "args": ["r1", "step one"], "options": {"note": FILL_IN}}
    assert render(action, store="my runs.db") == (
        "lockgate gate approve r1 'step one' --note \"...\" --store 'my runs.db'")
