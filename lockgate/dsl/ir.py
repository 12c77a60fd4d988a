"""The typed IR of a ``version: 1`` spec.

:func:`build_spec` turns the plain data of a YAML document into these frozen values. It never
raises: a field of the wrong shape becomes ``None`` (or empty) and the schema pass reports it, so
semantic checks, the language server and the graph still work on half-written documents. Every
node records ``at``, its YAML path, which the source map turns into ranges.
"""

from __future__ import annotations

import json

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .diagnostics import YamlPath

STEP_KINDS = ("do", "set", "gate", "fanout", "run", "evaluate")


@dataclass(frozen=True, slots=True)
class ContractDecl:
    """A named contract: field name -> type string (e.g. ``"string[]?"``)."""

    name: str
    fields: Mapping[str, Any]
    at: YamlPath


@dataclass(frozen=True, slots=True)
class Ensure:
    """One postcondition; ``kind`` is ``expr``, ``file_exists``, ``file_contains`` or ``judged``."""

    kind: str
    at: YamlPath
    expr: str | None = None
    path: str | None = None
    text: str | None = None
    statement: str | None = None
    stakes: str = "default"

    @property
    def expression(self) -> str | None:
        """The predicate as expression source (file predicates become builtin calls)."""
        if self.kind == "expr":
            return self.expr
        if self.kind == "file_exists" and self.path is not None:
            return f"file_exists({_quote(self.path)})"
        if self.kind == "file_contains" and self.path is not None and self.text is not None:
            return f"file_contains({_quote(self.path)}, {_quote(self.text)})"
        return None


@dataclass(frozen=True, slots=True)
class Iterate:
    max: int | None
    until: str | None
    at: YamlPath


@dataclass(frozen=True, slots=True)
class Budget:
    usd: float | None
    tokens: int | None
    dispatches: int | None
    ms: int | None
    at: YamlPath

    def limits(self) -> dict[str, float]:
        """The declared keys only (a ledger enforces just these)."""
        raw = {"usd": self.usd, "tokens": self.tokens, "dispatches": self.dispatches, "ms": self.ms}
        return {k: v for k, v in raw.items() if v is not None}


