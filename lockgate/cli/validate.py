"""``lockgate validate`` and ``lockgate schema``."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import click

from ..dsl.diagnostics import ZERO_RANGE, Diagnostic, Range

SPEC_GLOBS = ("*.stratum.yaml", "*.stratum.yml")
#: How much of a broken configuration file is read to show the line of its error.
_EXCERPT_BYTES = 1 << 20


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
    help="text: excerpts with carets; json: the diagnostics as data; github: workflow annotations.",
)
@click.option("--no-lint", is_flag=True, help="Leave out advisory warnings (LG9xx).")
@click.option("--agent", "agents", multiple=True, metavar="NAME",
              help="An agent name to accept besides those of the nearest lockgate.toml.")
def validate(paths: tuple[str, ...], fmt: str, no_lint: bool, agents: tuple[str, ...]) -> None:
    """Check spec files and report every problem with its exact location.

    PATHS are files, directories (every *.stratum.yaml / *.stratum.yml below) or - for stdin.
    A broken lockgate.toml (or [tool.lockgate]) that a spec would run with is an error too.
    Exit status: 0 valid, 1 errors found, 2 usage error or unreadable file, 74 the report
    could not be written (a full disk).
    """
    try:
        sources = list(_collect(paths))
    except OSError as exc:
        raise click.ClickException(str(exc)) from exc
    if not sources:
        _fail_usage("no spec files found (looked for *.stratum.yaml and *.stratum.yml)")
    reports = list(_check(sources, agents, lint=not no_lint))
    _print(reports, fmt)
    if any(r.kind == "unreadable" for r in reports):
        sys.exit(2)
    sys.exit(1 if any(d.is_error for r in reports for d in r.diagnostics) else 0)


@dataclass(frozen=True)
class _Report:
    """What validate reports of one file: a spec, the configuration a spec would run with, or
    a file it could not read. ``text`` is the file's text, for excerpts."""

    name: str
    text: str
    diagnostics: Sequence[Diagnostic]
    kind: Literal["spec", "config", "unreadable"] = "spec"


def _check(sources, agents: tuple[str, ...], *, lint: bool) -> Iterator[_Report]:
    """A report per spec file, and per broken configuration (once, before the first spec
    that would run with it)."""
    from ..dsl.codes import AGENT_CONFIG_CODES

    told: set[str] = set()
    for name, loader in sources:
        project = _configured_agents(name)
        if project.problem is not None and project.problem.name not in told:
            told.add(project.problem.name)
            yield project.problem
        try:
            result = loader(agents=[*agents, *project.agents] or None, lint=lint)
        except OSError as exc:
            reason = f"cannot read: {exc.strerror or exc}"
            yield _Report(name, "", (_problem("LG110", reason),), "unreadable")
            continue
        diagnostics = result.diagnostics
        if project.problem is not None:  # which agents it configures is unknown: the error says why
            diagnostics = [d for d in diagnostics if d.code not in AGENT_CONFIG_CODES]
        yield _Report(name, result.text, diagnostics)


def _print(reports: list[_Report], fmt: str) -> None:
    from ..dsl.report import format_github, format_json, format_text, summary_line

    if fmt == "json":
        click.echo(format_json([(r.name, r.diagnostics) for r in reports]))
        return
    if fmt == "github":
        text = "\n".join(filter(None, (format_github(r.name, r.diagnostics) for r in reports)))
        if text:
            click.echo(text)
        return
    for report in reports:
        if report.kind == "unreadable":
            click.echo(f"{report.name}: {report.diagnostics[0].message}", err=True)
        elif report.diagnostics:
            click.echo(format_text(report.name, report.text, report.diagnostics) + "\n")
    read = [r for r in reports if r.kind != "unreadable"]
    errors = sum(d.is_error for r in read for d in r.diagnostics)
    warnings = sum(not d.is_error for r in read for d in r.diagnostics)
    unreadable = len(reports) - len(read)
    line = summary_line(sum(r.kind == "spec" for r in read), errors, warnings)
    click.echo(line + (f"; {unreadable} unreadable" if unreadable else ""), err=bool(errors or unreadable))


