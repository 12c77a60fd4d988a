"""The pure hash-chain functions: canonical JSON, linking, and verification of damaged chains."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lockgate.engine.store.chain import (
    GENESIS_HASH,
    Link,
    canonical_json,
    chain_events,
    event_body,
    link_hash,
    recompute,
    verify_chain,
)
from lockgate.errors import StoreError

AT = "2025-03-01T12:00:00+00:00"
NOW = "2025-03-01T12:00:05+00:00"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


def make_chain(run_id: str = "r1", n: int = 8) -> list[Link]:
    events = [{"type": f"t{i}", "step_id": "s" if i % 2 else None, "detail": {"i": i, "f": i / 3}, "at": AT}
              for i in range(n)]
    return chain_events(run_id, events, GENESIS_HASH, 1, NOW)


def test_canonical_json_sorts_keys_has_no_spaces_keeps_unicode_and_float_repr() -> None:
    assert canonical_json({"b": 1, "a": [1.0, 0.1, "é"]}) == '{"a":[1.0,0.1,"é"],"b":1}'
    assert canonical_json(1e100) == "1e+100" == repr(1e100)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1, 2}, b"bytes", object()])
def test_canonical_json_refuses_non_json(value: object) -> None:
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        canonical_json(value, "detail")


def test_circular_and_too_deep_values_are_refused_not_crashes() -> None:
    loop: list[object] = []
    loop.append(loop)
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    for value in (loop, {"k": loop}, deep):
        with pytest.raises(StoreError, match="not JSON-serialisable"):
            canonical_json(value, "detail")


@settings(max_examples=150, deadline=None)
@given(
    run_id=st.text(min_size=1, max_size=10),
    seq=st.integers(min_value=1, max_value=10**9),
    type_=st.text(min_size=1, max_size=10),
    step_id=st.none() | st.text(max_size=10),
    detail=st.dictionaries(st.text(max_size=5), json_values, max_size=4),
)
def test_event_body_is_canonical_json_of_the_whole_event(run_id, seq, type_, step_id, detail) -> None:
    expected = canonical_json(
        {"run_id": run_id, "seq": seq, "at": AT, "type": type_, "step_id": step_id, "detail": detail}
    )
    assert event_body(run_id, seq, AT, type_, step_id, canonical_json(detail)) == expected


def test_chain_links_each_event_to_the_previous_hash() -> None:
    links = make_chain(n=3)
    assert [link.seq for link in links] == [1, 2, 3]
    assert links[0].prev_hash == GENESIS_HASH
    for earlier, later in zip(links, links[1:]):
        assert later.prev_hash == earlier.hash
    for link in links:
        assert recompute("r1", link) == link.hash
        assert link.hash == link_hash(link.prev_hash, event_body("r1", link.seq, link.at, link.type,
                                                                 link.step_id, link.detail_json))


def test_chain_continues_from_a_given_head() -> None:
    first = make_chain(n=2)
    more = chain_events("r1", [{"type": "later"}], first[-1].hash, 3, NOW)
    assert more[0].seq == 3 and more[0].prev_hash == first[-1].hash and more[0].at == NOW
    assert verify_chain("r1", first + more, more[0].hash, 3).ok


def test_the_run_id_is_part_of_the_hash() -> None:
    links = make_chain("r1")
    report = verify_chain("r2", links, links[-1].hash, len(links))
    assert (report.ok, report.first_bad_seq, report.problem) == (False, 1, "edited")


def test_an_intact_chain_verifies() -> None:
    links = make_chain()
    report = verify_chain("r1", links, links[-1].hash, len(links))
    assert (report.ok, report.count, report.first_bad_seq, report.problem) == (True, 8, None, None)
    assert verify_chain("r1", [], GENESIS_HASH, 0).ok


def _report(links: list[Link], original: list[Link]) -> tuple[bool, int | None, str | None]:
    report = verify_chain("r1", links, original[-1].hash, len(original))
    return report.ok, report.first_bad_seq, report.problem


def _forge(after: Link, seq: int) -> Link:
    """A well-formed event with a valid hash linked after ``after``: the best a forger can do."""
    (forged,) = chain_events("r1", [{"type": "forged", "detail": {"evil": True}, "at": AT}], after.hash, seq, NOW)
    return forged


def test_edited_detail_is_named() -> None:
    links = make_chain()
    damaged = list(links)
    damaged[4] = damaged[4]._replace(detail_json='{"i":4,"f":0}')
    assert _report(damaged, links) == (False, 5, "edited")


def test_deleted_event_is_named() -> None:
    links = make_chain()
    assert _report(links[:3] + links[4:], links) == (False, 4, "deleted")


def test_deleted_and_renumbered_event_is_named() -> None:
    links = make_chain()
    renumbered = links[:3] + [link._replace(seq=link.seq - 1) for link in links[4:]]
    assert _report(renumbered, links) == (False, 4, "deleted")


def test_truncated_tail_is_named() -> None:
    links = make_chain()
    assert _report(links[:5], links) == (False, 6, "deleted")


def test_forged_event_appended_with_a_valid_hash_is_named() -> None:
    links = make_chain()
    assert _report(links + [_forge(links[-1], 9)], links) == (False, 9, "inserted")


def test_forged_event_inserted_in_the_middle_is_named() -> None:
    links = make_chain()
    shifted = [link._replace(seq=link.seq + 1) for link in links[3:]]
    assert _report(links[:3] + [_forge(links[2], 4)] + shifted, links) == (False, 4, "inserted")


def test_swapped_events_are_named_reordered() -> None:
    links = make_chain()
    swapped = list(links)
    swapped[2], swapped[3] = links[3]._replace(seq=3), links[2]._replace(seq=4)
    assert _report(swapped, links) == (False, 3, "reordered")


def test_bad_genesis_is_named() -> None:
    links = make_chain()
    damaged = [links[0]._replace(prev_hash="f" * 64)] + links[1:]
    assert _report(damaged, links) == (False, 1, "bad_genesis")


def test_rewritten_suffix_with_valid_hashes_is_caught_by_the_recorded_head() -> None:
    links = make_chain()
    tail = chain_events("r1", [{"type": "rewritten", "at": AT}] * 5, links[2].hash, 4, NOW)
    report = verify_chain("r1", links[:3] + tail, links[-1].hash, len(links))
    assert (report.ok, report.problem) == (False, "edited")
    assert "chain head" in report.message


def test_malformed_stored_rows_are_edits_not_crashes() -> None:
    links = make_chain()
    for damaged in (links[1]._replace(detail_json="{not json"), links[1]._replace(seq="two"),
                    links[1]._replace(type=None), links[1]._replace(prev_hash=None)):
        report = verify_chain("r1", [links[0], damaged, *links[2:]], links[-1].hash, len(links))
        assert (report.ok, report.first_bad_seq) == (False, 2)
        assert report.problem in {"edited", "reordered"}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_single_field_edit_is_caught_at_that_event(data) -> None:
    links = make_chain()
    index = data.draw(st.integers(0, len(links) - 1))
    field = data.draw(st.sampled_from(["at", "type", "step_id", "detail_json"]))
    value = data.draw(st.text(min_size=1, max_size=8))
    if field == "detail_json":
        value = json.dumps({"edited": value})
    assume(getattr(links[index], field) != value)
    damaged = list(links)
    damaged[index] = links[index]._replace(**{field: value})
    assert _report(damaged, links) == (False, index + 1, "edited")
