"""``lockgate graph``: a flow (or a run, coloured by step status) as PNG, SVG, DOT or Mermaid."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .failures import IOFailure

FORMATS = ("png", "svg", "dot", "mermaid")
# The output file extensions of each format; an extension not here (out.jpg, out.txt) names no
# format, so without --format it is refused rather than guessed.
EXTENSIONS = {"png": "png", "svg": "svg", "dot": "dot", "gv": "dot", "mermaid": "mermaid",
              "mmd": "mermaid", "md": "mermaid"}
# Pictures this command cannot write: a file named so would hold something else.
OTHER_PICTURES = ("jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff", "pdf", "eps", "ico")


@click.command()
@click.argument("target")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format; defaults to the output file's extension (.png, .svg, .dot/.gv, "
                   ".mmd/.mermaid), else mermaid.")
@click.option("--flow", "flow_name", metavar="NAME",
              help="Which flow of a spec file (default: the entry flow); not for a run, drawn as the flow it runs.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to this file.")
@click.option("--store", metavar="URL", help="Store to read a run from: a SQLite path, sqlite://, postgresql://... or memory (default: "
              "$LOCKGATE_STORE or .lockgate/lockgate.db).")
def graph(target: str, fmt: str | None, flow_name: str | None, output: str | None, store: str | None) -> None:
    """Draw the flow graph of a spec file, or of a run coloured by step status.

    TARGET is a spec file (drawn as written) or a run id (drawn with each step's status and a
    legend). PNG and SVG need an output file or a redirected stdout. A spec with errors is not
    drawn: its errors are printed as `lockgate validate` shows them (exit status 1).
    """
    from ..dsl.graphtext import to_dot, to_mermaid

    fmt = _output_format(fmt, output)
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
        if result.errors:
            _refuse_invalid(target, result)
        spec = result.ir
        if spec is None:
            raise click.ClickException(f"{target}: not a spec document (run `lockgate validate {target}`)")
        name = flow_name or spec.entry
        if name not in spec.flows:
            raise click.ClickException(f"{target}: no flow named {name!r}; flows: {', '.join(spec.flows) or 'none'}")
        return flow_graph(spec, name), None, f"{path.name}: {name}"
    drawn = _run_graph(target, store)
    if flow_name is not None:  # a run's colours are its own flow's: another flow would be drawn blank
        raise click.BadParameter(f"{flow_name}: {target} is a run, drawn as the flow it runs; --flow chooses "
                                 "a flow of a spec file", param_hint="'--flow'")
    return drawn


def _run_graph(run_id: str, store_url: str | None):
    """(graph, statuses, title) of the run ``run_id``: TARGET named no file, so it is a run id."""
    from ..engine.graphs import run_graph
    from ..errors import RunNotFound, StoreError
    from .stores import missing, open_existing

    absent = missing(store_url)
    if absent is not None:
        raise click.ClickException(f"{run_id}: no such file, and no run with this id (there is no store at {absent})")
    try:
        store = open_existing(store_url)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        return run_graph(store, run_id)
    except RunNotFound:
        raise click.ClickException(f"{run_id}: no such file, and no run with this id in the store") from None
    finally:
        store.close()


def _refuse_invalid(target: str, result) -> None:
    """Print the spec's errors as ``lockgate validate`` does and exit 1: a graph of a spec with
    errors (two steps with one id, a dangling route) would show a flow that cannot run."""
    from ..dsl.report import format_text
    from ..dsl.yamlsrc import MAX_DOCUMENT_CHARS

    # an oversized document is reported without excerpts (its one line may be 50 MB)
    text = result.text if len(result.text) <= MAX_DOCUMENT_CHARS else ""
    click.echo(format_text(target, text, result.errors) + "\n", err=True)
    count = len(result.errors)
    click.echo(f"lockgate graph: {target} has {count} error{'s' * (count != 1)}; nothing drawn "
               f"(fix it, then draw it again)", err=True)
    sys.exit(1)


def _output_format(fmt: str | None, output: str | None) -> str:
    """The format to write: ``fmt`` when given, else the one the output file's extension names
    (mermaid with no file, or a file without an extension). An extension naming another format,
    or no format at all when ``fmt`` is not given, is a usage error: a .jpg holding Mermaid
    text helps nobody."""
    suffix = Path(output).suffix.lower().lstrip(".") if output else ""
    named = EXTENSIONS.get(suffix)
    if suffix in OTHER_PICTURES:
        _bad_output(f"{output}: lockgate graph writes {_formats()}, not {suffix}")
    if fmt is None:
        if suffix and named is None:
            _bad_output(f"{output}: .{suffix} names no graph format; name the file {_extensions()}, "
                        f"or give --format")
        return named or "mermaid"
    if named is not None and named != fmt:
        _bad_output(f"{output}: --format {fmt} does not match the .{suffix} extension ({named}); "
                    f"change one or the other")
    return fmt


def _bad_output(message: str) -> None:
    raise click.BadParameter(message, param_hint="'-o' / '--output'")


def _formats() -> str:
    return ", ".join(FORMATS[:-1]) + " or " + FORMATS[-1]


def _extensions() -> str:
    return ", ".join(f".{ext}" for ext in EXTENSIONS if ext != "md")


def _emit(data: str | bytes, output: str | None) -> None:
    if output:
        mode = "wb" if isinstance(data, bytes) else "w"
        try:
            with open(output, mode) as fh:
                fh.write(data)
        except OSError as exc:
            raise IOFailure(f"cannot write {output}: {exc.strerror or exc}") from None
        click.echo(f"wrote {output}", err=True)
        return
    if isinstance(data, bytes) and sys.stdout.isatty():
        raise click.UsageError("refusing to write PNG to a terminal; use --output FILE or redirect stdout")
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            click.echo(data, nl=False)
    except BrokenPipeError:
        raise  # the reader is gone (`| head`): nothing to say
    except OSError as exc:
        raise IOFailure(f"cannot write to standard output: {exc.strerror or exc}") from None


def register(main: click.Group) -> None:
    main.add_command(graph)
