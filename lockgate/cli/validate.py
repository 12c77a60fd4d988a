"""``lockgate validate`` and ``lockgate schema``."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

SPEC_GLOBS = ("*.stratum.yaml", "*.stratum.yml")


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
    Exit status: 0 valid, 1 errors found, 2 usage error or unreadable file.
    """
    from ..dsl.report import format_github, format_json, format_text, summary_line

    try:
        sources = list(_collect(paths))
    except OSError as exc:
        raise click.ClickException(str(exc)) from exc
    if not sources:
        _fail_usage("no spec files found (looked for *.stratum.yaml and *.stratum.yml)")
    results, unreadable = [], False
    for name, loader in sources:
        configured = _configured_agents(name)
        try:
            result = loader(agents=[*agents, *configured] or None, lint=not no_lint)
        except OSError as exc:
            click.echo(f"{name}: cannot read: {exc.strerror or exc}", err=True)
            unreadable = True
            continue
        results.append((name, result))
    errors = sum(len(r.errors) for _, r in results)
    warnings = sum(len(r.warnings) for _, r in results)
    if fmt == "json":
        click.echo(format_json([(n, r.diagnostics) for n, r in results]))
    elif fmt == "github":
        text = "\n".join(filter(None, (format_github(n, r.diagnostics) for n, r in results)))
        if text:
            click.echo(text)
    else:
        for name, result in results:
            if result.diagnostics:
                click.echo(format_text(name, result.text, result.diagnostics) + "\n")
        click.echo(summary_line(len(results), errors, warnings), err=bool(errors))
    sys.exit(2 if unreadable else 1 if errors else 0)


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


@functools.cache
def _configured_agents_in(directory: str) -> tuple[str, ...]:
    from ..engine.agents.config import load_config
    from ..errors import ConfigError

    try:
        return tuple(load_config(start=directory).agents)
    except ConfigError as exc:
        click.echo(f"lockgate validate: ignoring the project configuration: {exc}", err=True)
        return ()


def _configured_agents(name: str) -> tuple[str, ...]:
    """Agent names the nearest lockgate.toml / [tool.lockgate] declares for this spec."""
    directory = Path.cwd() if name == "<stdin>" else Path(name).resolve().parent
    return _configured_agents_in(str(directory))


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
