"""Tool errors cut a long value of the call however the error quotes it (review r3 #8: an input
key with a double quote is written JSON style, ``input["say \\"hi\\" ..."]``, which the cuts did
not know: a 1 MiB key came back in full in the error's text and again in its structured
content)."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_support import CHECKED, connect

from lockgate.mcp.excerpts import LONG_RUN, cut_quotes

BODY = "x" * (1024 * 1024)
SMALL = 1500  # an error's text and structured content, each


async def test_keys_written_with_json_escapes_are_cut(tmp_path: Path) -> None:
    keys = ['say "hi" ' + BODY,  # JSON escapes the quotes
            "naïve \\ path " + BODY,  # a backslash, and non-ASCII kept as is
            "two\nlines " + BODY]  # a line break written as \n
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        for key in keys:
            result = await s.raw("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "t", key: 1}})
            text = "\n".join(block.text for block in result.content)
            data = json.dumps(result.structured_content, ensure_ascii=False)
            assert result.is_error and result.structured_content["error_type"] == "input_validation_failed"
            assert len(text) < SMALL and len(data) < SMALL, (key[:12], len(text), len(data))
            written = json.dumps(key[:20], ensure_ascii=False)[:-1]  # the key's start, as the error writes it
            assert f"input[{written}" in text and f"({len(key)} characters)" in text, text[:300]


def test_a_long_run_of_text_quoted_some_other_way_is_cut_too() -> None:
    value = "abc" * 2000
    message = f"refused: {value.encode().hex()[:3000]} and <<{value[::-1]}>>"  # neither as is nor quoted
    cut, data = cut_quotes(message, {"message": message}, {"arg": value})
    assert cut == data["message"] and len(cut) < 400
    assert cut.startswith("refused: 616263") and "(3000 characters)" in cut and "(6004 characters)" in cut
    short = "see /a/path/" + "p" * (LONG_RUN - 20) + " for more"  # a run up to LONG_RUN is kept
    assert cut_quotes(short, {}, {"arg": value})[0] == short
