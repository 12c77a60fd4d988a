"""Answers to requests the MCP transport cannot read, so a careless client is told, not left waiting.

The SDK's stdio transport parses each line with a strict JSON parser that refuses lone UTF-16
surrogates (``"\\ud800"``), nesting deeper than about 250 levels and numbers out of its range;
such a line reaches the server only as an exception and is dropped, and the client waits forever
for the answer to its request. :func:`answering_unreadable` sits between the transport and the
server: when the request's ``id`` can still be found at the top level of the line, it answers; a
``tools/call`` gets a tool error like any refused argument (``invalid_arguments``, nothing
changed), other methods a JSON-RPC parse error. A line that parses but is no valid request
(``jsonrpc`` missing or not "2.0", ``method`` not a string, ``params`` not an object, a batch)
is dropped the same way; with a readable ``id`` it gets an Invalid Request error (-32600), or
Invalid params (-32602) when only ``params`` is wrong. A notification, a response and a request
without a usable ``id`` are answered by nobody, as JSON-RPC says. A request line over the size
limit, which :mod:`lockgate.mcp.requestsize` drops unread, is answered the same way, with the
limit (and logged on stderr when its id is unknown). Everything else passes through unchanged.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any, TypeGuard

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

if TYPE_CHECKING:
    from .requestsize import Oversized, RequestLines

_INTERESTING = re.compile(r'["{}\[\]]')
# possessive: matching a string of a million escapes must not keep a million backtracking states
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
_SURROGATE = re.compile("[\ud800-\udfff]")
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
    if not _usable_id(rid):
        return None
    method = found.get("method")
    return rid, method if isinstance(method, str) else None


def _usable_id(rid: Any) -> TypeGuard[int | str]:
    """Whether an answer can carry ``rid``: a JSON-RPC id (integer or string) UTF-8 can write (an id
    with a lone surrogate cannot be sent back; answering it would end the server)."""
    if isinstance(rid, str):
        return not _SURROGATE.search(rid)
    return isinstance(rid, int) and not isinstance(rid, bool)


def answers(item: Exception) -> list[SessionMessage]:
    """The answers to what the transport could not read: none when there is no one to answer."""
    line = _raw_line(item)
    if line is not None:
        reply = _unparsed(line, _reason(item))
        return [reply] if reply is not None else []
    parsed = _parsed(item)
    batch = isinstance(parsed, list)
    replies = (_invalid(message, batch) for message in (parsed if batch else [parsed]))
    return [reply for reply in replies if reply is not None]


def _unparsed(line: str, reason: str) -> SessionMessage | None:
    """The answer to a line that is no JSON the transport reads, when its id can be found."""
    key = request_key(line)
    return None if key is None else _refusal(*key, "could not be read as JSON", reason)


def _refusal(rid: int | str, method: str | None, what: str, reason: str) -> SessionMessage:
    """The answer to request ``rid`` that was not read (the request ``what``, because ``reason``):
    a tool error for a ``tools/call``, a JSON-RPC parse error for any other method."""
    if method == "tools/call":
        message = (f"invalid_arguments: the request {what}: {reason}\nFix the arguments "
                   "as described and call the tool again; nothing was changed.")
        data = {"status": "error", "error_type": "invalid_arguments", "message": reason, "problems": [reason]}
        result = types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                      structured_content=data, is_error=True)
        reply: Any = types.JSONRPCResponse(jsonrpc="2.0", id=rid,
                                           result=result.model_dump(by_alias=True, exclude_none=True, mode="json"))
    else:
        reply = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
            code=types.PARSE_ERROR, message=f"the request {what}: {reason}"))
    return SessionMessage(reply)


def too_large(dropped: Oversized, limit: int) -> list[SessionMessage]:
    """The answer to a request line dropped for its size (see :mod:`lockgate.mcp.requestsize`);
    none when its id is unknown, which is said on stderr, the host's log of the server."""
    reason = (f"it is {dropped.size:,} bytes long, and a request may be at most {limit:,} bytes "
              f"({limit / 2**20:g} MiB); send less in one call (a spec is limited to 10 MB: give a large "
              "one as a file by `path`)")
    if dropped.key is None:
        print(f"lockgate mcp: a request was not read and cannot be answered (its id was not found): {reason}",
              file=sys.stderr, flush=True)
        return []
    return [_refusal(*dropped.key, "was not read", reason)]


