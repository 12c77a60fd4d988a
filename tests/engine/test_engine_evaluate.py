"""``evaluate`` steps in the engine (reference §6.11): real commands through the built-in
``/bin/sh`` runner, and pluggable evaluators for the envelope and contract rules."""

from __future__ import annotations

import asyncio
import json
import os
import select
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lockgate.dsl.ir import build_spec
from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.evaluate import NO_RUNNER, run_command
from lockgate.engine.specdata import spec_to_data
from lockgate.engine.store import open_store

CLOSED = {"status": "closed", "children": [], "reason": "fine"}


def spec(steps: str, *, output: str = "${check.output}", contract: str = "Verdict", extra: str = "",
         inputs: str = "{doc: object}") -> str:
    """A one-flow spec around ``steps`` (YAML at step indentation)."""
    body = textwrap.indent(textwrap.dedent(steps).strip("\n"), " " * 6)
    extra_lines = textwrap.indent(textwrap.dedent(extra).strip("\n"), " " * 4) + "\n" if extra else ""
    return (
        "version: 1\n"
        "contracts:\n"
        "  Verdict: {status: string, children: array, reason: string, score: number?, route: string?}\n"
        "  Strict: {status: 'closed|open', children: array, reason: string}\n"
        "  Note: {text: string}\n"
        "flows:\n"
        "  entry: main\n"
        "  main:\n"
        f"    input: {inputs}\n"
        f"    output: {{from: '{output}', contract: {contract}}}\n"
        f"{extra_lines}"
        "    steps:\n"
        f"{body}\n"
    )


def one_step(command: str, *, in_: str | None = '"${input.doc}"', timeout_ms: int = 10_000,
             out: str = "Verdict") -> str:
    line = f"in: {in_}, " if in_ is not None else ""
    return spec(f"""
        - id: check
          evaluate: {{command: {json.dumps(command)}, {line}timeout_ms: {timeout_ms}}}
          out: {out}
        """)


def checked(text: str) -> Any:
    result = load(text, lint=False)
    assert result.ok, [d.message for d in result.diagnostics]
    return result.spec


def events(engine: Engine, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in engine.audit(run_id)["events"] if e["type"] == kind]


