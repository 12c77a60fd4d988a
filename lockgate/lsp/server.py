"""The Lockgate language server: a pygls ``LanguageServer`` with one thin handler per feature.

Handlers only adapt: they find the document's analysis, convert the client's position to code
points, call a pure function of the feature's module, and convert the answer back. Every
handler is guarded: an exception is logged (and reported to the client's log) and the request
gets an empty answer, so a bug in one feature never takes the server down.

Analyses run on a worker thread (see :class:`DocumentStore`), started by a debounce after each
edit. Completion, hover and folding never wait for one: they answer from the current text and
the last good analysis. Diagnostics, navigation, rename, symbols, semantic tokens, inlay hints
and code actions need ranges exact for the current text, so they await its analysis (symbols
and semantic tokens, while the YAML is broken mid-edit, then fall back to the last analysis
that parsed, fitted to the current text). Semantic tokens, symbols and navigation, seconds of work on a large document, then run on a features
thread (:meth:`LockgateServer.off_loop`), so the event loop keeps answering meanwhile.

What an analysis reports depends on more than the text: the settings and the spec's project
configuration (``lockgate.toml``, ``pyproject.toml``: reported by ``workspace/didChangeWatchedFiles``
when the client watches them, as the server asks it to, else noticed on a save or a diagnostics
pull of any spec it governs). When
either changes, push clients get the diagnostics again, and pull clients (VS Code) are
asked to pull again (``workspace/diagnostic/refresh``, and the inlay hint and semantic token
refreshes when those answers change too): a pull client asks only after an edit otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from lockgate import __version__

from . import diagnostics as diag
from . import index
from .documents import Analysis, DocumentStore, path_of
from .framing import FramedInput
from .positions import Encoding, encoding_of
from .protocol import LockgateProtocol
from .settings import SECTION, Settings

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


class LockgateServer(LanguageServer):
    """The server state: open documents, settings and the diagnostics debouncer."""

    def __init__(self) -> None:
        super().__init__(
            "lockgate", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=LockgateProtocol,
        )
        self.documents = DocumentStore()
        self.settings = Settings()
        self.documents.max_bytes = self.settings.max_document_bytes
        #: one thread for the features whose first answer on a large document takes seconds
        #: (semantic tokens, symbols, the symbol index): the event loop keeps answering meanwhile
        self.features = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lockgate-features")
        self.debouncer = diag.Debouncer()
        self.shutdown_requested = False
        self.exit_code = 0

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio, then end with LSP's exit code: 1 for an ``exit`` that came without
        a ``shutdown`` (pygls computes it, but its loop swallows the ``SystemExit`` carrying it).
        Input that cannot be read on (see :mod:`lockgate.lsp.framing`) ends it with that error."""
        framed = FramedInput(stdin or sys.stdin.buffer, self._framing_problem)
        super().start_io(framed, stdout)  # type: ignore[arg-type]  # reads as pygls reads stdin
        if framed.failure is not None:
            raise framed.failure
        if self.exit_code:
            raise SystemExit(self.exit_code)

    def _framing_problem(self, message: str) -> None:
        """Log a problem of the input's framing, to the client too. Called on pygls' reading
        thread: a notification is written whole in one call, so it cannot split another."""
        log.error("%s", message)
        try:
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"lockgate: {message}"))
        except Exception:  # noqa: BLE001 - the client may be gone; the log has it
            log.debug("could not send the framing problem to the client", exc_info=True)

    def shutdown(self) -> None:
        """Stop serving; analyses still queued are dropped rather than run before the end."""
        super().shutdown()
        self.documents.shutdown()
        self.features.shutdown(wait=False, cancel_futures=True)

    # -- helpers used by handlers -----------------------------------------------------------------

    @property
    def encoding(self) -> Encoding:
        return encoding_of(self.workspace.position_encoding)

    @property
    def client_caps(self) -> lsp.ClientCapabilities | None:
        return self.client_capabilities

    async def analysis(self, uri: str) -> Analysis | None:
        """The analysis of the document as it is now (for diagnostics and exact ranges)."""
        return await self.documents.current(uri)

    async def usable(self, uri: str) -> Analysis | None:
        """The analysis to answer requests from while typing (last good IR if needed)."""
        return await self.documents.usable(uri)

    async def off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the features thread: a feature that takes seconds on a large
        document (and the GIL, in turns) no longer holds up diagnostics and completion."""
        return await asyncio.get_running_loop().run_in_executor(self.features, functools.partial(fn, *args))

    def apply_settings(self, settings: Settings) -> None:
        store = self.documents
        changed = _analysed_with(settings) != _analysed_with(self.settings)
        self.settings = settings
        store.agents, store.lint, store.max_bytes = settings.agents, settings.lint, settings.max_document_bytes
        if changed:
            store.invalidate()

    def refresh_client(self, *, diagnostics: bool = False, inlay_hints: bool = False, tokens: bool = False) -> None:
        """Ask the client to request again the answers that changed without an edit, as far as
        it supports being asked (diagnostics only when it pulls them: pushed ones are sent)."""
        caps = self.client_caps
        workspace = caps.workspace if caps else None
        asks = (
            (diagnostics and diag.supports_pull(caps), workspace and workspace.diagnostics, self.workspace_diagnostic_refresh),
            (inlay_hints, workspace and workspace.inlay_hint, self.workspace_inlay_hint_refresh),
            (tokens, workspace and workspace.semantic_tokens, self.workspace_semantic_tokens_refresh),
        )
        for wanted, support, request in asks:
            if wanted and support and support.refresh_support:
                request(None).add_done_callback(_log_refused)


def _analysed_with(settings: Settings) -> tuple[Any, ...]:
    """The settings an analysis depends on (a change of them makes every analysis stale)."""
    return settings.agents, settings.lint, settings.max_document_bytes


def _log_refused(answer: Any) -> None:
    """A client that fails a refresh request keeps what it shows; nothing else to do."""
    if not answer.cancelled() and answer.exception() is not None:
        log.info("the client refused a refresh request: %r", answer.exception())


def guarded(default: Any = None) -> Callable[[F], F]:
    """Catch, log and swallow any exception of a handler; answer ``default`` instead."""

    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def sync_guard(ls: LockgateServer, *args: Any) -> Any:
            try:
                return handler(ls, *args)
            except JsonRpcException:
                raise  # a deliberate error answer (e.g. a refused rename)
            except Exception as exc:  # noqa: BLE001 - the server must survive any handler bug
                _report(ls, handler.__name__, exc)
                return default

        @functools.wraps(handler)
        async def async_guard(ls: LockgateServer, *args: Any) -> Any:
            try:
                return await handler(ls, *args)
            except JsonRpcException:
                raise
            except Exception as exc:  # noqa: BLE001
                _report(ls, handler.__name__, exc)
                return default

        import inspect

        return async_guard if inspect.iscoroutinefunction(handler) else sync_guard  # type: ignore[return-value]

    return wrap


def _report(ls: LockgateServer, name: str, exc: Exception) -> None:
    log.exception("handler %s failed", name)
    try:
        ls.window_log_message(
            lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"lockgate: {name} failed: {exc!r}")
        )
    except Exception:  # not even logging may crash the server
        log.debug("could not forward the error to the client", exc_info=True)


# How long the analysis thread may hold the GIL before a waiting request handler gets it (the
# interpreter's default is 5 ms, paid on every handoff a request needs while an analysis runs).
SWITCH_INTERVAL_S = 0.0005


def create_server() -> LockgateServer:
    """A fresh server with every feature registered (and the interpreter tuned for it: the
    server process runs nothing else)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    ls = LockgateServer()
    _register_sync(ls)
    _register_diagnostics(ls)
    _register_features(ls)
    return ls


