"""Language server latency: a real client over stdio against ``lockgate lsp`` and, when it is
installed, the Red Hat YAML language server with the same document and our JSON Schema.

Measures, on generated 200- and 2,000-line specs, after one-character edits (medians and p95,
milliseconds):

- ``diagnostics``: edit -> diagnostics. Lockgate's are pulled (``textDocument/diagnostic``), so
  the round trip is the server's analysis with no debounce; the in-process analysis (plus the
  conversion to LSP) is printed too, as the server-side time. yaml-language-server only pushes
  diagnostics, after a fixed 200 ms debounce, which is subtracted from its edit -> publish time.
- ``completion``/``hover``: once the edit's diagnostics are in (the document is analysed).
  ``completion`` is asked after ``result.`` in an expression (a handful of fields);
  ``completion ${`` right after the ``${`` of the last step's reference, where every step
  the step may read is offered (hundreds in the 2,000-line spec).
- ``completion (typing)``/``hover (typing)``: sent right after the edit, as an editor does
  while the user types; a server that analyses before answering pays for it here.

and the servers' resident memory at the end of each session (peak and current, MB, from
``/proc``; Linux only).

``--baseline REF`` also runs the language server as of git commit ``REF`` (its
``lockgate/lsp`` package, everything else from the working tree) in the same run, and prints
the ratios of the two.

    python benchmarks/lsp.py [--yls PATH/TO/yaml-language-server] [--edits 30] [--baseline REF]

Install the peer into a temporary folder: ``cd /tmp/yls && npm i yaml-language-server``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import percentile, print_table

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


REQUESTS = ("diagnostics", "completion", "completion ${", "hover", "completion (typing)", "hover (typing)")


async def session(command: list[str], text: str, uri: str, *, pull: bool, settings: dict, edits: int,
                  env: dict | None = None, cwd: str | None = None) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Request latencies (seconds) of one server session, and the server's memory at its end."""
    client = Client(settings)
    await client.start_io(*command, env=env, cwd=cwd)
    pid = client._server.pid if client._server is not None else None
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
    col = lines[target].index("0.5") + 2
    comp_at = lsp.Position(line=target, character=lines[target].index("result.summary") + len("result."))
    hover_at = lsp.Position(line=target - 2, character=lines[target - 2].index("out:") + 1)
    ref_line = next(i for i in range(len(lines) - 1, 0, -1) if "${s" in lines[i])
    ref_at = lsp.Position(line=ref_line, character=lines[ref_line].index("${s") + 2)
    results: dict[str, list[float]] = {name: [] for name in REQUESTS}

    async def diagnostics() -> float:
        start = time.perf_counter()
        if pull:
            await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(text_document=doc))
            return time.perf_counter() - start
        stamp, _ = await asyncio.wait_for(client.published.get(), 30)
        return max(0.0, stamp - start - YLS_DEBOUNCE_S)

    async def timed(request) -> float:
        start = time.perf_counter()
        await request
        return time.perf_counter() - start

    def complete(at: lsp.Position = comp_at):
        return client.text_document_completion_async(lsp.CompletionParams(text_document=doc, position=at))

    def hover():
        return client.text_document_hover_async(lsp.HoverParams(text_document=doc, position=hover_at))

    await diagnostics()
    for n in range(2 * edits):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=n + 2),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=target, character=col), end=lsp.Position(line=target, character=col + 1)),
                text=str(n % 10))]))
        if n % 2 == 0:  # the editor waits for the diagnostics, then asks
            results["diagnostics"].append(await diagnostics())
            results["completion"].append(await timed(complete()))
            results["completion ${"].append(await timed(complete(ref_at)))
            results["hover"].append(await timed(hover()))
        else:  # the editor asks while the user types
            results["completion (typing)"].append(await timed(complete()))
            results["hover (typing)"].append(await timed(hover()))
            await diagnostics()
    memory = resident_mb(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return results, memory


def resident_mb(pid: int | None) -> dict[str, float]:
    """Peak (VmHWM) and current (VmRSS) resident memory of a process in MB; empty off Linux."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, TypeError):
        return {}
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {name: int(fields[key].split()[0]) / 1024 for name, key in (("peak", "VmHWM"), ("now", "VmRSS")) if key in fields}


def in_process(text: str, runs: int) -> list[float]:
    """Server-side diagnostics: the analysis the server runs after an edit, and its conversion."""
    from lockgate.lsp import diagnostics as diag
    from lockgate.lsp.documents import analyze

    samples = []
    for n in range(runs):
        start = time.perf_counter()
        analysis = analyze("file:///bench.stratum.yaml", text.replace("0.5", f"0.{n % 9 + 1}", 1), n)
        diag.to_lsp(analysis)
        samples.append(time.perf_counter() - start)
    return samples


def baseline_tree(ref: str, into: Path) -> Path:
    """A copy of the working tree's ``lockgate`` package with ``lockgate/lsp`` as of ``ref``."""
    root = Path(__file__).resolve().parents[1]
    shutil.copytree(root / "lockgate", into / "lockgate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(into / "lockgate" / "lsp")
    archive = subprocess.run(["git", "-C", str(root), "archive", ref, "lockgate/lsp"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--yls", default="/tmp/yls/node_modules/.bin/yaml-language-server")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--baseline", help="also run lockgate/lsp as of this git commit")
    parser.add_argument("--sizes", default="200,2000")
    args = parser.parse_args()
    from lockgate.dsl.schema import schema_path

    ours = [sys.executable, "-m", "lockgate", "lsp"]
    yls = [args.yls, "--stdio"] if os.path.exists(args.yls) else None
    rows = []
    memory: list[tuple[str, ...]] = []
    summary: dict[tuple[str, str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        servers: list[tuple[str, list[str], dict | None]] = [("lockgate", ours, None)]
        if args.baseline:
            # ``python -m`` puts the working directory first on sys.path: run it in the copy
            base = baseline_tree(args.baseline, Path(tmp) / "baseline")
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(base), os.environ.get("PYTHONPATH")]))}
            servers.insert(0, (f"lockgate@{args.baseline[:7]}", ours, env))
        for size in (int(s) for s in args.sizes.split(",")):
            text = spec(size)
            path = Path(tmp) / f"bench{size}.stratum.yaml"
            path.write_text(text, encoding="utf-8")
            uri = path.as_uri()
            analysis = in_process(text, args.edits)
            rows.append((f"{size}", "lockgate (in-process analysis)", "diagnostics", *_stats(analysis)))
            runs = {}
            for name, command, env in servers:
                cwd = env["PYTHONPATH"].split(os.pathsep)[0] if env else None
                runs[name], used = asyncio.run(session(command, text, uri, pull=True, settings={"lockgate": {"debounceMs": 0}},
                                                       edits=args.edits, env=env, cwd=cwd))
                memory.append((f"{size}", name, *(f"{used[k]:.0f}" if k in used else "-" for k in ("peak", "now"))))
            if yls:
                yaml_settings = {"yaml": {"schemas": {schema_path(): "*.stratum.yaml"}, "validate": True,
                                          "completion": True, "hover": True}}
                runs["yaml-language-server"], used = asyncio.run(
                    session(yls, text, uri, pull=False, settings=yaml_settings, edits=args.edits))
                memory.append((f"{size}", "yaml-language-server", *(f"{used[k]:.0f}" if k in used else "-" for k in ("peak", "now"))))
            for server, result in runs.items():
                for what, samples in result.items():
                    rows.append((f"{size}", server, what, *_stats(samples)))
                    summary[(str(size), server, what)] = (statistics.median(samples), percentile(samples, 0.95))
    print_table("LSP latency over stdio (ms; yaml-language-server diagnostics minus its 200 ms debounce)",
                rows, ("lines", "server", "request", "median", "p95"))
    _print_ratios(summary, [name for name, _, _ in servers], yls is not None)
    if memory:
        print_table("Server resident memory at the end of the session (MB)", memory, ("lines", "server", "peak", "now"))
    if not yls:
        print(f"\nyaml-language-server not found at {args.yls}; install it with npm to compare.")


def _print_ratios(summary: dict, servers: list[str], yls: bool) -> None:
    """How many times faster the current server is than the baseline and than the peer."""
    others = [s for s in servers if s != "lockgate"] + (["yaml-language-server"] if yls else [])
    rows = []
    for (size, server, what), (median, p95) in summary.items():
        if server != "lockgate":
            continue
        for other in others:
            theirs = summary.get((size, other, what))
            if theirs is not None:
                rows.append((size, what, f"{other} / lockgate", f"{theirs[0] / median:.1f}x", f"{theirs[1] / p95:.1f}x"))
    if rows:
        print_table("Ratios (other server's time / current lockgate's time; above 1 = lockgate faster)",
                    rows, ("lines", "request", "ratio", "median", "p95"))


def _stats(samples: list[float]) -> tuple[str, str]:
    return f"{statistics.median(samples) * 1000:.1f}", f"{percentile(samples, 0.95) * 1000:.1f}"


if __name__ == "__main__":
    main()