def _invalid(message: Any, batch: bool) -> SessionMessage | None:
    """The error answering a parsed message that is no valid request, when it has a usable id and
    is not a response (which nobody waits for an answer to)."""
    if not isinstance(message, dict) or ("method" not in message and ("result" in message or "error" in message)):
        return None
    rid = message.get("id")
    if not _usable_id(rid):
        return None
    problems, params_only = _problems(message)
    if batch:
        problems.insert(0, "a batch (a JSON array of messages) is not supported: send each request as a line "
                           "of its own")
    code, kind = (types.INVALID_PARAMS, "Invalid params") if params_only and not batch else \
        (types.INVALID_REQUEST, "Invalid Request")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
        code=code, message=f"{kind}: " + "; ".join(problems or ["not a JSON-RPC 2.0 request"]))))


def _problems(message: dict[str, Any]) -> tuple[list[str], bool]:
    """What is wrong with a request's envelope, and whether only its ``params`` is."""
    problems: list[str] = []
    if message.get("jsonrpc") != "2.0":
        problems.append('`jsonrpc` must be "2.0", ' + _not(message, "jsonrpc"))
    if not isinstance(message.get("method"), str):
        problems.append("`method` must be a string, " + _not(message, "method"))
    params_wrong = message.get("params") is not None and not isinstance(message["params"], dict)
    if params_wrong:
        problems.append("`params` must be an object of named parameters, " + _not(message, "params"))
    return problems, params_wrong and len(problems) == 1


def _not(message: dict[str, Any], key: str) -> str:
    """What the envelope's ``key`` is instead, for a problem's message."""
    if key not in message:
        return "but it is missing"
    value = message[key]
    if isinstance(value, str):
        return f"not {json.dumps(value[:40], ensure_ascii=False)}" + ("..." if len(value) > 40 else "")
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "an array", dict: "an object",
             type(None): "null"}
    return f"not {kinds.get(type(value), type(value).__name__)}"


async def answering_unreadable(source: ObjectReceiveStream[Any], sink: ObjectSendStream[Any],
                               replies: Any, lines: RequestLines | None = None) -> None:
    """Pass ``source`` on to ``sink``, answering unreadable requests on ``replies`` instead (and
    the requests ``lines``, the transport's input, dropped for their size); close ``sink`` when
    ``source`` ends, which ends the server."""
    async with sink:
        async for item in source:
            dropped = lines.take(item) if lines is not None and isinstance(item, Exception) else None
            if dropped is not None:  # logged, when there is no one to answer
                answered = too_large(dropped, lines.limit)  # type: ignore[union-attr]
            else:
                answered = answers(item) if isinstance(item, Exception) else []
                if not answered:
                    await sink.send(item)
            for reply in answered:
                await replies.send(reply)


def forward_streams() -> tuple[ObjectSendStream[Any], ObjectReceiveStream[Any]]:
    """The stream pair between :func:`answering_unreadable` and the server."""
    return anyio.create_memory_object_stream[Any](0)


def _raw_line(item: Exception) -> str | None:
    """The line itself, when the transport could not parse it as JSON."""
    if not isinstance(item, ValidationError):
        return None
    for error in item.errors():
        if error.get("type") == "json_invalid" and isinstance(error.get("input"), str):
            return error["input"]
    return None


def _parsed(item: Exception) -> Any:
    """The message the transport parsed but could not validate, as the SDK's errors carry it: the
    input of an error about the whole message, or of a field missing at its top level."""
    if not isinstance(item, ValidationError):
        return None
    for error in item.errors():
        loc = error.get("loc", ())
        if len(loc) == 1 or (len(loc) == 2 and error.get("type") == "missing"):
            return error.get("input")
    return None


def _reason(item: Exception) -> str:
    detail = item.errors()[0].get("msg", str(item)) if isinstance(item, ValidationError) else str(item)
    cause = next((text for needle, text in _CAUSES if needle in detail), None)
    return f"{cause} ({detail})" if cause else detail
