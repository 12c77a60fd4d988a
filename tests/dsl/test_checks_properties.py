"""run_checks is total: it never raises on specs built from random mutations of valid specs,
and the graph helpers stay defined on them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl import graph
from lockgate.dsl.checks import run_checks
from lockgate.dsl.ir import build_spec

ROOT = Path(__file__).parents[2]
SEEDS = [
    yaml.safe_load(p.read_text())
    for p in sorted([*(ROOT / "examples").glob("*.stratum.yaml"),
                     *(Path(__file__).parent / "corpus" / "valid").glob("*.stratum.yaml")])
]

TEXTS = st.sampled_from([
    "", "x", "${", "}", "${}", "${input}", "${item}", "${prev}", "${item.x}", "${a.output}",
    "${write.output.text}", "${plan.output[0]}", "${input.topic}", "${wave}", "${check.output[0].ok}",
    "result.x", "result.write.text", "len(result)", "item == prev", "(((", "file_exists('a')",
    "matches(result.v, '(a+)+')", "R", "Draft", "Draft[]", "string?", "low|high", "Meta?", "main",
    "claude", "codex", "null", "constructor", "__proto__", "write", "critique", "decide", "plan",
])
LEAVES = st.one_of(TEXTS, st.none(), st.booleans(), st.integers(-2, 5), st.just([]), st.just({}),
                   st.lists(TEXTS, max_size=3), st.dictionaries(TEXTS, TEXTS, max_size=2))


def _slots(data: Any, out: list) -> list:
    """Every (container, key) pair in ``data``, depth first."""
    if isinstance(data, dict):
        for key in list(data):
            out.append((data, key))
            _slots(data[key], out)
    elif isinstance(data, list):
        for i in range(len(data)):
            out.append((data, i))
            _slots(data[i], out)
    return out


@st.composite
def mutated_specs(draw) -> Any:
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        slots = _slots(data, [])
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["replace", "delete", "duplicate", "rekey"]))
        if action == "replace":
            container[key] = draw(LEAVES)
        elif action == "delete":
            del container[key]
        elif action == "duplicate" and isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
        elif action == "rekey" and isinstance(container, dict):
            container[draw(TEXTS)] = container.pop(key)
    return data


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_run_checks_never_raises_on_mutated_specs(data: Any) -> None:
    spec = build_spec(data)
    findings = run_checks(spec)
    assert all(f.code.startswith("LG") and isinstance(f.path, tuple) for f in findings)
    for f in findings:
        if f.span is not None:
            assert 0 <= f.span[0] <= f.span[1]
    for name in spec.flows:
        flow = spec.flows[name]
        graph.flow_graph(spec, name)
        graph.topological_generations(flow)
        for sid in flow.step_map:
            graph.reset_closure(flow, sid)


def test_seeds_are_valid_starting_points() -> None:
    assert len(SEEDS) >= 10
    for data in SEEDS:
        assert [f for f in run_checks(build_spec(data), lint=False)] == []