@dataclass(frozen=True, slots=True)
class Gate:
    on_approve: str | None
    on_revise: str | None
    on_kill: str | None
    max_rounds: int | None
    at: YamlPath

    def routes(self) -> dict[str, str | None]:
        return {"approve": self.on_approve, "revise": self.on_revise, "kill": self.on_kill}


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a fanout, run once per item."""

    index: int
    do: str | None
    at: YamlPath
    agent: str | None = None
    out: str | None = None
    ensure: tuple[Ensure, ...] = ()
    attempts: int | None = None
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Fanout:
    over: str | None
    stages: tuple[Stage, ...]
    at: YamlPath
    concurrency: int | None = None
    isolation: str | None = None
    require: str | int | None = None
    merge: str | None = None
    pre_merge: tuple[str, ...] = ()
    dispatch: str = "engine"

    @property
    def engine_worktrees(self) -> bool:
        """Whether the engine gives each item a git worktree of its own and merges it back
        (``isolation: worktree`` with engine dispatch; a consumer-dispatched fanout's consumer
        places its items itself)."""
        return self.isolation == "worktree" and self.dispatch != "consumer"


@dataclass(frozen=True, slots=True)
class Evaluate:
    """An external checker the engine runs itself: ``command`` (a ``/bin/sh -c`` line), the
    ``in`` template rendered to its stdin as JSON, and ``timeout_ms``."""

    command: str | None
    in_: str | None
    timeout_ms: int | None
    at: YamlPath


@dataclass(frozen=True, slots=True)
class Step:
    """A step: ``kind`` names its construct (``do``, ``set``, ``gate``, ``fanout``, ``run`` or
    ``evaluate``), or is None when the step has none or several (the schema reports it)."""

    id: str | None
    index: int
    kind: str | None
    at: YamlPath
    after: tuple[str, ...] = ()
    when: str | None = None
    do: str | None = None
    set: Mapping[str, Any] | None = None
    agent: str | None = None
    out: str | None = None
    ensure: tuple[Ensure, ...] = ()
    attempts: int | None = None
    iterate: Iterate | None = None
    budget: Budget | None = None
    on_fail: str | None = None
    gate: Gate | None = None
    fanout: Fanout | None = None
    run: str | None = None
    with_: Any = None
    evaluate: Evaluate | None = None
    keys: tuple[str, ...] = ()

    @property
    def max_attempts(self) -> int:
        return self.attempts or 2


@dataclass(frozen=True, slots=True)
class CarryVar:
    name: str
    initial: str | None
    on_revise: Mapping[str, Any]
    at: YamlPath


@dataclass(frozen=True, slots=True)
class FlowOutput:
    from_: str | None
    contract: str | None
    at: YamlPath


@dataclass(frozen=True)
class Flow:
    name: str
    at: YamlPath
    input: Mapping[str, Any] = field(default_factory=dict)
    output: FlowOutput | None = None
    steps: tuple[Step, ...] = ()
    max_rounds: int | None = None
    budget: Budget | None = None
    carry: Mapping[str, CarryVar] = field(default_factory=dict)

    @cached_property
    def step_map(self) -> dict[str, Step]:
        """Steps by id; the first wins when ids repeat (the validator reports duplicates)."""
        out: dict[str, Step] = {}
        for step in self.steps:
            if step.id is not None and step.id not in out:
                out[step.id] = step
        return out

    def step(self, step_id: str) -> Step | None:
        return self.step_map.get(step_id)


@dataclass(frozen=True)
class Spec:
    """A whole spec document."""

    version: Any
    entry: str | None
    contracts: Mapping[str, ContractDecl]
    flows: Mapping[str, Flow]

    @property
    def entry_flow(self) -> Flow | None:
        return self.flows.get(self.entry) if self.entry else None

    def flow(self, name: str | None = None) -> Flow | None:
        return self.entry_flow if name is None else self.flows.get(name)


# -- building -----------------------------------------------------------------------------------


StepMemo = Callable[[int, Any, YamlPath, Callable[[], "Step"]], "Step"]


def build_spec(data: Any, *, step_memo: StepMemo | None = None) -> Spec:
    """Build the IR from parsed YAML data, tolerating any shape.

    ``step_memo(index, data, at, build)`` may return a Step remembered for the same content
    instead of calling ``build()`` (the loader reuses unchanged steps across edits)."""
    root = _map(data)
    contracts = {
        name: ContractDecl(name, _map(fields), ("contracts", name))
        for name, fields in _map(root.get("contracts")).items()
        if isinstance(name, str)
    }
    flows_data = _map(root.get("flows"))
    entry = flows_data.get("entry")
    flows = {
        name: _flow(name, body, step_memo)
        for name, body in flows_data.items()
        if isinstance(name, str) and name != "entry"
    }
    return Spec(root.get("version"), entry if isinstance(entry, str) else None, contracts, flows)


def _flow(name: str, data: Any, step_memo: StepMemo | None = None) -> Flow:
    at: YamlPath = ("flows", name)
    body = _map(data)
    out = body.get("output")
    output = None
    if isinstance(out, Mapping):
        output = FlowOutput(_str(out.get("from")), _str(out.get("contract")), (*at, "output"))
    steps_data = body.get("steps")
    items = steps_data if isinstance(steps_data, list) else []
    if step_memo is None:
        steps = tuple(_step(i, s, (*at, "steps", i)) for i, s in enumerate(items))
    else:
        steps = tuple(_memo_step(step_memo, i, s, (*at, "steps", i)) for i, s in enumerate(items))
    carry = {
        cname: CarryVar(
            cname,
            _str(_map(cdata).get("initial")),
            _map(_map(cdata).get("on_revise")),
            (*at, "carry", cname),
        )
        for cname, cdata in _map(body.get("carry")).items()
        if isinstance(cname, str)
    }
    return Flow(
        name=name,
        at=at,
        input=_map(body.get("input")),
        output=output,
        steps=steps,
        max_rounds=_int(body.get("max_rounds")),
        budget=_budget(body.get("budget"), (*at, "budget")),
        carry=carry,
    )


def _memo_step(step_memo: StepMemo, index: int, data: Any, at: YamlPath) -> Step:
    return step_memo(index, data, at, lambda: _step(index, data, at))


def _step(index: int, data: Any, at: YamlPath) -> Step:
    body = _map(data)
    present = [k for k in STEP_KINDS if k in body]
    kind = present[0] if len(present) == 1 else None
    gate = body.get("gate")
    fanout = body.get("fanout")
    iterate = body.get("iterate")
    evaluate = body.get("evaluate")
    return Step(
        id=_str(body.get("id")),
        index=index,
        kind=kind,
        at=at,
        after=tuple(a for a in _list(body.get("after")) if isinstance(a, str)),
        when=_str(body.get("when")),
        do=_str(body.get("do")),
        set=body["set"] if isinstance(body.get("set"), Mapping) else None,
        agent=_str(body.get("agent")),
        out=_str(body.get("out")),
        ensure=_ensures(body.get("ensure"), (*at, "ensure")),
        attempts=_int(body.get("attempts")),
        iterate=Iterate(_int(iterate.get("max")), _str(iterate.get("until")), (*at, "iterate"))
        if isinstance(iterate, Mapping)
        else None,
        budget=_budget(body.get("budget"), (*at, "budget")),
        on_fail=_str(body.get("on_fail")),
        gate=Gate(
            _str(gate.get("on_approve")),
            _str(gate.get("on_revise")),
            _str(gate.get("on_kill")),
            _int(gate.get("max_rounds")),
            (*at, "gate"),
        )
        if isinstance(gate, Mapping)
        else None,
        fanout=_fanout(fanout, (*at, "fanout")) if isinstance(fanout, Mapping) else None,
        run=_str(body.get("run")),
        with_=body.get("with"),
        evaluate=_evaluate(evaluate, (*at, "evaluate")) if isinstance(evaluate, Mapping) else None,
        keys=tuple(k for k in body if isinstance(k, str)),
    )


def _fanout(data: Mapping[str, Any], at: YamlPath) -> Fanout:
    stages = tuple(
        Stage(
            index=i,
            do=_str(_map(s).get("do")),
            at=(*at, "steps", i),
            agent=_str(_map(s).get("agent")),
            out=_str(_map(s).get("out")),
            ensure=_ensures(_map(s).get("ensure"), (*at, "steps", i, "ensure")),
            attempts=_int(_map(s).get("attempts")),
            when=_str(_map(s).get("when")),
        )
        for i, s in enumerate(_list(data.get("steps")))
    )
    require = data.get("require")
    dispatch = data.get("dispatch")
    return Fanout(
        over=_str(data.get("over")),
        stages=stages,
        at=at,
        concurrency=_int(data.get("concurrency")),
        isolation=_str(data.get("isolation")),
        require=require if isinstance(require, str) else _int(require),
        merge=_str(data.get("merge")),
        pre_merge=tuple(c for c in _list(data.get("pre_merge")) if isinstance(c, str)),
        dispatch=dispatch if isinstance(dispatch, str) else "engine",
    )


def _evaluate(data: Mapping[str, Any], at: YamlPath) -> Evaluate:
    return Evaluate(_str(data.get("command")), _str(data.get("in")), _int(data.get("timeout_ms")), at)


def _ensures(data: Any, at: YamlPath) -> tuple[Ensure, ...]:
    out = []
    for i, item in enumerate(_list(data)):
        body = _map(item)
        here = (*at, i)
        if "expr" in body:
            out.append(Ensure("expr", here, expr=_str(body["expr"])))
        elif "file_exists" in body:
            out.append(Ensure("file_exists", here, path=_str(body["file_exists"])))
        elif "file_contains" in body:
            fc = _map(body["file_contains"])
            out.append(Ensure("file_contains", here, path=_str(fc.get("path")), text=_str(fc.get("text"))))
        elif "judged" in body:
            jd = _map(body["judged"])
            stakes = jd.get("stakes")
            out.append(
                Ensure("judged", here, statement=_str(jd.get("statement")),
                       stakes=stakes if isinstance(stakes, str) else "default")
            )
    return tuple(out)


def _budget(data: Any, at: YamlPath) -> Budget | None:
    if not isinstance(data, Mapping):
        return None
    usd = data.get("usd")
    return Budget(
        usd=float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None,
        tokens=_int(data.get("tokens")),
        dispatches=_int(data.get("dispatches")),
        ms=_int(data.get("ms")),
        at=at,
    )


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    """An integer field's value: ``3`` or ``3.0`` (JSON Schema, like JavaScript, counts an
    integral float as an integer, so the schema lets it through), else None."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _quote(text: str) -> str:
    """``text`` as a string literal of the expression language: its escapes are JSON's, and a raw
    control character (a tab, a carriage return) is not allowed in it."""
    return json.dumps(text, ensure_ascii=False)