def failure_of(engine: Engine, run_id: str) -> str:
    (entry,) = [t for t in engine.audit(run_id)["trace"] if t["step_id"] == "check"]
    assert entry["status"] == "failed" and entry["attempts"] == 1  # forced: never retried
    return entry["failure"]["reason"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def real(workspace: Path) -> Engine:
    """An engine with the built-in runner, in a workspace of its own."""
    return Engine(workspace=workspace)


def script(workspace: Path, name: str, body: str) -> str:
    """A Python script in the workspace, and the command line that runs it."""
    (workspace / name).write_text(textwrap.dedent(body))
    return f"{sys.executable} {name}"


# -- real commands --------------------------------------------------------------------------------


def test_a_command_printing_json_succeeds_and_feeds_the_next_step(real: Engine) -> None:
    text = spec("""
        - id: check
          evaluate: {command: cat, in: "${input.doc}", timeout_ms: 10000}
          out: Verdict
        - id: report
          do: "Summarise ${check.output.reason} (${check.output.status})"
          out: Note
        """, output="${report.output}", contract="Note")
    first = real.plan(checked(text), {"doc": CLOSED})
    assert first["status"] == "execute_step" and first["step_id"] == "report"
    assert first["task"] == "Summarise fine (closed)"
    audit = real.audit(first["run_id"])
    (check,) = [t for t in audit["trace"] if t["step_id"] == "check"]
    assert (check["kind"], check["status"], check["attempts"], check["output"]) == ("evaluate", "succeeded", 1, CLOSED)
    (ran,) = events(real, first["run_id"], "evaluated")
    assert ran["step_id"] == "check" and ran["detail"]["command"] == "cat" and ran["detail"]["outcome"] == "ok"


def test_the_command_runs_in_the_workspace_with_in_on_stdin(real: Engine, workspace: Path) -> None:
    command = script(workspace, "echo_env.py", """
        import json, os, sys
        given = json.load(sys.stdin)
        print(json.dumps({"status": "failed", "children": [], "reason": os.getcwd(), "given": given}))
        """)
    text = spec(f"""
        - id: check
          evaluate: {{command: "{command}", in: "doc ${{input.doc.reason}} n=${{input.doc.n}}", timeout_ms: 10000}}
          out: Verdict
        """)
    # the result fails the strict evaluator-result contract (given is an extra key): that shows
    # what the command saw, in the attempt's recorded result
    run = real.plan(checked(text), {"doc": {"reason": "r", "n": 7}})["run_id"]
    record = real.audit(run)
    (check,) = [t for t in record["trace"] if t["step_id"] == "check"]
    assert "result.given: unknown field" in check["failure"]["reason"]
    assert check["failure"]["reason"].startswith("evaluate: the result failed the evaluator-result contract: ")
    stored = real.store.load_run(run).steps["check"]["attempts"][0]["result"]
    assert stored["given"] == "doc r n=7"
    assert stored["reason"] == str(workspace.resolve())


def test_a_full_reference_keeps_its_json_type_and_no_in_is_null(real: Engine, workspace: Path) -> None:
    command = script(workspace, "typed.py", """
        import json, sys
        given = json.load(sys.stdin)
        print(json.dumps({"status": "open", "children": [given], "reason": type(given).__name__}))
        """)
    typed = real.plan(checked(one_step(command)), {"doc": {"n": [1, 2]}})
    assert typed["status"] == "complete"
    assert typed["output"] == {"status": "open", "children": [{"n": [1, 2]}], "reason": "dict"}
    none = real.plan(checked(one_step(command, in_=None)), {"doc": {}})
    assert none["output"] == {"status": "open", "children": [None], "reason": "NoneType"}


@pytest.mark.parametrize(("command", "reason"), [
    ("echo oops >&2; exit 3", "command exited with a non-zero status (status 3: oops)"),
    ("exit 1", "command exited with a non-zero status (status 1, no stderr)"),
    ("kill -9 $$", "command exited with a non-zero status (killed by signal 9, no stderr)"),
    ("echo not json", "output was not valid JSON (Expecting value at line 1 column 1: 'not json')"),
    ("true", "output was not valid JSON (Expecting value at line 1 column 1: (empty output))"),
    ("printf '\\377'", "output was not valid JSON (stdout is not UTF-8 at byte 0)"),
    ('echo \'{"status": "closed", "children": [], "reason": "x", "score": NaN}\'',
     "output was not valid JSON (NaN is not a JSON number: "),
    ('echo \'{"status": "closed", "children": [], "reason": "x\\u0000"}\'',
     "output was not valid JSON (the result cannot be stored: the result contains the character U+0000"),
])
def test_failing_commands_fail_the_run_without_retry(real: Engine, command: str, reason: str) -> None:
    out = real.plan(checked(one_step(command)), {"doc": {}})
    assert out["status"] == "error" and out["step_id"] == "check"
    assert out["message"].startswith(reason)
    assert failure_of(real, out["run_id"]).startswith(reason)


def _exited(pid: int, within: float) -> bool:
    """Whether process ``pid`` has exited, waiting for it up to ``within`` seconds (a pidfd
    becomes readable when the process ends, so this waits on the event, not on a clock)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], within)
        return bool(readable)
    finally:
        os.close(fd)


def test_a_timeout_kills_the_whole_process_group(real: Engine, workspace: Path) -> None:
    command = "sleep 60 & echo $! > grandchild.pid; wait"
    out = real.plan(checked(one_step(command, timeout_ms=1500)), {"doc": {}})
    assert out["status"] == "error"
    assert out["message"] == "command timed out (after 1500 ms; its process group was killed)"
    grandchild = int((workspace / "grandchild.pid").read_text())
    assert _exited(grandchild, within=5.0)
    (ran,) = events(real, out["run_id"], "evaluated")
    assert ran["detail"]["outcome"] == "timeout" and ran["detail"]["duration_ms"] >= 1500


def test_stdout_is_bounded(workspace: Path) -> None:
    envelope = run_command("yes | head -c 100000", None, 10_000, workspace, max_stdout=1024)
    assert envelope == {"ok": False, "kind": "parse",
                        "reason": "more than 1024 bytes on stdout; the command was killed"}


def test_the_built_in_runner_works_inside_a_running_event_loop(workspace: Path) -> None:
    async def inside() -> Any:
        return Engine(workspace=workspace).plan(checked(one_step("cat")), {"doc": CLOSED})

    assert asyncio.run(inside())["output"] == CLOSED


# -- the evaluator envelope and the result contracts ------------------------------------------------


class Recorder:
    """An evaluator returning a fixed envelope and recording its calls."""

    def __init__(self, envelope: Any) -> None:
        self.envelope = envelope
        self.calls: list[tuple[str, Any, int, Any]] = []

    def __call__(self, command: str, value: Any, timeout_ms: int, workspace: Any) -> Any:
        self.calls.append((command, value, timeout_ms, workspace))
        if isinstance(self.envelope, BaseException):
            raise self.envelope
        return self.envelope


def run_with(envelope: Any, text: str | None = None, inputs: Any = None) -> tuple[Engine, dict[str, Any]]:
    """Plan ``text`` on an engine whose evaluator answers ``envelope`` (an evaluator itself when
    callable; None: no evaluator)."""
    evaluator = envelope if envelope is None or callable(envelope) else Recorder(envelope)
    engine = Engine(evaluator=evaluator)
    return engine, engine.plan(checked(text or one_step("check it")), {"doc": {}} if inputs is None else inputs)


def test_a_pluggable_evaluator_gets_command_input_timeout_and_workspace(tmp_path: Path) -> None:
    recorder = Recorder({"ok": True, "result": {**CLOSED, "score": 0.5, "route": "codex"}})
    engine = Engine(workspace=tmp_path, evaluator=recorder)
    out = engine.plan(checked(one_step("check it", timeout_ms=1234)), {"doc": {"x": 1}})
    assert out["status"] == "complete" and out["output"]["route"] == "codex"
    assert recorder.calls == [("check it", {"x": 1}, 1234, tmp_path.resolve())]


def test_an_async_evaluator_is_awaited() -> None:
    async def evaluator(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"ok": True, "result": {**CLOSED, "reason": command}}

    _, out = run_with(evaluator)
    assert out["output"]["reason"] == "check it"


@pytest.mark.parametrize(("envelope", "reason"), [
    ({"ok": False, "kind": "exit", "reason": "status 2"}, "command exited with a non-zero status (status 2)"),
    ({"ok": False, "kind": "timeout", "reason": "slow"}, "command timed out (slow)"),
    ({"ok": False, "kind": "parse", "reason": "junk\0"}, "output was not valid JSON (junk\ufffd)"),
    ({"ok": True, "result": {**CLOSED, "score": float("nan")}},
     "output was not valid JSON (the result cannot be stored: the result is not JSON-serialisable"),
    ({"ok": True, "result": {"s": {1, 2}}}, "output was not valid JSON (the result cannot be stored: "),
    ([1], "evaluate: malformed result envelope: a list, not an object"),
    ({"result": CLOSED}, "evaluate: malformed result envelope: an object with keys result"),
    ({"ok": 1, "result": CLOSED}, "evaluate: malformed result envelope: an object with keys ok, result"),
    ({"ok": True, "result": CLOSED, "extra": 1}, "evaluate: malformed result envelope: an object with keys extra,"),
    ({"ok": True}, "evaluate: malformed result envelope: an object with keys ok"),
    ({"ok": False, "kind": "crash", "reason": "x"}, "evaluate: malformed result envelope: "),
    ({"ok": False, "kind": "exit", "reason": 3}, "evaluate: malformed result envelope: "),
    (Recorder(RuntimeError("boom")), "evaluate: runner threw: boom"),
    (None, NO_RUNNER),
])
def test_envelope_failures_have_the_reference_reasons(envelope: Any, reason: str) -> None:
    engine, out = run_with(envelope)
    assert out["status"] == "error" and out["message"].startswith(reason)
    assert failure_of(engine, out["run_id"]).startswith(reason)


def test_no_runner_configured_is_the_explicit_none() -> None:
    assert Engine().evaluator is run_command
    engine, out = run_with(None)
    assert engine.evaluator is None and out["message"] == "evaluate: no evaluate runner configured"
    assert events(engine, out["run_id"], "evaluated") == []


@pytest.mark.parametrize(("result", "fragment"), [
    ({"status": "closed", "children": [1], "reason": "x"}, "result.children: a closed result has no children, found 1"),
    ({"status": "open", "children": [], "reason": "x"}, "result.children: an open result needs at least one child"),
    ({"status": "done", "children": [], "reason": "x"}, 'result.status: expected one of "closed", "open", "failed"'),
    ({"status": "closed", "children": {}, "reason": "x"}, "result.children: expected array"),
    ({"status": "closed", "children": []}, 'result.reason: missing required field "reason"'),
    ({**CLOSED, "route": "gpt"}, 'result.route: expected one of "claude", "codex"'),
    ({**CLOSED, "score": "high"}, "result.score: expected number"),
    ({**CLOSED, "note": 1}, 'result.note: unknown field "note"'),
    ("closed", "result: expected EvaluatorResult object"),
])
def test_the_evaluator_result_contract_is_strict_with_cross_field_rules(result: Any, fragment: str) -> None:
    engine, out = run_with({"ok": True, "result": result})
    assert out["message"].startswith("evaluate: the result failed the evaluator-result contract: ")
    assert fragment in out["message"]
    (entry,) = engine.audit(out["run_id"])["trace"]
    assert entry["failure"]["kind"] == "schema" and entry["failure"]["violations"]


def test_out_is_checked_after_the_fixed_contract() -> None:
    _, out = run_with({"ok": True, "result": {**CLOSED, "status": "failed"}}, one_step("x", out="Strict"))
    assert out["message"].startswith("evaluate: the result failed the Strict contract: result.status")


def test_the_flow_output_contract_is_checked_when_its_evaluate_source_succeeds() -> None:
    text = spec("""
        - id: check
          evaluate: {command: x, timeout_ms: 10}
          out: Verdict
        - id: later
          after: [check]
          do: "never"
        """, contract="Strict")
    _, out = run_with({"ok": True, "result": {**CLOSED, "status": "failed"}}, text)
    assert out["status"] == "error" and out["step_id"] == "check"
    assert "flow output does not match contract Strict" in out["message"]


# -- the evaluate step in a flow ----------------------------------------------------------------------


def test_an_input_render_failure_fails_the_step() -> None:
    text = spec("""
        - id: maybe
          when: "false"
          set: {text: "'x'"}
          out: Note
        - id: check
          evaluate: {command: x, in: "${maybe.output.text}", timeout_ms: 10}
          out: Verdict
        """)
    recorder = Recorder({"ok": True, "result": CLOSED})
    _, out = run_with(recorder, text)
    assert out["message"] == "evaluate: input render failed: reference ${maybe.output.text} is unavailable: step maybe was skipped"
    assert recorder.calls == []


def test_a_false_when_skips_without_running_the_command() -> None:
    text = spec("""
        - id: check
          when: "input.doc.run == true"
          evaluate: {command: x, timeout_ms: 10}
        - id: fallback
          after: [check]
          evaluate: {command: y, timeout_ms: 10}
          out: Verdict
        """, output="${fallback.output}")
    recorder = Recorder({"ok": True, "result": CLOSED})
    _, out = run_with(recorder, text, {"doc": {"run": False}})
    assert out["status"] == "complete"
    assert [c[0] for c in recorder.calls] == ["y"]


def test_a_later_when_reads_the_result_and_carry_is_materialised_in_the_same_sweep() -> None:
    text = spec("""
        - id: check
          evaluate: {command: x, timeout_ms: 10}
          out: Verdict
        - id: fix
          after: [check]
          when: "result.check.status == 'open'"
          do: "Fix ${note}: ${check.output.children[0]}"
          out: Note
        """, output="${fix.output}", contract="Note", extra="""
        carry:
          note:
            initial: "${check.output.reason}"
        """)
    engine, out = run_with({"ok": True, "result": {"status": "open", "children": ["a.py"], "reason": "lint"}}, text)
    assert out["status"] == "execute_step" and out["task"] == "Fix lint: a.py"
    types = [e["type"] for e in engine.audit(out["run_id"])["events"]]
    assert types == ["planned", "evaluate_started", "evaluated", "usage_debit", "result", "carry_updated", "ready"]


def test_a_failure_inside_a_subflow_fails_the_run_step_which_may_route() -> None:
    text = textwrap.dedent("""\
        version: 1
        contracts:
          Verdict: {status: string, children: array, reason: string}
          Note: {text: string}
        flows:
          entry: main
          main:
            input: {}
            output: {from: "${recover.output}", contract: Note}
            steps:
              - id: sub
                run: checker
                with: {}
                on_fail: recover
              - id: recover
                set: {text: "'recovered'"}
                out: Note
          checker:
            input: {}
            output: {from: "${check.output}", contract: Verdict}
            steps:
              - id: check
                evaluate: {command: x, timeout_ms: 10}
                out: Verdict
        """)
    engine, out = run_with({"ok": False, "kind": "exit", "reason": "status 1"}, text, {})
    assert out["status"] == "complete" and out["output"] == {"text": "recovered"}
    trace = {t["step_id"]: t for t in engine.audit(out["run_id"])["trace"]}
    assert trace["sub/check"]["failure"]["reason"] == "command exited with a non-zero status (status 1)"
    assert trace["sub"]["status"] == "failed"
    assert "step check failed: command exited" in trace["sub"]["failure"]["reason"]


def test_the_stored_spec_keeps_evaluate_and_a_fresh_engine_runs_it(tmp_path: Path) -> None:
    text = spec("""
        - id: wait
          gate: {on_approve: check, on_revise: null, on_kill: null}
        - id: check
          evaluate: {command: "cat", in: "${input.doc}", timeout_ms: 10000}
          out: Verdict
        """)
    parsed = checked(text)
    assert build_spec(spec_to_data(parsed)).flows["main"].steps[1].evaluate == parsed.flows["main"].steps[1].evaluate
    url = str(tmp_path / "runs.db")
    first = Engine(store=open_store(url), workspace=tmp_path).plan(parsed, {"doc": CLOSED})
    assert first["status"] == "await_gate"
    fresh = Engine(store=open_store(url), workspace=tmp_path)
    done = fresh.gate_resolve(first["run_id"], "wait", "approve", "go", "test", first["gate_token"])
    assert done["status"] == "complete" and done["output"] == CLOSED


def test_a_gate_revise_runs_the_evaluate_step_again_and_rewrites_carry() -> None:
    text = spec("""
        - id: check
          evaluate: {command: x, timeout_ms: 10}
          out: Verdict
        - id: review
          after: [check]
          gate: {on_approve: null, on_revise: check, on_kill: null}
        """, extra="""
        max_rounds: 2
        carry:
          last:
            initial: "${check.output.reason}"
        """)
    reasons = iter(["first", "second"])

    def evaluator(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        return {"ok": True, "result": {**CLOSED, "reason": next(reasons)}}

    engine, out = run_with(evaluator, text)
    run = out["run_id"]
    again = engine.gate_resolve(run, "review", "revise", "redo", "test", out["gate_token"])
    assert again["status"] == "await_gate"
    done = engine.gate_resolve(run, "review", "approve", "ok", "test", again["gate_token"])
    assert done["output"]["reason"] == "second"
    assert engine.audit(run)["carry"]["last"]["value"] == "second"
    assert len(events(engine, run, "evaluated")) == 2
