"""Python-function agents for examples/health.stratum.yaml.

Each agent gets the rendered task (``task.prompt``) and returns the step's output as JSON data.
They do real work on the files under the given root, so the flow's checks have something to
check: Lockgate validates every output against its contract and every ``ensure``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

REPORT = Path(".lockgate/health-report.md")


def scanner(task):
    """List the Python files under the root named at the end of the prompt."""
    root = Path(task.prompt.rsplit(" under ", 1)[1].strip())
    if not root.is_dir():
        raise FileNotFoundError(f"no directory {root}")
    return {"files": sorted(str(p) for p in root.rglob("*.py"))}


def measurer(task):
    """Count lines, functions, documented functions and TODO markers of one file."""
    path = task.prompt.removeprefix("Measure ").strip()
    text = Path(path).read_text(encoding="utf-8")
    functions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return {
        "path": path,
        "lines": text.count("\n") + 1,
        "functions": len(functions),
        "documented": sum(1 for f in functions if ast.get_docstring(f)),
        "todos": text.count("TODO"),
    }


def reporter(task):
    """Aggregate the measurements (the JSON after 'measurements: ') into a Markdown report."""
    stats = [s for s in json.loads(task.prompt.split("measurements: ", 1)[1]) if s]
    functions = sum(s["functions"] for s in stats)
    documented = sum(s["documented"] for s in stats)
    largest = max(stats, key=lambda s: s["lines"])
    lines = [
        "# Code health",
        "",
        f"{len(stats)} files, {sum(s['lines'] for s in stats)} lines, "
        f"{documented}/{functions} functions documented.",
        "",
        "| file | lines | functions | documented | TODOs |",
        "|---|---:|---:|---:|---:|",
        *(f"| {s['path']} | {s['lines']} | {s['functions']} | {s['documented']} | {s['todos']} |"
          for s in sorted(stats, key=lambda s: -s["lines"])),
    ]
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {
        "path": str(REPORT),
        "files": len(stats),
        "lines": sum(s["lines"] for s in stats),
        "doc_coverage": documented / functions if functions else 1.0,
        "largest": largest["path"],
    }
