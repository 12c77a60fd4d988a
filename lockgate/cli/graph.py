"""``lockgate graph``: a flow (or a run, coloured by step status) as PNG, SVG, DOT or Mermaid."""

from __future__ import annotations

import sys
from pathlib import Path

import click

FORMATS = ("png", "svg", "dot", "mermaid")


@click.command()
@click.argument("target")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format; defaults to the output file's extension, else mermaid.")
@click.option("--flow", "flow_name", metavar="NAME", help="Which flow of the spec (default: the entry flow).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to this file.")
@click.option("--store", metavar="URL", help="Store to read a run from (default: .lockgate/lockgate.db).")
def graph(target: str, fmt: str | None, flow_name: str | None, output: str | None, store: str | None) -> None:
    """Draw the flow graph of a spec file, or of a run coloured by step status.

    TARGET is a spec file (drawn as written) or a run id (drawn with each step's status and a
    legend). PNG and SVG need an output file or a redirected stdout.
    """
    from ..dsl.graphtext import to_dot, to_mermaid

    fmt = fmt or _format_from_name(output)
    graph_, statuses, title = _resolve(target, flow_name, store)
    if fmt == "mermaid":
        data: str | bytes = to_mermaid(graph_, statuses)
    elif fmt == "dot":
        data = to_dot(graph_, statuses, name=title)
    else:
        from ..kernel_ext.dag import draw

        picture = draw(graph_, statuses, title=title)
        data = picture.png() if fmt == "png" else picture.svg()
    _emit(data, output)


def _resolve(target: str, flow_name: str | None, store: str | None):
    """(graph, statuses or None, title) for a spec path or a run id."""
    from ..dsl.graph import flow_graph

    path = Path(target)
    if path.is_dir():
        raise click.ClickException(f"{target}: is a directory; give a spec file or a run id")
    if path.exists():
        from ..dsl.loader import load_file

        result = load_file(path)
        spec = result.ir
        if spec is None:
            raise click.ClickException(f"{target}: not a spec document (run `lockgate validate {target}`)")
        name = flow_name or spec.entry
        if name not in spec.flows:
            raise click.ClickException(f"{target}: no flow named {name!r}; flows: {', '.join(spec.flows) or 'none'}")
        return flow_graph(spec, name), None, f"{path.name}: {name}"
    return _run_graph(target, store)


def _run_graph(run_id: str, store_url: str | None):
    from ..engine.graphs import run_graph
    from ..errors import RunNotFound, StoreError
    from .stores import missing, open_existing

    absent = missing(store_url)
    if absent is not None:
        raise click.ClickException(f"{run_id}: neither a spec file nor a run id in the store "
                                   f"(there is no store at {absent})")
    try:
        store = open_existing(store_url)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        return run_graph(store, run_id)
    except RunNotFound:
        raise click.ClickException(f"{run_id}: neither a spec file nor a run id in the store") from None
    finally:
        store.close()


def _format_from_name(output: str | None) -> str:
    if output:
        suffix = Path(output).suffix.lower().lstrip(".")
        if suffix in FORMATS:
            return suffix
        if suffix in ("mmd", "md"):
            return "mermaid"
        if suffix == "gv":
            return "dot"
    return "mermaid"


def _emit(data: str | bytes, output: str | None) -> None:
    if output:
        mode = "wb" if isinstance(data, bytes) else "w"
        try:
            with open(output, mode) as fh:
                fh.write(data)
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        click.echo(f"wrote {output}", err=True)
        return
    if isinstance(data, bytes):
        if sys.stdout.isatty():
            raise click.UsageError("refusing to write PNG to a terminal; use --output FILE or redirect stdout")
        sys.stdout.buffer.write(data)
    else:
        click.echo(data, nl=False)


def register(main: click.Group) -> None:
    main.add_command(graph)