@click.command()
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to a file instead of stdout.")
@click.option("--path", "show_path", is_flag=True, help="Print where the installed schema file is instead.")
def schema(output: str | None, show_path: bool) -> None:
    """Print the JSON Schema (2020-12) of spec documents.

    Editors with the Red Hat YAML extension pick it up from a first-line comment:
    `# yaml-language-server: $schema=<path or URL of this file>`.
    """
    from ..dsl.schema import schema_path

    if show_path:
        click.echo(schema_path())
        return
    text = Path(schema_path()).read_text(encoding="utf-8")
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


@dataclass(frozen=True)
class _Project:
    """The agent names a spec's project configuration declares, or the report of why that
    configuration cannot be used (``lockgate run`` refuses it)."""

    agents: tuple[str, ...] = ()
    problem: _Report | None = None


@functools.cache
def _configured_agents_in(directory: str) -> _Project:
    from ..engine.agents.config import find_config, load_config
    from ..errors import ConfigError

    found = find_config(directory)
    if found is None:
        return _Project()
    try:
        return _Project(tuple(load_config(found).agents))
    except ConfigError as exc:
        return _Project(problem=_config_report(found, exc))


def _configured_agents(name: str) -> _Project:
    """What the nearest lockgate.toml / [tool.lockgate] says for this spec."""
    directory = Path.cwd() if name == "<stdin>" else Path(name).resolve().parent
    return _configured_agents_in(str(directory))


def _config_report(path: Path, exc: Exception) -> _Report:
    """A broken configuration file as a report: the error at its line and column when the
    TOML parser gave them, else at the top of the file."""
    name = _shown(path)
    message = str(exc).removeprefix(f"{path}: ")
    where = re.search(r"\(at line (\d+), column (\d+)\)", message)
    line, column = (int(where[1]) - 1, int(where[2]) - 1) if where else (0, 0)
    try:
        with path.open("rb") as handle:
            text = handle.read(_EXCERPT_BYTES).decode("utf-8", "replace")
    except OSError:
        text = ""
    problem = _problem("LG111", message, Range.of(line, column, line, column + 1),
                       hint="lockgate run refuses it too: fix it, or give run another with --config")
    return _Report(name, text, (problem,), "config")


def _problem(code: str, message: str, where: Range = ZERO_RANGE, *, hint: str | None = None) -> Diagnostic:
    """An error about a file as a whole, not its text: one it cannot read, a broken configuration."""
    from ..dsl.codes import lookup

    return Diagnostic(code=code, message=message, range=where, name=lookup(code).name, hint=hint)


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when below it (as GitHub annotations want)."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _collect(paths: tuple[str, ...]):
    """(name, its loader) for each spec PATHS name: a loader takes :func:`load`'s options and
    reads no more than a spec may hold (a huge file, or /dev/zero, is refused in bounded memory)."""
    from ..dsl.loader import load, load_file
    from ..dsl.yamlsrc import MAX_DOCUMENT_CHARS

    for raw in paths:
        if raw == "-":
            yield "<stdin>", lambda **options: load(sys.stdin.buffer.read(MAX_DOCUMENT_CHARS + 1), "<stdin>",
                                                    **options)
            continue
        path = Path(raw)
        if path.is_dir():
            for found in sorted({p for g in SPEC_GLOBS for p in path.rglob(g)}):
                yield str(found), functools.partial(load_file, found)
        elif path.exists():
            yield str(path), functools.partial(load_file, path)
        else:
            _fail_usage(f"{raw}: no such file or directory")


def _fail_usage(message: str) -> None:
    click.echo(f"lockgate validate: {message}", err=True)
    sys.exit(2)


def register(main: click.Group) -> None:
    main.add_command(validate)
    main.add_command(schema)
