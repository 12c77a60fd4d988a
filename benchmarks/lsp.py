"""Language server latency: a real client over stdio against ``lockgate lsp`` and, when it is
installed, the Red Hat YAML language server with the same document and our JSON Schema.

Measures, on generated 200- and 2,000-line specs: diagnostics after a one-character edit,
completion and hover (medians and p95, milliseconds). For Lockgate, diagnostics are pulled
(``textDocument/diagnostic``), so the round trip is the server's analysis with no debounce; the
in-process analysis time is printed too. yaml-language-server only pushes diagnostics, after a
fixed 200 ms debounce, which is subtracted from its edit -> publish time.

    python benchmarks/lsp.py [--yls PATH/TO/yaml-language-server] [--edits 30]

Install the peer into a temporary folder: ``cd /tmp/yls && npm i yaml-language-server``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import percentile, print_table  # noqa: E402

YLS_DEBOUNCE_S = 0.2
STEP = '''      - id: s{i}
        do: "Summarise ${{{prev}.output.summary}} for ${{input.topic}}"
        agent: claude
        out: Result
        ensure:
          - expr: "len(result.summary) > 0 && result.score >= 0.5"
        attempts: 2
'''


def spec(lines: int) -> str:
    head = ('version: 1\ncontracts:\n  Result:\n    summary: string\n    score: number\n    tags: string[]\n'
            'flows:\n  entry: main\n  main:\n    input:\n      topic: string\n    output:\n'
            '      from: "${s0.output}"\n      contract: Result\n    steps:\n'
            '      - id: s0\n        do: "Start on ${input.topic}"\n        out: Result\n')
    steps, i = [], 1
    while len(head.splitlines()) + 7 * len(steps) < lines:
        steps.append(STEP.format(i=i, prev=f"s{i - 1}"))
        i += 1
    return head + "".join(steps)


class Client(LanguageClient):
    def __init__(self, settings: dict) -> None:
        super().__init__("lockgate-bench", "1")
        self.published: asyncio.Queue = asyncio.Queue()
        settings_ = settings

        @self.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: lsp.PublishDiagnosticsParams) -> None:
            self.published.put_nowait((time.perf_counter(), params))

        @self.feature(lsp.WORKSPACE_CONFIGURATION)
        def _configuration(params: lsp.ConfigurationParams):
            return [settings_.get(item.section or "", None) for item in params.items]


async def session(command: list[str], text: str, uri: str, *, pull: bool, settings: dict, edits: int) -> dict[str, list[float]]:
    client = Client(settings)
    await client.start_io(*command)
    caps = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(configuration=True),
        text_document=lsp.TextDocumentClientCapabilities(
            diagnostic=lsp.DiagnosticClientCapabilities() if pull else None,
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(),
            hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
            completion=lsp.CompletionClientCapabilities(completion_item=lsp.ClientCompletionItemOptions(snippet_support=True)),
        ),
    )
    await client.initialize_async(lsp.InitializeParams(capabilities=caps, root_uri=Path(uri[7:]).parent.as_uri()))
    client.initialized(lsp.InitializedParams())
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=settings))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)))
    doc = lsp.TextDocumentIdentifier(uri=uri)
    lines = text.splitlines()
    target = next(i for i in range(len(lines) - 1, 0, -1) if "len(result.summary)" in lines[i])
    results: dict[str, list[float]] = {"diagnostics": [], "completion": [], "hover": []}
    if pull:
        await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(text_document=doc))
    else:
        await asyncio.wait_for(client.published.get(), 30)
    for n in range(edits):
        col = lines[target].index("0.5") + 2
        new = str(n % 10)
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=n + 2),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=target, character=col), end=lsp.Position(line=target, character=col + 1)),
                text=new)]))
        start = time.perf_counter()
        if pull:
            await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(text_document=doc))
            results["diagnostics"].append(time.perf_counter() - start)
        else:
            stamp, _ = await asyncio.wait_for(client.published.get(), 30)
            results["diagnostics"].append(max(0.0, stamp - start - YLS_DEBOUNCE_S))
        comp_at = lsp.Position(line=target, character=lines[target].index("result.summary") + len("result."))
        start = time.perf_counter()
        await client.text_document_completion_async(lsp.CompletionParams(text_document=doc, position=comp_at))
        results["completion"].append(time.perf_counter() - start)
        hover_at = lsp.Position(line=target - 2, character=lines[target - 2].index("out:") + 1)
        start = time.perf_counter()
        await client.text_document_hover_async(lsp.HoverParams(text_document=doc, position=hover_at))
        results["hover"].append(time.perf_counter() - start)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return results


def in_process(text: str, runs: int) -> list[float]:
    from lockgate.lsp.documents import analyze

    samples = []
    for n in range(runs):
        start = time.perf_counter()
        analyze("file:///bench.stratum.yaml", text.replace("0.5", f"0.{n % 9 + 1}", 1), n)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--yls", default="/tmp/yls/node_modules/.bin/yaml-language-server")
    parser.add_argument("--edits", type=int, default=30)
    args = parser.parse_args()
    from lockgate.dsl.schema import schema_path

    ours = [sys.executable, "-m", "lockgate", "lsp"]
    yls = [args.yls, "--stdio"] if os.path.exists(args.yls) else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (200, 2000):
            text = spec(size)
            path = Path(tmp) / f"bench{size}.stratum.yaml"
            path.write_text(text, encoding="utf-8")
            uri = path.as_uri()
            analysis = in_process(text, args.edits)
            rows.append((f"{size}", "lockgate (in-process analysis)", "diagnostics", *_stats(analysis)))
            runs = {"lockgate": asyncio.run(session(ours, text, uri, pull=True, settings={"lockgate": {"debounceMs": 0}}, edits=args.edits))}
            if yls:
                yaml_settings = {"yaml": {"schemas": {schema_path(): "*.stratum.yaml"}, "validate": True,
                                          "completion": True, "hover": True}}
                runs["yaml-language-server"] = asyncio.run(
                    session(yls, text, uri, pull=False, settings=yaml_settings, edits=args.edits))
            for server, result in runs.items():
                for what, samples in result.items():
                    rows.append((f"{size}", server, what, *_stats(samples)))
    print_table("LSP latency over stdio (ms; yaml-language-server diagnostics minus its 200 ms debounce)",
                rows, ("lines", "server", "request", "median", "p95"))
    if not yls:
        print(f"\nyaml-language-server not found at {args.yls}; install it with npm to compare.")


def _stats(samples: list[float]) -> tuple[str, str]:
    return f"{statistics.median(samples) * 1000:.1f}", f"{percentile(samples, 0.95) * 1000:.1f}"


if __name__ == "__main__":
    main()
