"""check_structure: the JSON Schema pass and the mapping of its errors to findings."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lockgate.dsl.schema import schema_path, spec_schema
from lockgate.dsl.structure import check_structure
from lockgate.dsl.yamlsrc import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.stratum.yaml"))
CORPUS = sorted((Path(__file__).parent / "corpus" / "invalid").glob("*.stratum.yaml"))
REFERENCE = Path("/work/shared/reference/000_stratum.txt")

MINIMAL = """version: 1
contracts:
  SentimentResult:
    label: string
    confidence: number
flows:
  entry: classify
  classify:
    input:
      text: string
    output:
      from: "${classify_text.output}"
      contract: SentimentResult
    steps:
      - id: classify_text
        do: "Classify the sentiment of ${input.text}"
        agent: claude
        out: SentimentResult
        ensure:
          - expr: "result.label != ''"
          - expr: "result.confidence > 0.7"
        attempts: 2
"""


def spec() -> dict[str, Any]:
    return copy.deepcopy(parse_yaml(MINIMAL).data)


def step(data: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return data["flows"]["classify"]["steps"][i]


def findings(data: Any) -> list[tuple[str, tuple, str]]:
    return [(f.code, f.path, f.at) for f in check_structure(data)]


STEP = ("flows", "classify", "steps", 0)


# -- the schema ---------------------------------------------------------------------------------


def test_schema_is_valid_2020_12_and_described() -> None:
    schema = spec_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert Path(schema_path()).is_file()

    def undescribed(node: Any, where: str) -> list[str]:
        out = []
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                if isinstance(sub, dict) and "description" not in sub and "$ref" not in sub:
                    out.append(f"{where}.{name}")
            for key, sub in node.items():
                out += undescribed(sub, f"{where}/{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                out += undescribed(sub, f"{where}[{i}]")
        return out

    assert undescribed(schema, "#") == []


def _reference_examples() -> list[str]:
    if not REFERENCE.exists():
        return []
    text = REFERENCE.read_text(encoding="utf-8")
    out = []
    for title in ("Minimal Example\n\n", "Full Example with a Gate\n\n"):
        start = text.index(title) + len(title)
        end = text.index("\n\n", start)
        out.append(text[start:end] + "\n")
    return out


@pytest.mark.parametrize("text", [*(p.read_text(encoding="utf-8") for p in EXAMPLES), MINIMAL,
                                  *_reference_examples()])
def test_examples_are_valid_for_both_validators(text: str) -> None:
    data = parse_yaml(text).data
    assert data is not None
    assert list(jsonschema.Draft202012Validator(spec_schema()).iter_errors(data)) == []
    assert check_structure(data) == []


def test_examples_exist() -> None:
    assert EXAMPLES, "examples/*.stratum.yaml"


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_jsonschema_rs_and_python_jsonschema_agree(path: Path) -> None:
    import jsonschema_rs

    data = parse_yaml(path.read_bytes()).data
    if data is None:
        pytest.skip("not a YAML document")
    fast = jsonschema_rs.validator_for(spec_schema()).is_valid(data)
    slow = jsonschema.Draft202012Validator(spec_schema()).is_valid(data)
    assert fast == slow
    assert fast == (check_structure(data) == [])


# -- mapping ------------------------------------------------------------------------------------


def test_unknown_keys_one_each_with_did_you_mean() -> None:
    data = spec()
    step(data)["agnet"] = "claude"
    step(data)["colour"] = "red"
    found = check_structure(data)
    by_key = {f.path[-1]: f for f in found}
    assert set(by_key) == {"agnet", "colour"}
    assert all(f.code == "LG202" and f.at == "key" for f in found)
    assert by_key["agnet"].replacement is None  # `agent` is already present
    del step(data)["agent"]
    (typo,) = [f for f in check_structure(data) if f.path[-1] == "agnet"]
    assert typo.replacement == "agent" and "did you mean `agent`" in typo.message


def test_misspelt_required_key_is_one_finding() -> None:
    data = spec()
    flow = data["flows"]["classify"]
    flow["ouput"] = flow.pop("output")
    assert findings(data) == [("LG202", ("flows", "classify", "ouput"), "key")]


def test_missing_required_points_at_parent_key() -> None:
    data = spec()
    del data["flows"]["classify"]["output"]["contract"]
    (f,) = check_structure(data)
    assert (f.code, f.path, f.at) == ("LG203", ("flows", "classify", "output"), "key")
    assert "`contract`" in f.message


def test_every_missing_key_of_one_mapping_is_reported() -> None:
    data = spec()
    data["flows"]["classify"]["steps"].append({"id": "review", "gate": {"on_revise": None}})
    found = check_structure(data)
    gate = ("flows", "classify", "steps", 1, "gate")
    assert [(f.code, f.path, f.at) for f in found] == [("LG203", gate, "key")] * 2
    assert sorted(f.message.split("`")[1] for f in found) == ["on_approve", "on_kill"]


def test_construct_mix_silences_kind_errors() -> None:
    data = spec()
    step(data)["gate"] = {"on_approve": None, "on_revise": None, "on_kill": None}
    (f,) = check_structure(data)
    assert (f.code, f.path, f.at) == ("LG204", STEP, "key")
    assert "`do` and `gate`" in f.message


def test_no_construct() -> None:
    data = spec()
    del step(data)["do"]
    assert ("LG204", STEP, "key") in findings(data)


def test_field_not_allowed_for_kind() -> None:
    data = spec()
    step_data = step(data)
    for key in ("do", "agent", "out", "ensure", "attempts"):
        del step_data[key]
    step_data.update({"gate": {"on_approve": None, "on_revise": None, "on_kill": None}, "agent": "x"})
    (f,) = check_structure(data)
    assert (f.code, f.path, f.at) == ("LG205", (*STEP, "agent"), "key")
    assert f.message == "`agent` is not allowed on a gate step; it belongs to do steps"


def test_set_needs_out_and_run_needs_with() -> None:
    data = spec()
    data["flows"]["classify"]["steps"] += [
        {"id": "calc", "set": {"x": "1"}},
        {"id": "sub", "run": "classify"},
    ]
    found = check_structure(data)
    assert [(f.code, f.path[-1]) for f in found] == [("LG203", 1), ("LG203", 2)]
    assert "`out`" in found[0].message and "`with`" in found[1].message


@pytest.mark.parametrize(
    ("where", "value", "code", "replacement"),
    [
        (("version",), "1", "LG209", "1"),
        ((*STEP, "attempts"), 0, "LG210", None),
        ((*STEP, "attempts"), "2", "LG201", None),
        ((*STEP, "id"), "Classify", "LG208", "classify"),
        ((*STEP, "agent"), "Claude", "LG208", "claude"),
        ((*STEP, "ensure", 0), {"expr": "x", "judged": {"statement": "s"}}, "LG201", None),
        ((*STEP, "ensure", 1), {"judged": {"statement": "s", "stakes": "paranoyd"}}, "LG207", "paranoid"),
        ((*STEP, "budget"), {}, "LG201", None),
        ((*STEP, "budget"), {"usd": 0}, "LG210", None),
        ((*STEP, "do"), {"x": None}, "LG201", None),
    ],
)
def test_value_problems(where: tuple, value: Any, code: str, replacement: str | None) -> None:
    data = spec()
    parent = data
    for part in where[:-1]:
        parent = parent[part]
    if isinstance(parent, list) and where[-1] >= len(parent):
        parent.append(value)
    else:
        parent[where[-1]] = value
    found = check_structure(data)
    assert [(f.code, f.at) for f in found] == [(code, "value")], found
    assert found[0].replacement == replacement
    assert found[0].path[: len(where)] == where


def test_reserved_and_pattern_names_point_at_keys() -> None:
    data = spec()
    data["contracts"]["SentimentResult"]["constructor"] = "string"
    data["contracts"]["SentimentResult"]["2nd"] = "string"
    data["flows"]["classify"]["carry"] = {"__proto__": {"initial": "${input.text}"}, "Wave": {"initial": "${input.text}"}}
    got = sorted(findings(data))
    assert got == sorted([
        ("LG206", ("contracts", "SentimentResult", "constructor"), "key"),
        ("LG208", ("contracts", "SentimentResult", "2nd"), "key"),
        ("LG206", ("flows", "classify", "carry", "__proto__"), "key"),
        ("LG208", ("flows", "classify", "carry", "Wave"), "key"),
    ])


def test_enum_union_lists_every_choice() -> None:
    data = spec()
    data["flows"]["classify"]["steps"].append({
        "id": "fan",
        "fanout": {"over": "${input.text}", "steps": [{"do": "x"}], "concurrency": 2,
                   "isolation": "none", "require": "al", "merge": "sequential"},
    })
    (f,) = check_structure(data)
    assert f.code == "LG207" and f.replacement == "all"
    assert re.search(r"`all`, `any` or a positive integer", f.message)


@pytest.mark.parametrize("data", [None, [], "text", 3, {"version": 1}])
def test_non_spec_roots_do_not_raise(data: Any) -> None:
    found = check_structure(data)
    assert found and all(f.code.startswith("LG2") for f in found)


def test_all_problems_reported_once() -> None:
    data = spec()
    step(data)["attempts"] = 0
    step(data)["agent"] = "Bad Name"
    data["flows"]["classify"]["max_rounds"] = "3"
    data["extra"] = True
    found = check_structure(data)
    assert len(found) == len({(f.code, f.path) for f in found}) == 4
