"""In-process tests of what keeps requests fast: analyses off the request path, stale views
over the last good analysis, per-step index reuse, lazy symbol lookup, line mapping, the
outline's per-line cache, and types through ContractSet."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position
from lockgate.dsl.expr.builtins import BUILTINS
from lockgate.dsl.types import ArrayOf, Named
from lockgate.lsp import builtins, hover, index, shapes
from lockgate.lsp.context import Outline
from lockgate.lsp.documents import DocumentStore, Text, analyze
from lockgate.lsp.positions import LineMap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REVIEW = (EXAMPLES / "code-review.stratum.yaml").read_text(encoding="utf-8")
URI = "file:///tmp/incremental.stratum.yaml"


def occurrences(idx: index.SymbolIndex) -> list[tuple]:
    return [(o.key, o.range, o.path, o.definition, o.span, o.at) for o in idx.occurrences]


def fresh_index(text: str) -> index.SymbolIndex:
    index._STEP_CACHE.clear()
    return index.index_of(analyze(URI, text))


# -- the symbol index -------------------------------------------------------------------------------


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("      - id: implement", "\n\n      - id: implement"),  # lines added above steps
    lambda t: t.replace("out: Patch", "out: Review"),  # one step changed
    lambda t: t.replace("contracts:\n", "contracts:\n  Extra:\n    x: string\n"),  # header grows
    lambda t: t.replace("on_revise: implement", "on_revise: review"),
])
def test_reused_step_entries_equal_a_fresh_index(edit):
    index.index_of(analyze(URI, REVIEW))  # fills the per-step cache
    edited = edit(REVIEW)
    assert edited != REVIEW
    reused = occurrences(index.index_of(analyze(URI, edited)))
    assert reused == occurrences(fresh_index(edited))


def test_steps_with_aliases_are_not_reused():
    text = REVIEW.replace("      - id: implement\n", "      - id: implement\n        agent: &who claude\n", 1)
    text = text.replace("      - id: review\n", "      - id: review\n        agent: *who\n", 1)
    analysis = analyze(URI, text)
    index.index_of(analysis)
    assert not any("*who" in key[2] for key in index._STEP_CACHE)


def test_occurrence_at_agrees_with_the_full_index():
    analysis = analyze(URI, REVIEW)
    full = fresh_index(REVIEW)
    probes = {o.range.start for o in full.occurrences} | {o.range.end for o in full.occurrences}
    probes |= {Position(line, col) for line in range(0, len(REVIEW.splitlines()), 3) for col in (0, 8, 14)}
    for pos in sorted(probes):
        expected = full.at(pos)
        found = index.occurrence_at(analysis, pos)
        if expected is None:
            assert found is None, pos
        else:
            assert (found.key, found.range) == (expected.key, expected.range), pos
    assert "index" not in analysis._memo  # answered without indexing the document


# -- line maps and stale hovers --------------------------------------------------------------------


def test_line_map_keeps_lines_outside_the_changed_block():
    old = ["a", "b", "c", "d", "e"]
    new = ["a", "b", "X", "Y", "d", "e"]
    lines = LineMap(old, new)
    assert [lines.to_old(n) for n in range(6)] == [0, 1, None, None, 3, 4]
    assert [lines.to_new(n) for n in range(5)] == [0, 1, None, 4, 5]


@settings(max_examples=60, deadline=None)
@given(old=st.lists(st.sampled_from(["a", "b", "c"]), max_size=12), data=st.data())
def test_line_map_only_maps_equal_lines(old, data):
    start = data.draw(st.integers(0, len(old)))
    end = data.draw(st.integers(start, len(old)))
    new = old[:start] + data.draw(st.lists(st.sampled_from(["a", "b", "x"]), max_size=4)) + old[end:]
    lines = LineMap(old, new)
    for n in range(len(new)):
        mapped = lines.to_old(n)
        assert mapped is None or old[mapped] == new[n]
        assert mapped is None or lines.to_new(mapped) == n
    assert all(lines.to_old(n) == n for n in range(start))  # lines above the edit always map


def stale_view(base_text: str, current_text: str):
    base = analyze(URI, base_text, 1)
    from lockgate.lsp.documents import Analysis

    return Analysis(URI, Text(current_text, 2), base.result, stale=True, base=base)


def test_stale_hover_on_an_unchanged_line_is_exact_and_moved():
    edited = REVIEW.replace("contracts:\n", "# a new comment\n# and another\ncontracts:\n")
    line = edited.splitlines().index("          on_revise: implement")
    col = edited.splitlines()[line].index("implement") + 2
    text, rng = hover.hover(stale_view(REVIEW, edited), Position(line, col))
    assert "**step** `implement`" in text
    assert rng.start.line == line and edited.splitlines()[line][rng.start.character:rng.end.character] == "implement"
    exact = hover.hover(analyze(URI, edited), Position(line, col))
    assert exact == (text, rng)


def test_stale_hover_on_a_changed_line_falls_back_to_key_docs():
    edited = REVIEW.replace("          on_revise: implement", "          on_revise: implement  # edited")
    line = edited.splitlines().index("          on_revise: implement  # edited")
    found = hover.hover(stale_view(REVIEW, edited), Position(line, 12))
    assert found is not None and found[0].startswith("**on_revise**")
    assert hover.hover(stale_view(REVIEW, edited), Position(line, 24)) is None  # the id: not from a changed line


# -- the document store ------------------------------------------------------------------------------


class GatedExecutor(ThreadPoolExecutor):
    """One worker that starts each job only when the test opens the gate; counts jobs."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.gate = threading.Event()
        self.jobs = 0

    def submit(self, fn, /, *args, **kwargs):
        self.jobs += 1

        def gated():
            self.gate.wait(10)
            return fn(*args, **kwargs)

        return super().submit(gated)


