"""LG910: an ``on_fail`` target that waits on a step after the step whose failure it takes over
can never run: once the failure is routed, that step is on the branch not taken, so the target
is skipped with everything after it (the reference engine stops with no runnable steps). A
warning at the route, naming the step in the way (review s12b F5)."""

from __future__ import annotations

from lockgate.dsl import Range, Severity, load

HEAD = """\
version: 1
contracts: {N: {text: string}}
flows:
  entry: m
  m:
    input: {}
    output: {from: "${publish.output}", contract: N}
    steps:
      - {id: build, do: "build", out: N, on_fail: fix}
      - {id: test, after: [build], do: "test", out: N}
"""


def _lg910(steps: str) -> list:
    return [d for d in load(HEAD + steps).diagnostics if d.code == "LG910"]


def test_a_recovery_waiting_on_a_step_after_the_failed_one_is_flagged_at_the_route() -> None:
    found = _lg910('      - {id: fix, after: [test], do: "fix", out: N}\n'
                   '      - {id: publish, after: [fix], do: "publish", out: N}\n')
    assert [(d.severity, d.range) for d in found] == [(Severity.WARNING, Range.of(8, 50, 8, 53))]
    assert found[0].message == ("step 'build' routes its failure to 'fix', but 'fix' waits on 'test', which runs "
                                "only after 'build' succeeds: when 'build' fails, 'fix' is skipped, and so is "
                                "every step after it")
    assert found[0].hint.startswith("drop 'test' from what 'fix' waits on")


def test_a_reference_to_such_a_step_is_a_wait_too() -> None:
    found = _lg910('      - {id: fix, do: "fix ${test.output.text}", out: N}\n'
                   '      - {id: publish, after: [fix], do: "publish", out: N}\n')
    assert [d.message.split(",")[1] for d in found] == [" but 'fix' waits on 'test'"]


def test_a_step_in_the_way_reached_through_a_route_after_the_failed_one_is_flagged_too() -> None:
    """A gate's approve target after `build`, or another step's on_fail target after it, never
    runs once `build` failed either (review s13c F1: the lint followed dependencies only)."""
    via_gate = _lg910('      - {id: review, after: [test], gate: {on_approve: ship, on_revise: null, on_kill: null}}\n'
                      '      - {id: ship, do: "ship", out: N}\n'
                      '      - {id: fix, after: [ship], do: "fix", out: N}\n'
                      '      - {id: publish, after: [fix], do: "publish", out: N}\n')
    via_fail = _lg910('      - {id: check, after: [test], do: "check", out: N, on_fail: triage}\n'
                      '      - {id: triage, do: "triage", out: N}\n'
                      '      - {id: fix, after: [triage], do: "fix", out: N}\n'
                      '      - {id: publish, after: [fix], do: "publish", out: N}\n')
    assert [d.message.split(",")[1] for d in (*via_gate, *via_fail)] == [" but 'fix' waits on 'ship'",
                                                                         " but 'fix' waits on 'triage'"]


def test_waiting_on_the_failed_step_itself_or_on_steps_before_it_is_fine() -> None:
    assert _lg910('      - {id: fix, after: [build], do: "fix", out: N}\n'
                  '      - {id: publish, after: [fix], do: "publish", out: N}\n') == []
    spec = HEAD.replace('      - {id: build,', '      - {id: prep, do: "prep", out: N}\n      - {id: build, after: [prep],')
    assert [d for d in load(spec + '      - {id: fix, after: [prep], do: "fix", out: N}\n'
                            '      - {id: publish, after: [fix, test], do: "publish", out: N}\n').diagnostics
            if d.code == "LG910"] == []
