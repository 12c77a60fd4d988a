"""The structure pass: the JSON Schema of a spec, with its errors turned into precise findings.

The schema (``schema/spec.v1.schema.json``) is the one definition of the document structure;
``jsonschema-rs`` validates against it (fast enough to run on every keystroke), and this module
maps each error to one :class:`Finding` with a stable code, the exact YAML path (a key or a
value) and a message a person can act on:

LG202 unknown key (one per key, with a did-you-mean) · LG203 missing required key (at the parent's
key) · LG204 not exactly one of do/set/gate/fanout/run/evaluate · LG205 a key not allowed for the step's
kind · LG206 reserved names · LG207 a value outside an enum · LG208 a name that breaks its pattern
· LG209 version · LG210 a number out of range · LG201 anything else.

Cascades are suppressed so that one real problem gives one finding: a step with a construct mix
gets no per-kind errors, and a misspelt required key (``ouput``) is reported once, as an unknown
key whose suggestion is the missing one.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from .diagnostics import Finding, YamlPath
from .ir import STEP_KINDS
from .schema import spec_schema

_KIND_DEFS = {f"{kind}Step": kind for kind in STEP_KINDS}
_RESERVED = ("__proto__", "constructor", "prototype")

# what an object is called in messages, by the schema definition (or property) that describes it
_NOUNS = {
    "": "the spec", "flows": "flows", "flow": "a flow", "flowOutput": "a flow output",
    "step": "a step", "stage": "a fanout stage", "gate": "a gate", "fanout": "a fanout",
    "budget": "a budget", "iterate": "iterate", "ensureItem": "an ensure item",
    "file_contains": "file_contains", "judged": "judged", "carryVar": "a carry variable",
    "evaluate": "evaluate",
}
_PATTERN_NAMES = {
    "stepId": "a step id", "contractName": "a contract name", "fieldName": "a field name",
}
_PATTERN_RULES = {
    "^[a-z][a-z0-9_-]*$": "a lowercase letter, then lowercase letters, digits, `_` or `-`",
    "^[a-zA-Z_][a-zA-Z0-9_]*$": "letters, digits and `_`, not starting with a digit",
}


@cache
def _validator() -> Any:
    import jsonschema_rs

    return jsonschema_rs.validator_for(spec_schema())


def check_structure(data: Any) -> list[Finding]:
    """Every structural problem of a parsed spec document, one finding per real problem."""
    try:
        errors = list(_validator().iter_errors(data))
    except Exception as exc:  # jsonschema-rs could not take the value (it never should)
        return [Finding("LG201", f"the document could not be checked: {exc}", ())]
    return _Mapper(data).run(errors)


# -- mapping errors to findings -----------------------------------------------------------------


class _Mapper:
    def __init__(self, data: Any) -> None:
        self.data = data
        self.findings: dict[tuple, Finding] = {}
        self.mixed_steps: set[YamlPath] = set()
        self.missing: dict[YamlPath, set[str]] = {}

    def run(self, errors: list[Any]) -> list[Finding]:
        for err in errors:  # construct mixes first: they silence per-kind errors on that step
            if _is_step_one_of(err) and isinstance(_value_at(self.data, tuple(err.instance_path)), dict):
                self._construct_mix(tuple(err.instance_path))
        for err in errors:
            if not _is_step_one_of(err):
                self._map(err)
        return self._without_cascades()

    def _add(self, finding: Finding, *distinct: str) -> None:
        """Keep the first finding per location (and ``distinct`` values: several keys missing
        from one mapping are one finding each)."""
        key = (finding.code, finding.path, finding.at, finding.span, *distinct)
        self.findings.setdefault(key, finding)

    def _map(self, err: Any) -> None:
        path = tuple(err.instance_path)
        schema_path = [str(p) for p in err.schema_path]
        kind_def = schema_path[1] if len(schema_path) > 1 and schema_path[0] == "$defs" else ""
        if kind_def in _KIND_DEFS and path in self.mixed_steps:
            return
        handler = getattr(self, "_on_" + err.kind.name, None)
        if handler is None:
            self._add(Finding("LG201", _plain_message(err, path, self.data), path))
            return
        handler(err, path, schema_path)

    # one handler per JSON Schema keyword

    def _on_additionalProperties(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        holder = _schema_at(schema_path[:-1])
        allowed = list(holder.get("properties", {}))
        owner = schema_path[1] if len(schema_path) > 1 and schema_path[0] == "$defs" else ""
        present = _value_at(self.data, path)
        free = [k for k in allowed if not (isinstance(present, dict) and k in present)]
        for key in err.kind.unexpected:
            if owner in _KIND_DEFS:
                self._field_for_kind(path, key, _KIND_DEFS[owner])
            else:
                self._unknown_key(path, key, free, allowed, _noun(schema_path))

    def _on_required(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        key = err.kind.property
        self.missing.setdefault(path, set()).add(key)
        owner = schema_path[1] if len(schema_path) > 1 and schema_path[0] == "$defs" else ""
        if owner in _KIND_DEFS:
            message = f"{_a(_KIND_DEFS[owner])} step needs `{key}`"
        else:
            message = f"missing required key `{key}` in {_noun(schema_path[:-1])}"
        self._add(Finding("LG203", message, path, at="key", hint=_required_hint(key)), key)

    def _on_type(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        value = _value_at(self.data, path)
        types = sorted(err.kind.types, key=lambda t: t == "null")
        wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        message = f"{_name(path)} must be {wanted}, got {_describe(value)}"
        hint = None
        if "string" in err.kind.types and isinstance(value, (dict, list)):
            hint = "in YAML, `{...}` is a mapping and `[...]` a list; quote the text to make it a string"
        self._add(Finding("LG201", message, path, hint=hint))

    def _on_const(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        value = _value_at(self.data, path)
        if path == ("version",):
            self._add(Finding("LG209", f"`version` must be the number 1, got {_describe(value)}", path,
                              replacement="1"))
        else:
            self._add(Finding("LG201", _plain_message(err, path, self.data), path))

    def _on_enum(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        options = list(err.kind.options)
        self._enum(path, options)

    def _enum(self, path: YamlPath, options: list[Any], extra: str = "") -> None:
        value = _value_at(self.data, path)
        listed = ", ".join(f"`{o}`" for o in options)
        wanted = f"one of {listed}{extra}" if len(options) > 1 or extra else listed
        message = f"{_name(path)} must be {wanted}, got {_describe(value)}"
        suggestion = _closest(value, [str(o) for o in options])
        if suggestion is not None:
            message += f"; did you mean `{suggestion}`?"
        self._add(Finding("LG207", message, path, replacement=suggestion))

    def _on_anyOf(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        branches = _schema_at(schema_path[:-1]).get("anyOf", [])
        options: list[Any] = []
        words: list[str] = []
        for branch in branches:
            branch = _resolve(branch)
            if "enum" in branch:
                options.extend(branch["enum"])
            else:
                words.append(_describe_schema(branch))
        if options:
            self._enum(path, options, "".join(f" or {w}" for w in words))
        else:
            self._add(Finding("LG201", f"{_name(path)} must be {' or '.join(words)}", path))

    def _on_pattern(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        value = _value_at(self.data, path)
        what = _pattern_name(schema_path, path)
        rule = _PATTERN_RULES.get(err.kind.pattern, f"the pattern {err.kind.pattern}")
        fixed = _conform(value) if isinstance(value, str) else None
        message = f"{_describe(value)} is not a valid {what}: use {rule}"
        self._add(Finding("LG208", message, path, replacement=fixed if fixed != value else None))

    def _on_propertyNames(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        inner = err.kind.error
        key = inner.instance
        where = (*path, key)
        if key in _RESERVED:
            self._add(Finding("LG206", f"`{key}` is a reserved name; choose another", where, at="key"))
            return
        inner_path = [str(p) for p in inner.schema_path]
        if inner.kind.name == "pattern":
            what = "carry name" if path and path[-1] == "carry" else _pattern_name(inner_path, where)
            rule = _PATTERN_RULES.get(inner.kind.pattern, inner.kind.pattern)
            fixed = _conform(key, lowercase=what in ("step id", "carry name"))
            self._add(Finding("LG208", f"`{key}` is not a valid {what}: use {rule}", where, at="key",
                              replacement=fixed if fixed != key else None))
        else:
            self._add(Finding("LG201", f"`{key}` is not allowed here", where, at="key"))

    def _on_minimum(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        limit = _schema_at(schema_path[:-1]).get("minimum")
        word = "a positive integer" if limit == 1 else f"at least {limit}"
        self._add(Finding("LG210", f"{_name(path)} must be {word}, got {_describe(_value_at(self.data, path))}",
                          path))

    def _on_exclusiveMinimum(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        limit = _schema_at(schema_path[:-1]).get("exclusiveMinimum")
        value = _value_at(self.data, path)
        self._add(Finding("LG210", f"{_name(path)} must be greater than {limit}, got {_describe(value)}", path))

    def _on_minLength(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        hint = "write the shell command line to run" if path and path[-1] == "command" else None
        self._add(Finding("LG201", f"{_name(path)} must not be empty", path, hint=hint))

    def _on_minItems(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        if path and path[-1] == "steps" and len(path) >= 2 and path[-2] == "fanout":
            message = "a fanout needs at least one stage in `steps`"
        else:
            message = f"{_name(path)} must not be empty"
        self._add(Finding("LG201", message, path))

    def _on_minProperties(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        holder = _schema_at(schema_path[:-1])
        keys = ", ".join(holder.get("properties", {}))
        noun = _noun(schema_path[:-1])
        if noun == "an ensure item":
            message = f"an ensure item needs one of {keys}"
        else:
            message = f"{noun} needs at least one of {keys}"
        self._add(Finding("LG201", message, path))

    def _on_maxProperties(self, err: Any, path: YamlPath, schema_path: list[str]) -> None:
        value = _value_at(self.data, path)
        found = " and ".join(f"`{k}`" for k in value) if isinstance(value, dict) else "several keys"
        self._add(Finding("LG201", f"an ensure item holds exactly one predicate, found {found}; "
                          "write each as its own item", path))

    # findings that need more than one error to phrase

    def _construct_mix(self, path: YamlPath) -> None:
        self.mixed_steps.add(path)
        step = _value_at(self.data, path)
        present = [k for k in STEP_KINDS if isinstance(step, dict) and k in step]
        kinds = ", ".join(STEP_KINDS)
        if present:
            both = " and ".join(f"`{k}`" for k in present)
            message = f"this step has {both}; a step has exactly one of {kinds} (split it into separate steps)"
        else:
            message = f"this step has none of {kinds}; say what it does"
        self._add(Finding("LG204", message, path, at="key"))

    def _field_for_kind(self, step_path: YamlPath, key: str, kind: str) -> None:
        homes = [k for k, allowed in kind_fields().items() if key in allowed]
        if not homes:  # not a step key at all: the step's own additionalProperties reports it
            return
        where = " and ".join(homes)
        message = f"`{key}` is not allowed on {_a(kind)} step; it belongs to {where} steps"
        hint = None
        if kind == "evaluate":
            hint = ("an evaluate step takes only `evaluate` and `out` (besides id, after and when); "
                    "its failures are final: never retried, never routed to on_fail")
        self._add(Finding("LG205", message, (*step_path, key), at="key", hint=hint))

    def _unknown_key(self, path: YamlPath, key: str, free: list[str], allowed: list[str], noun: str) -> None:
        suggestion = _closest(key, free)
        if noun == "an ensure item":
            message = f"unknown ensure predicate `{key}`; an ensure item is one of {', '.join(allowed)}"
        else:
            message = f"unknown key `{key}` in {noun}"
        if suggestion is not None:
            message += f"; did you mean `{suggestion}`?"
        self._add(Finding("LG202", message, (*path, key), at="key", replacement=suggestion))

    def _without_cascades(self) -> list[Finding]:
        """Drop findings that only restate another: a missing key whose misspelling is reported,
        a missing construct whose misspelt key is reported."""
        typos: dict[YamlPath, set[str]] = {}
        for f in self.findings.values():
            if f.code == "LG202" and f.replacement is not None:
                typos.setdefault(f.path[:-1], set()).add(f.replacement)
        out = []
        for f in self.findings.values():
            if f.code == "LG203" and _missing_key(f) in typos.get(f.path, set()):
                continue
            if f.code == "LG204" and typos.get(f.path, set()) & set(STEP_KINDS):
                continue
            out.append(f)
        return out


def _missing_key(finding: Finding) -> str:
    match = re.search(r"`([^`]+)`", finding.message)
    return match.group(1) if match else ""


def _is_step_one_of(err: Any) -> bool:
    return [str(p) for p in err.schema_path] == ["$defs", "step", "oneOf"]


# -- schema helpers -----------------------------------------------------------------------------


def _schema_at(schema_path: Iterable[str]) -> dict[str, Any]:
    node: Any = spec_schema()
    for part in schema_path:
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return {}
    return _resolve(node) if isinstance(node, dict) else {}


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        return _schema_at(ref[2:].split("/"))
    return node


@cache
def kind_fields() -> dict[str, frozenset[str]]:
    """Step kind -> the keys a step of that kind allows (``id``, ``after`` and ``when``
    included), read from the schema's per-kind definitions: the one source for LG205 and
    for the language server's step-key completion."""
    defs = spec_schema()["$defs"]
    return {kind: frozenset(defs[name].get("properties", {})) for name, kind in _KIND_DEFS.items()}


