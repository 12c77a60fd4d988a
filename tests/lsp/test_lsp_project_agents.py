"""The editor reads the agents a spec's project configures (the nearest lockgate.toml) as
`lockgate validate` does: an agent configured there gets no "not configured" warning (LG905),
one configured nowhere still does, and an edit to the configuration is seen at the next
analysis (review s8-r8 #1: the examples' own agents were flagged in the editor)."""

from __future__ import annotations

import pytest
from lsp_harness import open_doc

pytestmark = pytest.mark.asyncio(loop_scope="session")

SPEC = """version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - {id: a, agent: scanner, do: "scan", out: R}
      - {id: b, after: [a], agent: stranger, do: "more", out: R}
"""
CONFIG = '[agents.scanner]\ntype = "python"\ncallable = "agents:scanner"\n'


async def test_agents_of_the_nearest_configuration_are_known(vscode, tmp_path):
    (tmp_path / "lockgate.toml").write_text(CONFIG)
    (tmp_path / "specs").mkdir()
    uri = (tmp_path / "specs" / "flow.stratum.yaml").as_uri()
    flagged = [d.message for d in await open_doc(vscode, uri, SPEC) if d.code == "LG905"]
    assert len(flagged) == 1 and "'stranger'" in flagged[0]


async def test_without_a_configuration_both_are_flagged(vscode, tmp_path):
    uri = (tmp_path / "flow.stratum.yaml").as_uri()
    flagged = [d.message for d in await open_doc(vscode, uri, SPEC) if d.code == "LG905"]
    assert len(flagged) == 2