def edit(store: DocumentStore, old: str, new: str, version: int) -> None:
    text = store.text(URI)
    start = Text(text).lines.position(text.index(old))
    end = Text(text).lines.position(text.index(old) + len(old))
    rng = lsp.Range(start=lsp.Position(line=start.line, character=start.character),
                    end=lsp.Position(line=end.line, character=end.character))
    store.change(URI, [lsp.TextDocumentContentChangePartial(range=rng, text=new)], version)


async def test_requests_answer_from_the_last_good_analysis_while_one_is_pending():
    executor = GatedExecutor()
    store = DocumentStore(executor)
    store.open(URI, REVIEW, 1)
    executor.gate.set()
    first = await store.current(URI)
    assert first.parsed and first.version == 1
    executor.gate.clear()
    edit(store, "out: Patch", "out: Review", 2)
    waiting = [asyncio.ensure_future(store.current(URI)) for _ in range(3)]
    view = await store.usable(URI)  # answered while the analysis of version 2 waits at the gate
    assert view.stale and view.base is first and view.version == 2 and "out: Review" in view.text
    assert not any(w.done() for w in waiting)
    executor.gate.set()
    done = await asyncio.gather(*waiting)
    assert all(d is done[0] for d in done) and done[0].version == 2
    assert executor.jobs == 2  # one analysis per version, however many waited
    assert await store.usable(URI) is done[0]
    executor.shutdown()


async def test_half_typed_yaml_keeps_the_last_good_analysis():
    store = DocumentStore()
    store.open(URI, REVIEW, 1)
    good = await store.current(URI)
    edit(store, "after: [review]", "after: [rev", 2)
    broken = await store.current(URI)
    assert not broken.parsed
    view = await store.usable(URI)
    assert view.stale and view.base is good and view.ir is good.ir
    store.shutdown()


async def test_settings_change_reanalyses_but_keeps_answering():
    store = DocumentStore()
    store.open(URI, REVIEW.replace("agent: codex", "agent: gemini"), 1)
    first = await store.current(URI)
    assert any(d.code == "LG905" for d in first.diagnostics)
    store.agents = ("gemini",)
    store.invalidate()
    assert (await store.usable(URI)).base is first  # usable at once, from the old analysis
    again = await store.current(URI)
    assert again is not first and not any(d.code == "LG905" for d in again.diagnostics)
    store.shutdown()


# -- outline -----------------------------------------------------------------------------------------


def test_outline_shares_line_shapes_and_finds_key_paths_locally():
    outline = Outline(REVIEW)
    again = Outline(REVIEW.replace("version: 1", "version: 1\n"))
    assert outline.lines[5] is again.lines[6]  # one parsed shape per distinct line text (moved down one)
    for number, line in enumerate(outline.lines):
        if line is not None and line.key is not None:
            assert outline.key_path(number) == outline.paths[number]


# -- types and builtins ------------------------------------------------------------------------------


def test_shapes_follow_the_contract_set():
    spec = analyze(URI, REVIEW).ir
    flow = spec.flows["change"]
    assert shapes.contracts(spec) is shapes.contracts(spec)
    assert shapes.type_at(spec, Named("Review"), ("findings",)) == ArrayOf(Named("Finding"))
    assert shapes.type_at(spec, Named("Review"), ("findings", 0, "severity")).describe() == "low|medium|high"
    assert shapes.type_at(spec, Named("Review"), ("nope",)) is None
    assert set(shapes.fields_of(spec, Named("Patch"))) == {"summary", "files", "tests_passed"}
    assert shapes.fields_of(spec, Named("Nope")) is None
    assert shapes.input_type_at(spec, flow, ("ticket",)).describe() == "string"
    assert shapes.input_type_at(spec, flow, ("missing",)) is None


def test_every_builtin_is_documented():
    assert set(builtins.names()) == set(BUILTINS) == set(builtins.DESCRIPTIONS)
    assert builtins.markdown("len").startswith("```\nlen(x)\n```\n")
    assert builtins.markdown("nope") == "unknown function `nope`"
