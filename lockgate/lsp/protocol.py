"""The wire: pygls' ``LanguageServerProtocol`` made safe against malformed and hostile messages.

Three gaps of pygls are closed here:

* A request whose params do not deserialise (a negative line, a string for a number, a missing
  field) makes pygls show an "Invalid Params" message and drop the request, so the client waits
  for an answer forever. Here the request is answered with that error instead.
* A request after ``shutdown`` is dropped without an answer; LSP asks for an InvalidRequest
  error, and the client gets one.
* pygls keeps its own copy of every open document, updated before the server's handlers run;
  a ``didChange`` or ``didClose`` of a document that is not open raises there and pops an
  "Error in server" message up in the editor. The server keeps its own texts (see
  :mod:`lockgate.lsp.documents`), so the document-sync notifications go straight to its
  handlers and pygls' copy is not kept at all (nor paid for on every edit of a large document).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)

# What :meth:`LockgateProtocol.structure_message` returns for a request it answered already.
_ANSWERED = object()


class LockgateProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, answering undecodable requests and not mirroring documents."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not _is_request(data):
                raise  # a notification or response: nobody waits for an answer
            log.warning("answering undecodable %s request %r with an error", data.get("method"), data.get("id"))
            self._send_response(data["id"], error=exc.to_response_error())
            return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        if self._shutdown and isinstance(message, RPCRequest):
            self._answer_after_shutdown(message)
            return
        super().handle_message(message)

    def _answer_after_shutdown(self, request: Any) -> None:
        """pygls drops requests after ``shutdown``; LSP wants an InvalidRequest error, so the
        client stops waiting. A repeated ``shutdown`` is answered as the first one was."""
        if request.method == lsp.SHUTDOWN:
            self._send_response(request.id, result=None)
            return
        error = JsonRpcInvalidRequest("the server is shutting down").to_response_error()
        self._send_response(request.id, error=error)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams) -> Generator[Any, Any, None]:
        yield from self._to_user(lsp.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        yield from self._to_user(lsp.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams) -> Generator[Any, Any, None]:
        yield from self._to_user(lsp.TEXT_DOCUMENT_DID_CLOSE, params)

    def _to_user(self, method: str, params: Any) -> Generator[Any, Any, None]:
        """Hand the notification to the server's own handler (pygls' protocol for a builtin)."""
        handler = self.fm.features.get(method)
        if handler is not None:
            yield handler, (params,), None


def _is_request(data: Any) -> bool:
    """Whether a raw message is a request with an id an error response can carry."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("method"), str)
        and isinstance(data.get("id"), (int, str))
        and not isinstance(data.get("id"), bool)
    )
