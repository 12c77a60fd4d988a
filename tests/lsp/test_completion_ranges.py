"""Completion at every code unit of a spec full of emoji and CJK, and of its truncations: every
item's edit is on the cursor's line and contains the cursor (LSP requires it), including when
the client puts the cursor between the halves of a surrogate pair or inside a UTF-8 sequence."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES
from lsp_harness import open_doc, units_of
from lsprotocol import types as lsp

from lockgate.lsp.positions import LineIndex

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/completion-ranges.stratum.yaml"


def wide(spec: str) -> str:
    """The spec with wide characters at line starts, before every reference and in texts."""
    return "🎉中" + spec.replace("${", "中${").replace("do: ", "do: 🎉")


async def edits_outside_the_cursor(client, text: str, lines: range) -> list[tuple]:
    doc = lsp.TextDocumentIdentifier(uri=URI)
    index = LineIndex(text)
    bad = []
    for line in lines:
        for character in range(units_of(index.line(line), client.encoding) + 1):
            answer = await client.text_document_completion_async(
                lsp.CompletionParams(text_document=doc, position=lsp.Position(line=line, character=character)))
            items = answer.items if isinstance(answer, lsp.CompletionList) else answer or []
            for item in items:
                edit = item.text_edit
                rng = edit.range if isinstance(edit, lsp.TextEdit) else edit.insert if edit else None
                if rng is not None and not (rng.start.line == rng.end.line == line
                                            and rng.start.character <= character <= rng.end.character):
                    bad.append((line, character, item.label, rng))
    return bad


async def test_every_edit_contains_the_cursor(client, review_spec):
    text = wide(review_spec)
    await open_doc(client, URI, text)
    assert await edits_outside_the_cursor(client, text, range(LineIndex(text).line_count)) == []


@pytest.mark.parametrize(("example", "fraction"), [
    ("code-review", 0.5), ("code-review", 0.9),
    ("health", 0.33),  # no `flows` yet: the first line (a comment after 🎉中) offers top-level keys
])
async def test_every_edit_contains_the_cursor_in_a_truncation(client, example, fraction):
    text = wide((EXAMPLES / f"{example}.stratum.yaml").read_text(encoding="utf-8"))
    text = text[: int(len(text) * fraction)]
    await open_doc(client, URI, text)
    index = LineIndex(text)
    last = index.line_count - 1
    assert await edits_outside_the_cursor(client, text, range(0, index.line_count, 7)) == []
    assert await edits_outside_the_cursor(client, text, range(last, last + 1)) == []
