"""A reference that cannot be rendered says what happened to its source when the resolve
function knows (its ``fate``): the source step failed (and why), was skipped, has not run, or
succeeded without the field; without that knowledge the message no longer guesses "skipped"."""

from __future__ import annotations

import pytest

from lockgate.dsl.refrender import (
    UNAVAILABLE,
    Resolver,
    render_text,
    render_value,
    source_fate,
)
from lockgate.dsl.refscan import scan
from lockgate.dsl.values import UNDEFINED
from lockgate.errors import RefError


def ref(text: str):
    return scan(text).refs[0]


@pytest.mark.parametrize(("status", "reason", "words"), [
    ("failed", "gate g killed flow", "step sub failed: gate g killed flow"),
    ("failed", None, "step sub failed"),
    ("skipped", None, "step sub was skipped"),
    ("pending", None, "step sub has not run yet"),
    ("ready", None, "step sub has not run yet"),
    ("running", None, "step sub is still running"),
    ("waiting_gate", None, "step sub is a gate still waiting for a decision"),
    ("succeeded", None, "step sub's output has no v"),
])
def test_what_happened_to_the_source_in_words(status, reason, words) -> None:
    assert source_fate(ref("${sub.output.v}"), status, reason) == words


def test_nothing_is_said_of_what_is_not_a_step_or_not_known() -> None:
    assert source_fate(ref("${input.x}"), "failed") is None
    assert source_fate(ref("${sub.output.v}"), None) is None
    assert source_fate(ref("${sub.output}"), "succeeded") is None  # a whole output that is there


def test_a_resolver_that_knows_the_statuses_says_what_happened() -> None:
    scope = Resolver(outputs={"a": {"v": "x"}}, statuses={"a": "succeeded", "sub": "failed", "s": "skipped"})
    with pytest.raises(RefError) as failed:
        render_text("after ${sub.output.v}", scope)
    assert failed.value.message == "reference ${sub.output.v} is unavailable: step sub failed"
    with pytest.raises(RefError) as skipped:
        render_value({"n": "${s.output}"}, scope)
    assert skipped.value.message == "reference ${s.output} is unavailable: step s was skipped"
    with pytest.raises(RefError) as missing:
        render_text("${a.output.w}", scope)
    assert missing.value.message == "reference ${a.output.w} is unavailable: step a's output has no w"


def test_a_resolve_function_with_a_fate_is_asked_and_one_without_is_not() -> None:
    def resolve(r):
        return UNDEFINED

    with pytest.raises(RefError) as plain:
        render_text("x ${sub.output} y", resolve)
    assert plain.value.message == UNAVAILABLE and "skipped, failed or not run yet" in UNAVAILABLE
    resolve.fate = lambda r: f"step {r.name} failed: it broke"  # type: ignore[attr-defined]
    with pytest.raises(RefError) as told:
        render_text("x ${sub.output} y", resolve)
    assert told.value.message == "reference ${sub.output} is unavailable: step sub failed: it broke"
