"""Finding and classifying ``${...}`` references (Stratum v1 §3.1 and the sharp edges of §8)."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl import refscan, refsyntax
from lockgate.dsl.refs import Ref, scan
from lockgate.dsl.refscan import _KINDS

CLASSIFIED = [
    # inside of ${...}, kind, name, path
    ("item", "item", None, ()),
    ("prev", "prev", None, ()),
    ("input.topic", "input", None, ("topic",)),
    ("input.a[0].b_2", "input", None, ("a", 0, "b_2")),
    ("input.output", "input", None, ("output",)),
    ("build.output", "step", "build", ()),
    ("build.output.items[0].name", "step", "build", ("items", 0, "name")),
    ("fan.output[0].f", "step", "fan", (0, "f")),
    ("build-2_x.output", "step", "build-2_x", ()),
    ("x.output.output", "step", "x", ("output",)),
    ("item.output", "step", "item", ()),
    ("prev.output[1]", "step", "prev", (1,)),
    ("wave", "carry", "wave", ()),
    ("wave[0]", "carry", "wave", (0,)),
    ("wave.x", "carry", "wave", ("x",)),
    ("wave.outputs", "carry", "wave", ("outputs",)),
    ("wave.outputValue", "carry", "wave", ("outputValue",)),
    ("wave.x.output", "carry", "wave", ("x", "output")),
    # sharp edge 2: these are carry references, not field reads
    ("item.name", "carry", "item", ("name",)),
    ("prev.value", "carry", "prev", ("value",)),
    ("input", "carry", "input", ()),
    ("input[0]", "carry", "input", (0,)),
    ("build", "carry", "build", ()),
    ("steps.x.output", "carry", "steps", ("x", "output")),
    ("items", "carry", "items", ()),
    ("inputs.x", "carry", "inputs", ("x",)),
]


@pytest.mark.parametrize(("inner", "kind", "name", "path"), CLASSIFIED)
def test_references_are_classified_by_the_first_matching_rule(
    inner: str, kind: str, name: str | None, path: tuple[object, ...]
) -> None:
    template = scan("${" + inner + "}")
    assert template.errors == ()
    (ref,) = template.refs
    assert (ref.kind, ref.name, ref.path) == (kind, name, path)
    assert ref.full and template.full is ref
    assert ref.text == "${" + inner + "}"


def test_embedded_references_and_their_spans() -> None:
    text = "Use ${input.topic} and ${research.output.items[0].title}."
    template = scan(text)
    first, second = template.refs
    assert not first.full and template.full is None
    assert text[slice(*first.span)] == "${input.topic}"
    assert text[slice(*second.span)] == "${research.output.items[0].title}"
    assert text[slice(*second.name_span)] == "research"  # type: ignore[misc]
    assert text[slice(*second.path_span)] == ".items[0].title"
    assert [text[slice(*s)] for s in second.segment_spans] == [".items", "[0]", ".title"]
    assert first.name_span is None and text[slice(*first.path_span)] == ".topic"
    assert template.step_ids == ("research",)


def test_carry_name_and_path_spans() -> None:
    text = "x ${wave.items[2]}"
    (ref,) = scan(text).refs
    assert text[slice(*ref.name_span)] == "wave"  # type: ignore[misc]
    assert text[slice(*ref.path_span)] == ".items[2]"


def test_item_has_an_empty_path_span_at_its_end() -> None:
    (ref,) = scan("${item}").refs
    assert ref.path_span == (6, 6) and ref.name_span is None


def test_a_string_without_references() -> None:
    template = scan("plain text with $ and } and {")
    assert template.refs == () and template.errors == () and template.ok


def test_non_string_values_have_no_references() -> None:
    assert scan(42).refs == ()  # type: ignore[arg-type]
    assert scan(None).errors == ()  # type: ignore[arg-type]


def test_scans_are_cached_by_text() -> None:
    assert scan("a ${input.x} b") is scan("a ${input.x} b")


INVALID = [
    # text, message fragment, span, replacement
    ("${}", "empty reference", (0, 3), None),
    ("${ input.x }", "spaces are not allowed", (0, 12), "${input.x}"),
    ("${input.x y}", "spaces are not allowed", (0, 12), None),
    ("${input.}", "needs a field after input.", (0, 9), None),
    ("${Build.output}", "lowercase", (0, 15), "${build.output}"),
    ("${wave_X}", "lowercase", (0, 9), "${wave_x}"),
    ("${_x}", "start with a lowercase letter", (0, 5), None),
    ("${1x}", "starts with a lowercase name", (0, 5), None),
    ("${input.x[-1]}", "negative index", (0, 14), None),
    ('${input.x["a"]}', "quoted keys are not supported; write .a", (0, 15), "${input.x.a}"),
    ("${x.output.0}", "write [0] for an index", (0, 13), "${x.output[0]}"),
    ("${x.output..a}", "empty field name", (0, 14), None),
    ("${x.output.}", "empty field name", (0, 12), None),
    ("${x.output[a]}", "an index is a whole number", (0, 14), None),
    ("${x.output[0}", "missing ]", (0, 13), None),
    ("${x.output-y}", "unexpected '-'", (0, 13), None),
    ("${input.a-b}", "unexpected '-'", (0, 12), None),
    ("${{input.x}}", "single braces", (0, 12), "${input.x}"),
    ("${a ${b.output}", "do not nest", (0, 15), None),
    ("text ${", "unclosed reference", (5, 7), None),
    ("}${", "unclosed reference", (1, 3), None),
    ("${input.x} then ${", "the last ${ has no closing }", (16, 18), None),
]


@pytest.mark.parametrize(("text", "fragment", "span", "replacement"), INVALID)
def test_malformed_references_are_errors_with_exact_spans(
    text: str, fragment: str, span: tuple[int, int], replacement: str | None
) -> None:
    template = scan(text)
    assert not template.ok
    error = template.errors[0]
    assert fragment in error.message
    assert error.span == span
    assert error.replacement == replacement


def test_valid_references_survive_next_to_an_invalid_one() -> None:
    template = scan("${input.x} ${Bad} ${s.output}")
    assert [r.kind for r in template.refs] == ["input", "step"]
    assert [e.span for e in template.errors] == [(11, 17)]


SLIPS = [
    ("${steps.x.output}", "step outputs are written ${x.output}", "${x.output}"),
    ("${steps.x.output.a}", "${x.output.a}", "${x.output.a}"),
    ("${result.x.a}", "${x.output.a}", "${x.output.a}"),
    ("${x.outputs}", "did you mean ${x.output}?", "${x.output}"),
    ("${x.outputs.a[0]}", "${x.output.a[0]}", "${x.output.a[0]}"),
    ("${x.result}", "did you mean ${x.output}?", "${x.output}"),
    ("${inputs.topic}", "${input.topic}", "${input.topic}"),
    ("${input}", "${input} alone is not a reference", None),
    ("${item.name}", "read item.name in an expression", None),
    ("${prev.value}", "read prev.value in an expression", None),
]


@pytest.mark.parametrize(("text", "fragment", "replacement"), SLIPS)
def test_common_slips_have_a_friendly_explanation(text: str, fragment: str, replacement: str | None) -> None:
    (ref,) = scan(text).refs
    slip = ref.slip()
    assert slip is not None and fragment in slip.message
    assert slip.replacement == replacement and slip.span == ref.span


@pytest.mark.parametrize("text", ["${wave}", "${wave.x}", "${input.x}", "${x.output}", "${item}"])
def test_ordinary_references_are_not_slips(text: str) -> None:
    assert scan(text).refs[0].slip() is None


HINTS = [
    ("Review {{input.topic}} now", (7, 22), "${input.topic}"),
    ("Review {{ build.output.x }}", (7, 27), "${build.output.x}"),
    ("Review $input.topic now", (7, 19), "${input.topic}"),
    ("use $build.output[0]", (4, 20), "${build.output[0]}"),
]


@pytest.mark.parametrize(("text", "span", "replacement"), HINTS)
def test_look_alikes_are_hints_not_errors(text: str, span: tuple[int, int], replacement: str) -> None:
    template = scan(text)
    assert template.refs == () and template.errors == ()
    (hint,) = template.hints
    assert hint.span == span and hint.replacement == replacement


@pytest.mark.parametrize("text", ["echo $HOME", "cost: $5", "{{ jinja }}", "${input.x}", "a$input"])
def test_ordinary_dollars_and_braces_give_no_hints(text: str) -> None:
    assert scan(text).hints == ()


def test_every_grammar_alternative_is_a_named_node_the_builder_knows() -> None:
    grammar = resources.files("lockgate.dsl").joinpath("grammar/template.lark").read_text("utf-8")
    aliases = set(re.findall(r"->\s*(\w+)", grammar))
    assert aliases == set(_KINDS)


REF_TEXT = st.text(alphabet=st.sampled_from(list("${}.[]0123 abxIOinputemo-_\"'")), max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.one_of(REF_TEXT, st.text(max_size=30)))
def test_scan_never_raises_and_spans_stay_inside(text: str) -> None:
    template = scan(text)
    for item in (*template.refs, *template.errors, *template.hints):
        start, end = item.span  # type: ignore[misc]
        assert 0 <= start < end <= len(text)
    for ref in template.refs:
        _assert_ref_spans(text, ref)
    if "${" in text and not template.refs:
        assert template.errors


def _assert_ref_spans(text: str, ref: Ref) -> None:
    assert text[slice(*ref.span)] == ref.raw
    assert ref.raw.startswith("${") and ref.raw.endswith("}")
    assert ref.span[0] <= ref.path_span[0] <= ref.path_span[1] < ref.span[1]
    assert len(ref.segment_spans) == len(ref.path)
    assert scan(ref.text).full == Ref(**{**_fields(ref), "span": (0, len(ref.text)), "full": True})


def _fields(ref: Ref) -> dict[str, object]:
    base = ref.span[0]
    shift = lambda s: (s[0] - base, s[1] - base)  # noqa: E731
    return {
        "kind": ref.kind, "name": ref.name, "path": ref.path, "raw": ref.text,
        "name_span": shift(ref.name_span) if ref.name_span else None,
        "path_span": shift(ref.path_span),
        "segment_spans": tuple(shift(s) for s in ref.segment_spans),
    }


@pytest.mark.parametrize(("text", "refs", "errors"), [
    ("${" * 50_000, 0, 1),
    ("${a" * 30_000 + "}", 0, 1),
    ("${input.x} " * 5_000, 5_000, 0),
    ("${x.output" + ".a" * 5_000 + "}", 1, 0),
], ids=["unclosed-run", "one-long-unclosed", "many-refs", "long-path"])
def test_large_inputs_scan_in_linear_time(text: str, refs: int, errors: int) -> None:
    template = scan(text)
    assert (len(template.refs), len(template.errors)) == (refs, errors)
    assert all(len(e.message) < 250 for e in template.errors)


# -- the parser-free path for common references ---------------------------------------------------

_PARTS = st.sampled_from(["item", "prev", "input", "output", "outputs", "a", "b-c", "x_1", "Wave", "_z", "9"])
_SEPARATORS = st.sampled_from([".", "", "[0]", "[12]", ".", "[", "-", " "])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_SEPARATORS, _PARTS), min_size=1, max_size=5), st.text("x ", max_size=2))
def test_simple_references_are_read_as_the_grammar_reads_them(parts, prefix):
    inner = "".join(sep + part for sep, part in parts).lstrip(".")
    text = prefix + "${" + inner + "}"
    match = refsyntax._REF.search(text)
    fast = refscan._simple_ref(inner, match.start(1), (match.start(), match.end()), match.start() == 0, match.group(0))
    if fast is None:
        return
    tree = refsyntax._parse_inner(inner)
    assert not isinstance(tree, Exception), inner
    slow = refscan._build_ref(tree, match.start(1), (match.start(), match.end()), full=match.start() == 0,
                            raw=match.group(0))
    assert fast == slow, inner
