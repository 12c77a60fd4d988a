"""Project configuration: which adapter each agent name of a spec maps to, and runner limits.

Read from ``lockgate.toml`` or the ``[tool.lockgate]`` table of ``pyproject.toml``, whichever is
found first walking up from the working directory::

    judge = "reviewer"       # the agent that answers `judged` ensures (none: they fail closed)

    [agents.reviewer]
    type = "openai"
    base_url = "http://127.0.0.1:11434/v1"
    model = "qwen2.5-coder"

    [agents.lint]
    type = "command"
    command = ["python", "lint_agent.py"]   # lint_agent.py beside this file, from any folder
    timeout = 60

    [agents.claude]          # type defaults to the name for the built-ins claude and codex
    model = "sonnet"
    effort = "high"

    [runner]
    max_running = 10
    max_outstanding = 100

``judge`` names the agent asked whether a ``judged`` ensure holds: any agent a run can resolve
(an ``[agents.NAME]`` table here, a registered Python callable, ``--agents``, or a built-in).
``lockgate run --judge NAME`` and ``lockgate.run(..., judge=...)`` override it. A top-level key,
so it goes before the first table.

Every problem is a ConfigError naming the file and the key (``lockgate.toml: agents.lint.timeout:
...``). Unknown keys are errors (with a did-you-mean), so a typo never silently does nothing.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import importlib
import math
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ...errors import ConfigError
from .base import Agent
from .claude import ClaudeCodeAgent
from .codex import CodexAgent
from .command import CommandAgent
from .openai import OpenAIAgent
from .python import PythonAgent

AGENT_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
BUILTIN_AGENTS = ("claude", "codex")

Check = Callable[[Any, str], Any]


def _fail(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}")


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(where, f"expected a non-empty string, got {value!r}")
    return _no_nul(value, where)


def _no_nul(value: str, where: str) -> str:
    """No U+0000: no command line, environment or header can carry one."""
    if "\x00" in value:
        raise _fail(where, f"a string may not contain U+0000, got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"expected a number, got {value!r}")
    if not math.isfinite(value):
        raise _fail(where, f"expected a finite number, got {value!r}")
    return float(value)


def _positive(value: Any, where: str) -> float:
    number = _number(value, where)
    if number <= 0:
        raise _fail(where, f"expected a positive number, got {value!r}")
    return number


def _non_negative(value: Any, where: str) -> float:
    number = _number(value, where)
    if number < 0:
        raise _fail(where, f"expected a number >= 0, got {value!r}")
    return number


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(where, f"expected an integer >= 0, got {value!r}")
    return value


def _positive_int(value: Any, where: str) -> int:
    if _count(value, where) == 0:
        raise _fail(where, "expected an integer >= 1, got 0")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, f"expected true or false, got {value!r}")
    return value


def _str_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, f"expected a list of strings, got {value!r}")
    return [_no_nul(v, where) for v in value]


def _str_table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _fail(where, f"expected a table of strings, got {value!r}")
    return {_no_nul(k, where): _no_nul(v, f"{where}.{k}") for k, v in value.items()}


def _env(value: Any, where: str) -> dict[str, str]:
    table = _str_table(value, where)
    for name in table:
        if not name or "=" in name:
            raise _fail(where, f"an environment variable name must be non-empty and without "
                               f"'=', got {name!r}")
    return table


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _headers(value: Any, where: str) -> dict[str, str]:
    table = _str_table(value, where)
    for name, text in table.items():
        if not _HEADER_NAME.match(name):
            raise _fail(where, f"not an HTTP header name: {name!r}")
        if any(c in text for c in "\r\n"):
            raise _fail(f"{where}.{name}", "a header value may not contain a line break")
    return table


def _url(value: Any, where: str) -> str:
    text = _str(value, where)
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise _fail(where, f"not a valid URL ({exc}): {text!r}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise _fail(where, f"expected an http:// or https:// URL with a host, got {text!r}")
    return text


def _json_table(value: Any, where: str) -> dict[str, Any]:
    """A table that goes into a JSON request body: no dates or times, no NaN or infinity."""
    table = _table(value, where)
    _check_json(table, where)
    return table


def _check_json(value: Any, where: str) -> None:
    if isinstance(value, (datetime.date, datetime.time)):
        raise _fail(where, f"a date or time is not JSON, got {value!r} (quote it)")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(where, f"expected a finite number, got {value!r}")
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        _check_json(item, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"expected a table, got {value!r}")
    return dict(value)


def _command(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            parts = shlex.split(value)
        except ValueError as exc:
            raise _fail(where, f"cannot split the command line: {exc}") from exc
    else:
        parts = _str_list(value, where)
    if not parts:
        raise _fail(where, "the command is empty")
    return [_no_nul(part, where) for part in parts]


def _one_of(*choices: str) -> Check:
    def check(value: Any, where: str) -> str:
        if value not in choices:
            raise _fail(where, f"expected one of {', '.join(choices)}, got {value!r}")
        return value
    return check


_HARNESS: dict[str, Check] = {
    "binary": _str, "model": _str, "effort": _str, "timeout": _positive,
    "extra_args": _str_list, "env": _env, "check_credentials": _bool,
}

#: type -> (adapter factory, {key: check}, required keys)
ADAPTERS: dict[str, tuple[Callable[..., Agent], dict[str, Check], frozenset[str]]] = {
    "command": (CommandAgent, {"command": _command, "timeout": _positive, "env": _env,
                               "cwd": _str}, frozenset({"command"})),
    "openai": (OpenAIAgent, {
        "model": _str, "base_url": _url, "api_key_env": _str, "timeout": _positive,
        "max_retries": _count, "backoff": _non_negative, "max_backoff": _non_negative,
        "temperature": _number, "system_prompt": _str,
        "structured": _one_of("auto", "json_schema", "json_object"),
        "usd_per_1k_input": _non_negative, "usd_per_1k_output": _non_negative,
        "headers": _headers, "extra_body": _json_table}, frozenset({"model"})),
    "claude": (ClaudeCodeAgent, {
        **_HARNESS, "permission_mode": _str, "allowed_tools": _str_list,
        "disallowed_tools": _str_list, "max_turns": _positive_int, "json_schema": _bool},
        frozenset()),
    "codex": (CodexAgent, {**_HARNESS, "sandbox": _str, "output_schema": _bool}, frozenset()),
    "python": (PythonAgent, {"callable": _str}, frozenset({"callable"})),
}

_RUNNER_KEYS: dict[str, Check] = {"max_running": _positive_int, "max_outstanding": _positive_int}


@dataclass(frozen=True)
class RunnerSettings:
    """Admission limits of one run: agent calls running at once, and running plus queued."""

    max_running: int = 10
    max_outstanding: int = 100


@dataclass(frozen=True)
class AgentSpec:
    """One ``[agents.NAME]`` table, checked; ``build()`` makes a fresh adapter."""

    name: str
    type: str
    options: Mapping[str, Any]
    where: str

    def build(self) -> Agent:
        factory = ADAPTERS[self.type][0]
        options = dict(self.options)
        if self.type == "python":
            return PythonAgent(self.name, _import_callable(options["callable"], f"{self.where}.callable",
                                                           options.get("search_path")))
        if self.type == "command":
            return factory(self.name, options.pop("command"), **options)
        return factory(self.name, **options)


@dataclass(frozen=True)
class ProjectConfig:
    """The checked configuration; ``path`` is None when no file was found."""

    path: Path | None = None
    agents: Mapping[str, AgentSpec] = field(default_factory=dict)
    runner: RunnerSettings = RunnerSettings()
    judge: str | None = None

    def agent(self, name: str) -> Agent | None:
        """A fresh adapter for ``name`` from the file or the built-ins; None if neither has it."""
        spec = self.agents.get(name)
        if spec is not None:
            return spec.build()
        if name in BUILTIN_AGENTS:
            return AgentSpec(name, name, {}, f"built-in agent {name!r}").build()
        return None


def find_config(start: Path | str | None = None) -> Path | None:
    """The nearest ``lockgate.toml``, or ``pyproject.toml`` with ``[tool.lockgate]``, upward.

    A ``pyproject.toml`` that cannot be read as TOML is returned too: whether it holds
    ``[tool.lockgate]`` cannot be told, and walking past it could pick another project's
    agents; :func:`load_config` then reports what is wrong with it."""
    here = Path(start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / "lockgate.toml"
        if candidate.is_file():
            return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and _may_configure(pyproject):
            return pyproject
    return None


def load_config(path: Path | str | None = None, *, start: Path | str | None = None,
                ) -> ProjectConfig:
    """Read and check ``path`` (or the file :func:`find_config` finds from ``start``)."""
    found = Path(path) if path is not None else find_config(start)
    if found is None:
        return ProjectConfig()
    if found.name != "pyproject.toml":
        return parse_config(_read_toml(found), path=found)
    try:
        data = _read_toml(found)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; {_PYPROJECT_FIX}") from exc
    return parse_config(_tool_table(data).get("lockgate", {}), path=found, prefix="tool.lockgate.")


_PYPROJECT_FIX = ("lockgate reads [tool.lockgate] from it and cannot tell whether it has one: "
                  "fix the file, or put a lockgate.toml beside it (or pass --config)")


def parse_config(data: Mapping[str, Any], *, path: Path | None = None,
                 prefix: str = "") -> ProjectConfig:
    """Check an already parsed configuration table."""
    label = str(path) if path is not None else "configuration"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{label}: {prefix.rstrip('.') or '(top level)'}: expected a table, "
                          f"got {data!r}")
    _no_unknown(data, ("agents", "judge", "runner"), f"{label}: {prefix or '(top level)'}")
    agents_table = data.get("agents", {})
    if not isinstance(agents_table, dict):
        raise ConfigError(f"{label}: {prefix}agents: expected a table of agent tables")
    agents = {name: _agent_spec(name, table, f"{label}: {prefix}agents.{name}")
              for name, table in agents_table.items()}
    runner = _runner(data.get("runner", {}), f"{label}: {prefix}runner")
    judge = _judge(data["judge"], f"{label}: {prefix}judge") if "judge" in data else None
    base = path.parent if path is not None else None
    agents = {name: _resolve_paths(spec, base) for name, spec in agents.items()}
    return ProjectConfig(path=path, agents=agents, runner=runner, judge=judge)


def _judge(value: Any, where: str) -> str:
    """An agent name; whether an agent answers to it is known only when a run resolves it
    (it may be a registered Python callable or come from ``--agents``)."""
    name = _str(value, where)
    if not AGENT_NAME.match(name):
        raise _fail(where, f"expected an agent name matching ^[a-z][a-z0-9_-]*$, got {value!r}")
    return name


def _agent_spec(name: str, table: Any, where: str) -> AgentSpec:
    if not AGENT_NAME.match(name):
        raise ConfigError(f"{where}: an agent name must match ^[a-z][a-z0-9_-]*$")
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table, got {table!r}")
    kind = table.get("type", name if name in BUILTIN_AGENTS else None)
    if kind is None:
        raise ConfigError(f"{where}.type: missing; expected one of {', '.join(ADAPTERS)}")
    if kind not in ADAPTERS:
        raise ConfigError(f"{where}.type: unknown adapter type {kind!r}{_did_you_mean(kind, ADAPTERS)}"
                          f"; expected one of {', '.join(ADAPTERS)}")
    _, checks, required = ADAPTERS[kind]
    options = {k: v for k, v in table.items() if k != "type"}
    _no_unknown(options, checks, where)
    for key in sorted(required - options.keys()):
        raise ConfigError(f"{where}.{key}: missing (required for type {kind!r})")
    checked = {key: checks[key](value, f"{where}.{key}") for key, value in options.items()}
    return AgentSpec(name, kind, checked, where)


def _runner(table: Any, where: str) -> RunnerSettings:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table, got {table!r}")
    _no_unknown(table, _RUNNER_KEYS, where)
    values = {key: _RUNNER_KEYS[key](value, f"{where}.{key}") for key, value in table.items()}
    settings = RunnerSettings(**values)
    if settings.max_outstanding < settings.max_running:
        raise ConfigError(f"{where}.max_outstanding: must be >= max_running "
                          f"({settings.max_running})")
    return settings


def _resolve_paths(spec: AgentSpec, base: Path | None) -> AgentSpec:
    """Paths are relative to the configuration file's directory: a command agent's ``cwd``, its
    program and scripts when they are there (``base_dir``, see
    :mod:`lockgate.engine.agents.command`), and the module of a python agent's ``callable``
    when it is not importable as it is."""
    if base is None or spec.type not in ("python", "command"):
        return spec
    folder = str(base.resolve())
    if spec.type == "python":
        return AgentSpec(spec.name, spec.type, {**spec.options, "search_path": folder}, spec.where)
    options = {**spec.options, "base_dir": folder}
    if "cwd" in options:
        options["cwd"] = str((base / options["cwd"]).resolve())
    return AgentSpec(spec.name, spec.type, options, spec.where)


def _no_unknown(table: Mapping[str, Any], known: Any, where: str) -> None:
    for key in table:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}{_did_you_mean(key, known)}; "
                              f"expected one of {', '.join(sorted(known))}")


def _did_you_mean(word: str, options: Any) -> str:
    close = difflib.get_close_matches(str(word), list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:  # tomllib decodes the whole file first
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text (byte {exc.start})") from exc


def _may_configure(pyproject: Path) -> bool:
    """Whether ``pyproject`` has a ``[tool.lockgate]`` key, or cannot be read to tell: parsed
    again only when the file changed (the language server asks on every analysis)."""
    try:
        stat = pyproject.stat()
    except OSError:
        return True  # gone meanwhile: load_config says what is wrong
    return _may_configure_at(str(pyproject), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _may_configure_at(pyproject: str, mtime_ns: int, size: int) -> bool:
    try:
        return "lockgate" in _tool_table(_read_toml(Path(pyproject)))
    except ConfigError:
        return True


def _tool_table(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """pyproject.toml's ``[tool]`` table; one that is no table holds no ``lockgate``."""
    tool = data.get("tool", {})
    return tool if isinstance(tool, dict) else {}


def _import_callable(target: str, where: str, search_path: str | None = None) -> Callable[..., Any]:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{where}: expected 'module:function', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if search_path is None or exc.name != module_name.partition(".")[0] or search_path in sys.path:
            raise ConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
        sys.path.insert(0, search_path)  # the configuration file's folder, like a project root
        return _import_callable(target, where)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    except (Exception, SystemExit) as exc:  # the module's own code failed at import
        raise ConfigError(f"{where}: cannot import {module_name!r}: "
                          f"{type(exc).__name__}: {exc}") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{where}: {module_name!r} has no callable {attr!r}")
    return fn
