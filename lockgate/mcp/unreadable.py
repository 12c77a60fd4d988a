"""Answers to requests the MCP transport cannot read, so a careless client is told, not left waiting.

The SDK's stdio transport parses each line with a strict JSON parser that refuses lone UTF-16
surrogates (``"\\ud800"``), nesting deeper than about 250 levels and numbers out of its range;
such a line reaches the server only as an exception and is dropped, and the client waits forever
for the answer to its request. :func:`answering_unreadable` sits between the transport and the
server: when the request's ``id`` can still be found at the top level of the line, it answers; a
``tools/call`` gets a tool error like any refused argument (``invalid_arguments``, nothing
changed), other methods a JSON-RPC parse error. Everything else passes through unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

_INTERESTING = re.compile(r'["{}\[\]]')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
_CAUSES = (("recursion limit", "the JSON nests deeper than the transport reads (about 250 levels)"),
           ("surrogate", "a string holds a lone UTF-16 surrogate"),
           ("hex escape", "a string holds an invalid \\u escape (a lone UTF-16 surrogate?)"),
           ("out of range", "a number is too large"))


def request_key(line: str) -> tuple[int | str, str | None] | None:
    """(id, method) of a JSON-RPC request line that need not parse as a whole; None without an id."""
    found: dict[str, Any] = {}
    depth, at = 0, 0
    while len(found) < 2 and (hit := _INTERESTING.search(line, at)) is not None:
        at = hit.start()
        if line[at] != '"':
            depth += 1 if line[at] in "{[" else -1
            at += 1
            continue
        string = _STRING.match(line, at)
        if string is None:
            break
        at = string.end()
        colon = _SPACE.match(line, at).end()
        if depth == 1 and line.startswith(":", colon) and string.group() in ('"id"', '"method"'):
            try:
                found[string.group()[1:-1]], at = _DECODER.raw_decode(line, _SPACE.match(line, colon + 1).end())
            except ValueError:
                break
    rid = found.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    method = found.get("method")
    return rid, method if isinstance(method, str) else None


def answer(item: Exception) -> SessionMessage | None:
    """The answer to a request the transport could not read, None when there is no one to answer."""
    line = _raw_line(item)
    key = request_key(line) if line is not None else None
    if key is None:
        return None
    rid, method = key
    reason = _reason(item)
    if method == "tools/call":
        message = (f"invalid_arguments: the request could not be read as JSON: {reason}\nFix the arguments "
                   "as described and call the tool again; nothing was changed.")
        data = {"status": "error", "error_type": "invalid_arguments", "message": reason, "problems": [reason]}
        result = types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                      structured_content=data, is_error=True)
        reply: Any = types.JSONRPCResponse(jsonrpc="2.0", id=rid,
                                           result=result.model_dump(by_alias=True, exclude_none=True, mode="json"))
    else:
        reply = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
            code=types.PARSE_ERROR, message=f"the request could not be read as JSON: {reason}"))
    return SessionMessage(reply)


async def answering_unreadable(source: ObjectReceiveStream[Any], sink: ObjectSendStream[Any],
                               replies: Any) -> None:
    """Pass ``source`` on to ``sink``, answering unreadable requests on ``replies`` instead;
    close ``sink`` when ``source`` ends, which ends the server."""
    async with sink:
        async for item in source:
            reply = answer(item) if isinstance(item, Exception) else None
            if reply is None:
                await sink.send(item)
            else:
                await replies.send(reply)


def forward_streams() -> tuple[ObjectSendStream[Any], ObjectReceiveStream[Any]]:
    """The stream pair between :func:`answering_unreadable` and the server."""
    return anyio.create_memory_object_stream[Any](0)


def _raw_line(item: Exception) -> str | None:
    if not isinstance(item, ValidationError):
        return None
    for error in item.errors():
        if isinstance(error.get("input"), str):
            return error["input"]
    return None


def _reason(item: Exception) -> str:
    detail = item.errors()[0].get("msg", str(item)) if isinstance(item, ValidationError) else str(item)
    cause = next((text for needle, text in _CAUSES if needle in detail), None)
    return f"{cause} ({detail})" if cause else detail
