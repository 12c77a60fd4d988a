"""An ensure that joins a large result with ``+`` fails the attempt with a ``resource_limit``
naming the limit, at once and in bounded memory, instead of building hundreds of MiB (review
s13b F6). Through the engine: a result reported, its ensure checked, the retry told why."""

from __future__ import annotations

import resource

from lockgate.engine import Engine

TERMS = 100
SPEC = """version: 1
contracts:
  Out: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s0.output}", contract: Out}
    steps:
      - id: s0
        do: "Do it"
        agent: a
        out: Out
        attempts: 2
        ensure:
          - expr: "len(%s) > 5"
""" % " + ".join(["result.v"] * TERMS)


def test_an_ensure_joining_a_large_result_fails_on_the_limit():
    engine = Engine()
    first = engine.plan(SPEC, {})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answer = engine.step_done(first["run_id"], "s0", {"v": "a" * (8 << 20)}, first["token"])
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    failure = answer["previous_failure"]
    assert (answer["status"], failure["kind"]) == ("ensure_failed", "ensure"), answer
    assert "resource_limit: '+' would build a string longer than 16,777,216 characters" in failure["reason"]
    assert grown_kib < 200 * 1024  # the 800 MiB join was never built
