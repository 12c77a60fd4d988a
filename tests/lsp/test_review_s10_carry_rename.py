"""Rename checks a carry variable against the step ids of its own flow only, as the validator
does (LG712, semantics §1.9; review s10 F5 #4): a subflow's step may share a carry's name, so
renaming the carry to it, or the subflow's step to the carry's name, is accepted, while a clash
with a step of the entry flow is still refused."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, at, find, open_doc
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/review-s10-carry-rename.stratum.yaml"
SPEC = """\
version: 1
contracts: {O: {t: string}}
flows:
  entry: m
  m:
    input: {q: string}
    output: {from: "${a.output}", contract: O}
    carry:
      w: {initial: "${input.q}"}
    steps:
      - {id: a, do: "${w}", out: O}
      - {id: s, after: [a], run: sub, with: {q: "${input.q}"}}
  sub:
    input: {q: string}
    output: {from: "${b.output}", contract: O}
    steps:
      - {id: b, do: "${input.q}", out: O}
"""
DOC = lsp.TextDocumentIdentifier(uri=URI)


async def _rename(client, needle: str, offset: int, new_name: str) -> str:
    await open_doc(client, URI, SPEC)
    position = at(client, SPEC, *find(SPEC, needle, offset=offset))
    edit = await client.text_document_rename_async(lsp.RenameParams(text_document=DOC, position=position, new_name=new_name))
    return apply_edits(client, SPEC, edit.document_changes[0].edits)


@pytest.mark.parametrize("needle, offset, new_name, expected", [
    ("w: {", 0, "b", 'b: {initial: "${input.q}"}'),  # the carry takes a subflow step's name
    ("id: b", 4, "w", '{id: w, do: "${input.q}"'),  # the subflow step takes the carry's name
])
async def test_rename_accepts_a_name_the_validator_accepts(client, needle, offset, new_name, expected):
    assert load(SPEC).ok
    renamed = await _rename(client, needle, offset, new_name)
    assert expected in renamed
    assert load(renamed).ok, [(d.code, d.message) for d in load(renamed).diagnostics]


@pytest.mark.parametrize("needle, offset, new_name, reason", [
    ("w: {", 0, "s", "is a step id"),
    ("id: a", 4, "w", "is a carry variable's name"),
])
async def test_rename_refuses_a_clash_in_the_carry_flow(vscode, needle, offset, new_name, reason):
    with pytest.raises(JsonRpcException, match=reason):
        await _rename(vscode, needle, offset, new_name)
