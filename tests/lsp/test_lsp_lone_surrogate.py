"""LG102 names a lone surrogate as what it is, not as a control character (review s8-r3 #4):
a client can send one (JSON's ``\\ud800`` escape), and no editor calls it a control character."""

from __future__ import annotations

import pytest
from lsp_harness import open_doc

from lockgate.dsl.yamlsrc import parse_yaml

on_server = pytest.mark.asyncio(loop_scope="session")
MESSAGE = "the document contains {}; a spec must be plain text"


@pytest.mark.parametrize("ch, what", [
    ("\ud800", "a lone surrogate (U+D800), not valid Unicode"),
    ("\udfff", "a lone surrogate (U+DFFF), not valid Unicode"),
    ("\x01", "the control character U+0001"),
    ("\0", "a NUL character"),
])
def test_lg102_names_the_character(ch: str, what: str) -> None:
    [diag] = parse_yaml(f"version: 1\nnote: a{ch}b\n").diagnostics
    assert (diag.code, diag.message) == ("LG102", MESSAGE.format(what))
    assert (diag.range.start.line, diag.range.start.character) == (1, 7)


@on_server
async def test_a_client_sending_a_lone_surrogate_is_told_so(vscode) -> None:
    items = await open_doc(vscode, "file:///tmp/surrogate.stratum.yaml", "version: 1\nnote: a\ud800b\n")
    assert [(d.code, d.message) for d in items] == [("LG102", MESSAGE.format("a lone surrogate (U+D800), not valid Unicode"))]
