"""The VS Code extension's own snippets do not answer the words the server's step snippets
answer: typing ``do`` after ``- `` offers the server's "do step" (which fits the list item it is
typed in), not also the extension's "Do step", whose body brings its own ``- `` (``- - id:``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsp_harness import open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-snippet-clash.stratum.yaml"
SNIPPETS = Path(__file__).resolve().parents[2] / "vscode" / "snippets" / "stratum-yaml.code-snippets"


def extension_prefixes() -> set[str]:
    found: set[str] = set()
    for snippet in json.loads(SNIPPETS.read_text(encoding="utf-8")).values():
        prefix = snippet["prefix"]
        found.update([prefix] if isinstance(prefix, str) else prefix)
    return found


async def test_no_extension_prefix_is_a_server_step_snippet_word(vscode, review_spec):
    text = review_spec.replace("      - id: sign_off\n", "      - \n      - id: sign_off\n")
    await open_doc(vscode, URI, text)
    line = text.splitlines().index("      - ")
    answer = await vscode.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=lsp.Position(line=line, character=8)))
    words = {i.label.split()[0] for i in answer.items if i.label.endswith(" step")}
    assert {"do", "gate", "evaluate"} <= words
    assert not words & extension_prefixes()
