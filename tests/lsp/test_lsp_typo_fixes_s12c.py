"""The editor's side of review s12c.

- #1: a slip of ``.output`` in a flow's ``output.from`` (``${ship.outptu}``) got LG708 "found a
  reference to carry" and no quick fix; it is named and its preferred fix gives a valid spec.
- #2: ``${build.result}``, where Build has ``result``, was auto-fixed to ``${build.output}``,
  dropping the field; the preferred fix keeps it.
- #3: a lockgate.toml with a TOML error made the editor say an agent it configures was "not
  configured" (LG905) while ``lockgate validate`` reported the TOML error (LG111). The editor
  now drops LG905 then, as validate does, and reports the error.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from lsp_harness import apply_edits, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

SPEC = """version: 1
contracts:
  Build:
    result: string
    version: string
flows:
  entry: main
  main:
    input:
      q: string
    output:
      from: "${ship.output}"
      contract: Build
    steps:
      - id: build
        do: "Build ${input.q}"
        out: Build
      - id: ship
        do: "Ship ${build.output.result}"
        out: Build
"""


async def preferred_fix(client, uri: str, text: str, code: str) -> str:
    """``text`` after the preferred quick fix of its one ``code`` diagnostic."""
    found = [d for d in await open_doc(client, uri, text) if d.code == code]
    assert len(found) == 1, found
    assert "carry" not in found[0].message
    answer = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=found[0].range,
        context=lsp.CodeActionContext(diagnostics=found)))
    preferred = [a for a in answer or [] if isinstance(a, lsp.CodeAction) and a.is_preferred and a.edit is not None]
    assert len(preferred) == 1, answer
    return apply_edits(client, text, preferred[0].edit.document_changes[0].edits)


async def test_a_slip_in_output_from_gets_a_preferred_fix(client):
    text = SPEC.replace('from: "${ship.output}"', 'from: "${ship.outptu}"')
    repaired = await preferred_fix(client, "file:///tmp/s12c-from.stratum.yaml", text, "LG708")
    assert repaired == SPEC and load(repaired).ok


async def test_a_contract_field_keeps_its_name_in_the_preferred_fix(client):
    text = SPEC.replace("${build.output.result}", "${build.result}")
    repaired = await preferred_fix(client, "file:///tmp/s12c-field.stratum.yaml", text, "LG407")
    assert repaired == SPEC


AGENT_SPEC = """version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - {id: a, agent: myagent, do: "scan", out: R}
"""
BROKEN = '[agents.myagent]\ntype = "python"\ncallable = "agents:scan"\n\n[agents.other\n'


async def test_a_broken_configuration_reports_its_error_not_lg905(vscode, tmp_path):
    (tmp_path / "lockgate.toml").write_text(BROKEN)
    spec = tmp_path / "flow.stratum.yaml"
    spec.write_text(AGENT_SPEC)
    codes = {d.code: d for d in await open_doc(vscode, spec.as_uri(), AGENT_SPEC)}
    assert "LG905" not in codes
    assert "LG111" in codes and "lockgate.toml" in codes["LG111"].message
    validate = subprocess.run([sys.executable, "-m", "lockgate", "validate", str(spec)],
                              capture_output=True, text=True, cwd=tmp_path)
    assert "LG111" in validate.stdout + validate.stderr and "LG905" not in validate.stdout + validate.stderr


async def test_the_configured_agent_is_still_known_once_fixed(vscode, tmp_path):
    (tmp_path / "lockgate.toml").write_text(BROKEN.replace("[agents.other\n", ""))
    uri = (tmp_path / "flow.stratum.yaml").as_uri()
    codes = {d.code for d in await open_doc(vscode, uri, AGENT_SPEC)}
    assert not codes & {"LG905", "LG111"}
