"""A quoted value missing its closing quote is reported at its opening quote, as a string that
runs on to the line where the next quote closes it, not as an indentation problem there."""

from __future__ import annotations

import pytest
from lsp_harness import open_doc

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-unclosed-quote.stratum.yaml"


async def test_unclosed_quote_is_reported_where_it_opens(client, review_spec):
    text = review_spec.replace('${implement.output}"\n        agent: codex', '${implement.output}\n        agent: codex')
    assert text != review_spec
    found = [d for d in await open_doc(client, URI, text) if d.code == "LG103"]
    assert len(found) == 1
    opened = text.splitlines().index('        do: "Review this change for correctness and risk: ${implement.output}')
    assert found[0].range.start.line == opened
    assert "quoted string is not closed on its line" in found[0].message
    assert "indentation" not in found[0].message