# -- lifecycle, settings and document sync -------------------------------------------------------------


def _user_error(message: str) -> Exception:
    """An error the client shows to the user (a refused rename), not a server bug."""
    return JsonRpcException(message, code=int(lsp.LSPErrorCodes.RequestFailed))


def workspace_edit(uri: str, analysis: Analysis, edits, encoding: Encoding) -> lsp.WorkspaceEdit:
    """Edits of one document, as an LSP workspace edit with the document's version."""
    return lsp.WorkspaceEdit(
        document_changes=[
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=analysis.version),
                edits=[lsp.TextEdit(range=analysis.lines.range_to_client(e.range, encoding), new_text=e.new_text) for e in edits],
            )
        ]
    )


def _register_sync(ls: LockgateServer) -> None:
    @ls.feature(lsp.INITIALIZE)
    @guarded()
    def initialize(ls: LockgateServer, params: lsp.InitializeParams) -> None:
        ls.apply_settings(Settings.from_client(params.initialization_options))

    @ls.feature(lsp.INITIALIZED)
    @guarded()
    async def initialized(ls: LockgateServer, params: lsp.InitializedParams) -> None:
        before = ls.settings
        if await _pull_settings(ls) and ls.documents.uris():  # opened while the settings came
            _settings_changed(ls, before, republish=_analysed_with(before) != _analysed_with(ls.settings))
        await _watch_configuration_files(ls)

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded()
    async def did_change_configuration(ls: LockgateServer, params: lsp.DidChangeConfigurationParams) -> None:
        before = ls.settings
        if not await _pull_settings(ls) and params.settings is not None:
            ls.apply_settings(Settings.from_client(params.settings))
        _settings_changed(ls, before, republish=True)

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded()
    def did_change_watched_files(ls: LockgateServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        _configuration_changed(ls, {str(Path(path).parent) for change in params.changes
                                    if (path := path_of(change.uri)) is not None and Path(path).name in CONFIGURATION_FILES})

    @ls.feature(lsp.SHUTDOWN)
    def on_shutdown(ls: LockgateServer, *args: Any) -> None:
        ls.shutdown_requested = True

    @ls.feature(lsp.EXIT)
    def on_exit(ls: LockgateServer, *args: Any) -> None:
        ls.exit_code = 0 if ls.shutdown_requested else 1

    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guarded()
    def did_open(ls: LockgateServer, params: lsp.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        ls.documents.open(doc.uri, doc.text, doc.version, doc.language_id)
        _schedule(ls, doc.uri, 0)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @guarded()
    def did_change(ls: LockgateServer, params: lsp.DidChangeTextDocumentParams) -> None:
        doc = params.text_document
        ls.documents.change(doc.uri, params.content_changes, doc.version, ls.encoding)
        _schedule(ls, doc.uri, ls.settings.debounce_ms / 1000)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guarded()
    def did_save(ls: LockgateServer, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        _configuration_changed(ls, ls.documents.revalidate(uri))  # its lockgate.toml changed, unwatched
        _schedule(ls, uri, 0)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @guarded()
    def did_close(ls: LockgateServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.debouncer.cancel(uri)
        ls.documents.close(uri)
        index.forget(uri)
        if not diag.supports_pull(ls.client_caps):
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _settings_changed(ls: LockgateServer, before: Settings, *, republish: bool) -> None:
    """After new settings: push every open document's diagnostics again (when ``republish``),
    and ask a client for what it has to request again to see the change."""
    if republish:
        for uri in ls.documents.uris():
            _schedule(ls, uri, 0)
    after = ls.settings
    analysed = _analysed_with(before) != _analysed_with(after)
    ls.refresh_client(
        diagnostics=analysed,
        inlay_hints=analysed or before.inlay_hints != after.inlay_hints,
        tokens=before.max_document_bytes != after.max_document_bytes,  # a document (no longer) too large
    )


def _configuration_changed(ls: LockgateServer, folders: set[str]) -> None:
    """After a project configuration in one of ``folders`` changed (reported by the client's
    watcher, or noticed at a save or a pull): analyse every open document it governs again,
    push their diagnostics again, and ask a pull client to pull again."""
    stale = ls.documents.invalidate(folders) if folders else []
    for uri in stale:
        _schedule(ls, uri, 0)
    if stale:
        ls.refresh_client(diagnostics=True)


#: The files a project's configuration is read from (see :mod:`.projectagents`).
CONFIGURATION_FILES = ("lockgate.toml", "pyproject.toml")


async def _watch_configuration_files(ls: LockgateServer) -> None:
    """Ask the client to report changes of the project configuration files, when it can be
    asked (``workspace/didChangeWatchedFiles`` with dynamic registration)."""
    caps = ls.client_caps
    watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
    if not (watched and watched.dynamic_registration):
        return
    options = lsp.DidChangeWatchedFilesRegistrationOptions(
        watchers=[lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIGURATION_FILES]
    )
    registration = lsp.Registration(id="lockgate-configuration-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                    register_options=options)
    try:
        await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # without the watcher, a save or a pull still sees the change
        log.info("the client did not watch the configuration files: %r", exc)


async def _pull_settings(ls: LockgateServer) -> bool:
    """Ask the client for the ``lockgate`` section; False when it cannot answer."""
    caps = ls.client_caps
    if not (caps and caps.workspace and caps.workspace.configuration):
        return False
    try:
        [raw] = await ls.workspace_configuration_async(
            lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)])
        )
    except Exception:  # a client that fails this request keeps the defaults
        log.warning("workspace/configuration failed; keeping the current settings", exc_info=True)
        return False
    ls.apply_settings(Settings.from_client(raw))
    return True


# -- diagnostics ----------------------------------------------------------------------------------


def _schedule(ls: LockgateServer, uri: str, delay: float) -> None:
    """Analyse ``uri`` after ``delay`` seconds (unless edited again meanwhile) and push its
    diagnostics to clients that do not pull them."""
    ls.debouncer.schedule(uri, delay, lambda: _refresh(ls, uri))


async def _refresh(ls: LockgateServer, uri: str) -> None:
    analysis = await ls.analysis(uri)
    if analysis is None or diag.supports_pull(ls.client_caps) or uri not in ls.documents:
        return
    items = diag.to_lsp(analysis, ls.encoding, **diag.client_options(ls.client_caps))
    log.debug("%s v%s analysed in %.1f ms", uri, analysis.version, analysis.elapsed_ms)
    ls.text_document_publish_diagnostics(
        lsp.PublishDiagnosticsParams(uri=uri, version=analysis.version, diagnostics=items)
    )


def _register_diagnostics(ls: LockgateServer) -> None:
    @ls.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(identifier=diag.SOURCE, inter_file_dependencies=False, workspace_diagnostics=False),
    )
    @guarded(lsp.FullDocumentDiagnosticReport(items=[]))
    async def document_diagnostic(ls: LockgateServer, params: lsp.DocumentDiagnosticParams):
        uri = params.text_document.uri
        _configuration_changed(ls, ls.documents.revalidate(uri))  # a lockgate.toml changed on disk unseen
        analysis = await ls.analysis(uri)
        if analysis is None:
            return lsp.FullDocumentDiagnosticReport(items=[])
        result_id = f"{analysis.version}:{analysis.serial}"
        if params.previous_result_id == result_id:
            return lsp.UnchangedDocumentDiagnosticReport(result_id=result_id)
        items = diag.to_lsp(analysis, ls.encoding, **diag.client_options(ls.client_caps))
        return lsp.FullDocumentDiagnosticReport(items=items, result_id=result_id)


# -- language features ----------------------------------------------------------------------------


def _register_features(ls: LockgateServer) -> None:
    from . import (
        code_actions,
        completion,
        folding,
        hover,
        inlay_hints,
        navigation,
        rename,
        semantic_tokens,
        symbols,
    )
    from .context import context_at

    async def at(params) -> tuple[Analysis, Any] | None:
        """The usable analysis and the cursor in code points, or None for unknown documents."""
        analysis = await ls.usable(params.text_document.uri)
        if analysis is None:
            return None
        return analysis, analysis.lines.from_client(params.position, ls.encoding)

    @ls.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=completion.TRIGGER_CHARACTERS))
    @guarded(None)
    async def complete(ls: LockgateServer, params: lsp.CompletionParams):
        found = await at(params)
        if found is None:
            return None
        analysis, pos = found
        if analysis.lines.splits_character(params.position, ls.encoding):
            # every item's edit must contain the cursor, and none can end inside a character
            return lsp.CompletionList(is_incomplete=False, items=[])
        items = completion.complete(analysis, context_at(analysis.outline, pos), ls.settings.agents)
        caps = ls.client_caps
        return completion.to_lsp(items, analysis, ls.encoding, completion.supports_snippets(caps),
                                 completion.supports_as_is(caps), completion.supports_insert_replace(caps))

    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded(None)
    async def on_hover(ls: LockgateServer, params: lsp.HoverParams):
        found = await at(params)
        if found is None:
            return None
        analysis, pos = found
        result = hover.hover(analysis, pos)
        if result is None:
            return None
        text, rng = result
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
            range=analysis.lines.range_to_client(rng, ls.encoding) if rng is not None else None,
        )

    async def exact(params) -> tuple[Analysis, Any] | None:
        """Navigation needs exact ranges: only an analysis of the current text will do."""
        analysis = await ls.analysis(params.text_document.uri)
        if analysis is None or not analysis.parsed:
            return None
        return analysis, analysis.lines.from_client(params.position, ls.encoding)

    @ls.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @guarded([])
    async def definition(ls: LockgateServer, params: lsp.DefinitionParams):
        found = await exact(params)
        if found is None:
            return []
        analysis, pos = found
        ranges = await ls.off_loop(navigation.definition, analysis, pos)
        return navigation.locations(params.text_document.uri, ranges, analysis, ls.encoding)

    @ls.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @guarded([])
    async def references(ls: LockgateServer, params: lsp.ReferenceParams):
        found = await exact(params)
        if found is None:
            return []
        analysis, pos = found
        include = params.context.include_declaration
        ranges = await ls.off_loop(lambda: navigation.references(analysis, pos, include_declaration=include))
        return navigation.locations(params.text_document.uri, ranges, analysis, ls.encoding)

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @guarded([])
    async def highlight(ls: LockgateServer, params: lsp.DocumentHighlightParams):
        found = await exact(params)
        if found is None:
            return []
        analysis, pos = found
        return navigation.highlights_to_lsp(await ls.off_loop(navigation.highlights, analysis, pos), analysis, ls.encoding)

    @ls.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    @guarded(None)
    async def prepare_rename(ls: LockgateServer, params: lsp.PrepareRenameParams):
        analysis = await ls.analysis(params.text_document.uri)
        if analysis is None:
            return None
        try:
            rng, name = rename.prepare(analysis, analysis.lines.from_client(params.position, ls.encoding))
        except rename.RenameError as exc:
            raise _user_error(str(exc)) from None
        return lsp.PrepareRenamePlaceholder(range=analysis.lines.range_to_client(rng, ls.encoding), placeholder=name)

    @ls.feature(lsp.TEXT_DOCUMENT_RENAME, lsp.RenameOptions(prepare_provider=True))
    @guarded(None)
    async def on_rename(ls: LockgateServer, params: lsp.RenameParams):
        analysis = await ls.analysis(params.text_document.uri)
        if analysis is None:
            return None
        try:
            edits = rename.rename(analysis, analysis.lines.from_client(params.position, ls.encoding), params.new_name)
        except rename.RenameError as exc:
            raise _user_error(str(exc)) from None
        return workspace_edit(params.text_document.uri, analysis, edits, ls.encoding)

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded([])
    async def document_symbol(ls: LockgateServer, params: lsp.DocumentSymbolParams):
        uri = params.text_document.uri
        analysis = await ls.documents.outline(uri)  # mid-edit: the last analysis that parsed
        if analysis is None or not analysis.parsed:
            return []
        doc = ls.documents.doc(uri)
        lines = doc.lines if doc is not None else analysis.lines  # ranges clamped into the text as it is
        return await ls.off_loop(lambda: symbols.to_lsp(symbols.document_symbols(analysis), lines, ls.encoding))

    @ls.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, semantic_tokens.LEGEND)
    @guarded(lsp.SemanticTokens(data=[]))
    async def tokens_full(ls: LockgateServer, params: lsp.SemanticTokensParams):
        uri = params.text_document.uri
        analysis = await ls.documents.outline(uri)  # mid-edit: the last analysis that parsed
        doc = ls.documents.doc(uri)
        if analysis is None or doc is None or not analysis.parsed:
            return lsp.SemanticTokens(data=[])
        if analysis.doc is doc:
            return lsp.SemanticTokens(data=await ls.off_loop(semantic_tokens.data, analysis, ls.encoding))
        return lsp.SemanticTokens(data=await ls.off_loop(semantic_tokens.carried, analysis, doc, ls.encoding))

    @ls.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    @guarded([])
    async def hints(ls: LockgateServer, params: lsp.InlayHintParams):
        analysis = await ls.analysis(params.text_document.uri)
        if analysis is None or not ls.settings.inlay_hints:
            return []
        rng = analysis.lines.range_from_client(params.range, ls.encoding)
        return inlay_hints.to_lsp(inlay_hints.inlay_hints(analysis, rng), analysis, ls.encoding)

    @ls.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Source]),
    )
    @guarded([])
    async def actions(ls: LockgateServer, params: lsp.CodeActionParams):
        uri = params.text_document.uri
        analysis = await ls.analysis(uri)
        if analysis is None:
            return []
        rng = analysis.lines.range_from_client(params.range, ls.encoding)
        options = diag.client_options(ls.client_caps)
        out: list[lsp.CodeAction | lsp.Command] = []
        for action in code_actions.quick_fixes(analysis, rng):
            related = diag.to_lsp_one(action.diagnostic, analysis, ls.encoding, **options) if action.diagnostic else None
            out.append(lsp.CodeAction(
                title=action.title, kind=lsp.CodeActionKind.QuickFix, is_preferred=action.preferred or None,
                diagnostics=[related] if related else None,
                edit=workspace_edit(uri, analysis, action.edits, ls.encoding),
            ))
        flow = code_actions.flow_at(analysis, rng.start)
        if flow is not None:
            out.append(lsp.CodeAction(
                title=f"Show flow graph of '{flow}'", kind=lsp.CodeActionKind.Source,
                command=lsp.Command(title="Show flow graph", command=code_actions.SHOW_GRAPH, arguments=[uri, flow]),
            ))
        return out

    @ls.command(code_actions.SHOW_GRAPH)
    @guarded(None)
    async def show_graph(ls: LockgateServer, *args: Any):
        uri = args[0] if args and isinstance(args[0], str) else None
        flow = args[1] if len(args) > 1 and isinstance(args[1], str) else None
        fmt = args[2] if len(args) > 2 and args[2] in ("mermaid", "dot") else "mermaid"
        analysis = await ls.analysis(uri) if uri else None
        if analysis is None:
            raise _user_error(f"{uri!r} is not an open document")
        try:
            return code_actions.flow_graph_text(analysis, flow, fmt)
        except ValueError as exc:
            raise _user_error(str(exc)) from None

    @ls.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded([])
    def folding_range(ls: LockgateServer, params: lsp.FoldingRangeParams):
        doc = ls.documents.doc(params.text_document.uri)  # the outline of the text; no analysis needed
        if doc is None:
            return []
        return folding.to_lsp(folding.folding_ranges(doc.outline), ls.client_caps)
