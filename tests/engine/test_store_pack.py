"""codec.pack_json/unpack: what the memory store keeps must come back exactly as the JSON round
trip gives it, and be refused exactly when that refuses it, with the same error."""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.engine.store import codec
from lockgate.errors import StoreError

_scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
            | st.sampled_from(["a\x00b", "\x00"]))
_keys = st.text(max_size=4) | st.integers(-3, 3) | st.sampled_from(["k\x00"])
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=20,
)


def _round_trip(value: Any) -> tuple[str, Any]:
    try:
        text = codec.encode_json(value, "value")
        if codec.NUL_ESCAPE in text:
            codec.refuse_nul(text, "value")
        return "ok", codec.decode(text)
    except StoreError as exc:
        return "error", str(exc)


def _copied(value: Any) -> tuple[str, Any]:
    try:
        return "ok", codec.unpack(codec.pack_json(value, "value"))
    except StoreError as exc:
        return "error", str(exc)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _values, max_size=5))
def test_copy_matches_the_json_round_trip(value: dict[str, Any]) -> None:
    got, want = _copied(value), _round_trip(value)
    if got[0] == "ok" and want[0] == "ok":
        assert repr(got[1]) == repr(want[1])  # repr: NaN-free here, and tells -0.0 from 0.0
    else:
        assert got == want


class Colour(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize("value", [
    {"a": (1, 2)}, {"a": Colour.RED}, {1: "x"}, {"a": [True, None, -0.0, 2**70]},
    {"a": float("nan")}, {"a": [math.inf]}, {"a": {1, 2}}, {"a": "x\x00"}, {"a\x00": 1},
    {"a": [object()]}, {"a": b"x"},
])
def test_non_plain_values_behave_as_json(value: dict[str, Any]) -> None:
    assert _copied(value) == _round_trip(value)


def test_the_copy_shares_nothing_with_the_original() -> None:
    original = {"a": [{"b": [1]}], "c": {"d": "e"}}
    copy = codec.unpack(codec.pack_json(original, "value"))
    assert copy == original
    copy["a"][0]["b"].append(2)
    copy["c"]["d"] = "changed"
    assert original == {"a": [{"b": [1]}], "c": {"d": "e"}}


def test_a_cycle_is_refused_like_json_refuses_it() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = [cyclic]
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        codec.pack_json(cyclic, "value")


def test_pack_write_refuses_in_the_same_order_as_encode_write() -> None:
    bad = [({"status": 1, "flow": "f"}, {}), ({"status": "s", "flow": "f", "x": math.nan}, {}),
           ({"status": "s", "flow": "f"}, {"": {}}), ({"status": "s", "flow": "f"}, {"a": {"x": {1, 2}}}),
           ({"status": "s", "flow": "f"}, []), ([], {})]
    for header, steps in bad:
        with pytest.raises(StoreError) as encoded:
            codec.encode_write(header, steps)
        with pytest.raises(StoreError) as copied:
            codec.pack_write(header, steps)
        assert str(copied.value) == str(encoded.value)


def test_each_unpack_is_a_fresh_copy() -> None:
    packed = codec.pack_json({"a": [1, {"b": 2.5}]}, "value")
    first = codec.unpack(packed)
    first["a"].append(3)
    assert codec.unpack(packed) == {"a": [1, {"b": 2.5}]}