def _noun(schema_path: list[str]) -> str:
    """What the object validated at ``schema_path`` is called: the last definition or property
    name on the way to it."""
    name = ""
    parts = list(schema_path)
    for i, part in enumerate(parts[:-1]):
        if part in ("$defs", "properties"):
            name = parts[i + 1]
    return _NOUNS.get(name, f"`{name}`" if name else "the spec")


def _pattern_name(schema_path: list[str], path: YamlPath) -> str:
    for i, part in enumerate(schema_path[:-1]):
        if part == "$defs" and schema_path[i + 1] in _PATTERN_NAMES:
            name = _PATTERN_NAMES[schema_path[i + 1]]
            if name == "a step id" and path and path[-1] == "agent":
                return "agent name"
            return name.split(" ", 1)[1]
    return "name"


def _describe_schema(schema: dict[str, Any]) -> str:
    if schema.get("type") == "integer" and schema.get("minimum") == 1:
        return "a positive integer"
    kinds = schema.get("type")
    if isinstance(kinds, str):
        return _TYPE_WORDS.get(kinds, kinds)
    return "a valid value"


def _required_hint(key: str) -> str | None:
    return {
        "version": "add `version: 1` at the top",
        "on_revise": "a gate lists all three routes; use null for one it does not offer",
        "on_approve": "a gate lists all three routes; use null to complete the flow",
        "on_kill": "a gate lists all three routes; use null to end the flow",
        "out": "name the contract the computed object must satisfy",
        "with": "give the subflow's input fields (use {} when it has none)",
        "command": "the shell command line the engine runs (as /bin/sh -c) in the workspace",
        "timeout_ms": "the longest the command may run, in milliseconds (e.g. 60000)",
    }.get(key)


