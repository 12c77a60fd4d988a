"""The string ``+`` builds no text longer than ``str()`` may (``MAX_JSON_TEXT_LENGTH``, 16 Mi
UTF-16 code units), and running out of memory while evaluating is a ``resource_limit``, not a
type error (review s13b F6): an ensure summing a large result a hundred times built 800 MiB,
and a thousand times ran the machine out of memory, reported as ``type_error: ... MemoryError``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl.expr import compile
from lockgate.dsl.expr.jsonvalues import utf16_len
from lockgate.dsl.expr.limits import MAX_JSON_TEXT_LENGTH as LIMIT
from lockgate.errors import ExprError

ROOT = Path(__file__).resolve().parents[2]
TOO_LONG = f"resource_limit: '+' would build a string longer than {LIMIT:,} characters"

#: strings up to the limit, in code points of one and two UTF-16 units; built once, shared
RESULT = {
    "empty": "",
    "short": "ab",
    "half": "h" * (LIMIT // 2),
    "waves": "\U0001f30a" * (LIMIT // 4),  # LIMIT // 2 UTF-16 code units
    "accents": "\u00e9" * (LIMIT // 2 + 1),
    "whole": "w" * LIMIT,
    "list": ["h" * (LIMIT // 2), "x"],
    "n": 12.5,
}


@pytest.mark.parametrize("source, holds", [
    ("len(result.half + result.half) == LIMIT", True),
    ("len(result.waves + result.waves) == LIMIT", True),  # UTF-16 units, as len() counts them
    ("len(result.whole + '') == LIMIT", True),
    ("len(result.half + result.half + 'x') > 0", False),
    ("len(result.waves + 'x' + result.waves) > 0", False),
    ("len((result.half + result.half) + 'x') > 0", False),
    ("len(result.whole + result.whole) > 0", False),
])
def test_a_sum_is_refused_past_the_limit_and_not_before(source, holds):
    expression = compile(source.replace("LIMIT", str(LIMIT)))
    assert expression.holds({"result": RESULT}) == ((True, None) if holds else (False, TOO_LONG))


def test_a_hundred_copies_of_an_8_mib_output_are_refused_at_once():
    source = "len(" + " + ".join(["result.v"] * 100) + ") > 5"
    with pytest.raises(ExprError) as caught:
        compile(source).evaluate({"result": {"v": "a" * (8 << 20)}})
    assert (caught.value.kind, caught.value.span) == ("resource_limit", (4, len(source) - 5))


# --- the property: no expression over bounded inputs builds a longer text -----------------------

TERMS = ["result.empty", "result.short", "result.half", "result.waves", "result.accents", "result.whole",
         "'x'", "'\U0001f30a'"]


def _texts(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return (st.tuples(inner, inner).map(lambda p: f"({p[0]} + {p[1]})")
            | st.lists(inner, min_size=2, max_size=6).map(" + ".join)
            | inner.map(lambda t: f"str({t})"))


expressions = st.recursive(st.sampled_from(TERMS + ["str(result.list)", "str(result.n)"]), _texts,
                           max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions)
def test_no_expression_over_bounded_inputs_builds_a_longer_text(source):
    try:
        value = compile(source).evaluate({"result": RESULT})
    except ExprError as error:
        assert error.kind == "resource_limit", (source, error)
        assert f"{LIMIT:,} characters" in error.message or f"{LIMIT} characters" in error.message
        return
    assert type(value) is str
    assert utf16_len(value) <= LIMIT, source


# --- out of memory: a limit, not a type error --------------------------------------------------

OUT_OF_MEMORY = textwrap.dedent("""
    import re, resource
    from lockgate.dsl.expr import compile

    expression = compile(" + ".join(["result.v"] * 15) + " != ''")
    result = {"v": "a" * (1 << 20)}  # 15 MiB once joined: within the limit
    with open("/proc/self/status") as status:
        used = int(re.search(r"VmSize:\\s+(\\d+) kB", status.read()).group(1)) * 1024
    room = used + (8 << 20)  # less than the join needs
    resource.setrlimit(resource.RLIMIT_AS, (room, room))
    print(expression.holds({"result": result}))
""")


def test_running_out_of_memory_is_a_resource_limit():
    proc = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(False, 'resource_limit: the evaluation ran out of memory')"
