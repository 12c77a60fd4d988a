"""What ``lockgate run`` reads from its arguments: flow inputs (``--input KEY=VALUE`` and an
``--inputs`` file) and agents (``--agents`` module). Every problem is a
:class:`click.BadParameter` whose message names the option and says what is wrong, in one line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click


def read_inputs(pairs: tuple[str, ...], inputs_file: str | None,
                declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The flow inputs: the --inputs file, then each --input KEY=VALUE over it.

    The pairs are read as the notebook's ``%flow run`` reads them
    (:func:`lockgate.dsl.inputtext.inputs_from_pairs`): VALUE by the type ``declared`` (the
    flow's ``input``) gives KEY, verbatim for a string or enum input (``topic=42`` is
    ``"42"``), else as JSON when it parses."""
    from ..dsl.inputtext import InputPairError, inputs_from_pairs

    inputs: dict[str, Any] = {}
    if inputs_file:
        inputs.update(_read_inputs_file(Path(inputs_file)))
    for pair in pairs:
        _refuse_undecodable(pair)
    try:
        given = inputs_from_pairs(pairs, declared)
    except InputPairError as exc:
        raise click.BadParameter(str(exc)) from None
    for key, value in given.items():
        _refuse_unstorable({key: value}, f"--input {key}")
    inputs.update(given)
    return inputs


def _refuse_undecodable(pair: str) -> None:
    """Refuse an --input whose text is not UTF-8, naming its key: Python holds a command line's
    bytes that are not UTF-8 as lone surrogates, which no store keeps, so the run could not
    even be planned, and the store would blame a record of its own."""
    from ..dsl.contractcheck import unstorable_text

    key, _, value = pair.partition("=")
    if unstorable_text(key) is not None:
        shown = repr(key.strip().encode("utf-8", "surrogateescape"))[1:]  # its bytes, as Python writes them
        raise click.BadParameter(f"--input {shown}: the key is not UTF-8 text")
    if unstorable_text(value) is not None:
        raise click.BadParameter(f"--input {key.strip()}: the value is not UTF-8 text")


def _refuse_unstorable(inputs: dict[str, Any], option: str) -> None:
    """Refuse inputs holding text no store keeps (U+0000 or a lone surrogate, which a JSON
    ``\\u`` escape can write), saying where in them, after ``option``."""
    from ..dsl.contractcheck import text_violations

    found = text_violations(inputs, "input")
    if found:
        raise click.BadParameter(f"{option}: {found[0]}")


def _read_inputs_file(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = _inputs_bytes(path).decode("utf-8")
    except OSError as exc:
        raise click.BadParameter(f"--inputs: cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"--inputs: {path} is not UTF-8 text (byte {exc.start})") from exc
    if path.suffix != ".json":
        _check_yaml_limits(path, text)
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"--inputs: {path} is not valid JSON/YAML: {_parse_problem(exc)}") from exc
    except RecursionError:
        raise click.BadParameter(f"--inputs: {path}: the document nests too deeply to read") from None
    except ValueError:  # Python's bound on the digits it converts to an int
        raise click.BadParameter(f"--inputs: {path}: a number in it has more than {sys.get_int_max_str_digits():,} "
                                 "digits, too many to read") from None
    if not isinstance(data, dict):
        raise click.BadParameter(f"--inputs: {path} must hold an object of inputs")
    _refuse_unstorable(data, f"--inputs: {path}")
    return data


def _inputs_bytes(path: Path) -> bytes:
    """The bytes of an --inputs file, which may be as large as a spec and no larger, read as the
    spec loader reads a spec (:func:`~lockgate.dsl.loader.read_document`)."""
    from ..dsl.loader import read_document
    from ..dsl.yamlsrc import MAX_DOCUMENT_CHARS

    read = read_document(path)
    if read.data is None:
        _too_large(path, f"{read.size:,} bytes" if read.sized else f"more than {MAX_DOCUMENT_CHARS:,} bytes")
    return read.data


def _too_large(path: Path, size: str) -> NoReturn:
    from ..dsl.yamlsrc import MAX_DOCUMENT_CHARS

    raise click.BadParameter(f"--inputs: {path} is {size}; an inputs file may have at most "
                             f"{MAX_DOCUMENT_CHARS:,} bytes ({MAX_DOCUMENT_CHARS // (1024 * 1024)} MiB), "
                             "as a spec may")


# what the spec loader's composer stops at: too many values, aliases or alias expansion (an
# alias bomb), nesting too deep
_LIMIT_CODES = frozenset({"LG101", "LG106", "LG107"})


def _check_yaml_limits(path: Path, text: str) -> None:
    """Refuse YAML that the spec loader refuses for its size or shape, before
    ``yaml.safe_load`` (which bounds neither) expands its aliases or recurses through it.

    The loader's own composer reads the text within its limits; the data is still taken from
    ``yaml.safe_load``, so inputs within the limits read as they always have."""
    from ..dsl.yamlevents import Composer

    for diag in Composer(text).run().diagnostics:
        if diag.code in _LIMIT_CODES:
            at = diag.range.start
            raise click.BadParameter(f"--inputs: {path}: {diag.message} "
                                     f"(line {at.line + 1}, column {at.character + 1})")


def _parse_problem(exc: Exception) -> str:
    """A JSON or YAML parse error in one line: what is wrong, and where."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def _is_file(target: str) -> bool:
    """Whether an --agents value names a file (else a dotted module name)."""
    return target.endswith(".py") or "/" in target or "\\" in target or Path(target).is_file()


def agents_source(target: str) -> str:
    """An --agents value as a run's claim records it: a file's resolved path (a resume may be
    typed in another folder), a dotted module name as given."""
    return str(Path(target).resolve()) if _is_file(target) else target


def load_agents(target: str) -> dict[str, Any]:
    """Top-level functions of a module (a .py path or a dotted name), by name; ``a_b`` also
    answers for the agent name ``a-b``."""
    import importlib
    import importlib.util
    import inspect

    try:
        if _is_file(target):
            path = Path(target).resolve()
            if not path.is_file():
                raise click.BadParameter(f"--agents: no file {target}")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:  # a suffix Python does not import from
                raise click.BadParameter(f"--agents: {target} is not a Python file; give a .py file "
                                         "or a dotted module name")
            module = importlib.util.module_from_spec(spec)
            sys.modules.setdefault(path.stem, module)
            spec.loader.exec_module(module)
        else:
            sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(target)
    except click.BadParameter:
        raise
    except Exception as exc:
        raise click.BadParameter(f"--agents: cannot import {target}: "
                                 f"{type(exc).__name__}: {exc}") from exc
    agents: dict[str, Any] = {}
    for name, fn in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
            continue
        agents[name] = fn
        agents.setdefault(name.replace("_", "-"), fn)
    if not agents:
        raise click.BadParameter(f"--agents: {target} defines no top-level functions")
    return agents