def _a(word: str) -> str:
    """``word`` with its indefinite article ("a gate", "an evaluate")."""
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


# -- value helpers ------------------------------------------------------------------------------

_TYPE_WORDS = {
    "string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
    "object": "a mapping", "array": "a list", "null": "null",
}


def _value_at(data: Any, path: YamlPath) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(shown, ensure_ascii=False)}"
    return f"`{value}`"


def _name(path: YamlPath) -> str:
    if not path:
        return "the document"
    last = path[-1]
    if isinstance(last, int):
        parent = path[-2] if len(path) > 1 else ""
        return f"`{parent}[{last}]`"
    return f"`{last}`"


def _closest(value: Any, options: list[str]) -> str | None:
    if not isinstance(value, str) or not options:
        return None
    lowered = {o.lower(): o for o in options}
    if value.lower() in lowered:
        return lowered[value.lower()]
    match = difflib.get_close_matches(value, options, n=1, cutoff=0.6)
    return match[0] if match else None


def _conform(value: str, lowercase: bool = True) -> str:
    """A name made to match the id pattern: lowercase, invalid characters to ``_``."""
    fixed = re.sub(r"[^a-zA-Z0-9_-]" if lowercase else r"[^a-zA-Z0-9_]", "_", value.strip())
    if lowercase:
        fixed = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", fixed).lower()
    if not fixed or not fixed[0].isalpha():
        fixed = "s" + fixed if lowercase else "_" + fixed
    return fixed


def _plain_message(err: Any, path: YamlPath, data: Any) -> str:
    return f"{_name(path)}: {err.message}"


__all__ = ["check_structure"]
