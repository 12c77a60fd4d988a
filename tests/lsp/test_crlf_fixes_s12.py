"""Every quick fix that inserts lines writes the document's own line ending (review s12lsp F5):
in a CRLF document, "Create contract" (after the contracts, into ``contracts: {}``, and with
no ``contracts`` key at all), "Add max_rounds" and "Add input to 'with'" insert CRLF lines, as
"Run after" has since commit 011a501. Editors that apply edits verbatim (Neovim, Helix, eglot)
otherwise end up with mixed line endings. An LF document keeps getting LF."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import apply_edits, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
URI = "file:///tmp/crlf-fixes-s12.stratum.yaml"
DEPLOY = (EXAMPLES / "deploy-subflow.stratum.yaml").read_text(encoding="utf-8")
REVISE = (EXAMPLES / "carry-revise.stratum.yaml").read_text(encoding="utf-8")
NO_CONTRACTS = """\
version: 1
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Plan}
    steps:
      - {id: a, do: "plan", out: Plan}
"""

CASES = {
    "contract after the others": (DEPLOY.replace("out: Build\n", "out: Biuld\n", 1), "LG302", "Create contract 'Biuld'"),
    "contract into contracts: {}": (NO_CONTRACTS.replace("flows:", "contracts: {}\nflows:"), "LG302",
                                    "Create contract 'Plan'"),
    "contract with no contracts key": (NO_CONTRACTS, "LG302", "Create contract 'Plan'"),
    "max_rounds": (REVISE.replace("    max_rounds: 3\n", "", 1), "LG506", "Add max_rounds to flow 'essay'"),
    "with input": (DEPLOY.replace('          env: "${input.env}"\n', "", 1), "LG703", "Add input 'env' to 'with'"),
}


def bare_line_feeds(text: str) -> int:
    return text.replace("\r\n", "").count("\n")


async def fix_of(client, text: str, code: str, title: str) -> list[lsp.TextEdit]:
    """The edits of the quick fix ``title`` offered for the first diagnostic with ``code``."""
    found = [d for d in await open_doc(client, URI, text) if d.code == code]
    assert found, code
    answer = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), range=found[0].range,
        context=lsp.CodeActionContext(diagnostics=found)))
    actions = {a.title: a for a in answer or [] if isinstance(a, lsp.CodeAction) and a.edit is not None}
    assert title in actions, list(actions)
    return actions[title].edit.document_changes[0].edits


@pytest.mark.parametrize("case", list(CASES))
async def test_a_fix_in_a_crlf_document_inserts_crlf_lines(client, case):
    broken, code, title = CASES[case]
    crlf = broken.replace("\n", "\r\n")
    edits = await fix_of(client, crlf, code, title)
    assert any("\n" in e.new_text for e in edits), "the fix inserts no line"
    fixed = apply_edits(client, crlf, edits)
    assert bare_line_feeds(fixed) == 0, [e.new_text for e in edits]
    assert not [d for d in load(fixed).diagnostics if d.code == code]


@pytest.mark.parametrize("case", list(CASES))
async def test_a_fix_in_an_lf_document_inserts_lf_lines(client, case):
    broken, code, title = CASES[case]
    fixed = apply_edits(client, broken, await fix_of(client, broken, code, title))
    assert "\r" not in fixed
    assert not [d for d in load(fixed).diagnostics if d.code == code]
