"""A Python agent's result in the Python types that stand for JSON values (NumPy numbers and
arrays, enums, float/int/str subclasses, tuples) is taken as those JSON values: notebook code
returns them all the time, and a contract accepts only JSON's own types."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from lockgate import run_sync
from lockgate.engine.agents import PythonAgent, Task
from lockgate.engine.agents.python import json_types
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Scores:
    mean: number
    count: integer
    best: boolean
    label: string
    values: number[]
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s.output}", contract: Scores}
    steps:
      - {id: s, agent: a, do: "score", out: Scores, attempts: 1, ensure: [{expr: "result.mean > 0.5"}]}
"""


class Label(str, enum.Enum):
    GOOD = "good"


class Count(enum.IntEnum):
    THREE = 3


def numpy_scores(task: Task) -> dict:
    values = np.array([0.5, 1.0, 1.25])
    return {"mean": values.mean(), "count": np.int64(3), "best": np.bool_(True), "label": np.str_("good"),
            "values": values}


def python_scores(task: Task) -> dict:
    return {"mean": type("Ratio", (float,), {})(0.9), "count": Count.THREE, "best": True, "label": Label.GOOD,
            "values": (0.5, 1, 1.25)}


@pytest.mark.parametrize("agent", [numpy_scores, python_scores])
def test_a_result_in_json_like_python_types_passes_its_contract_as_json(agent) -> None:
    result = run_sync(SPEC, {}, agents={"a": agent}, store=open_store("memory"))
    assert result.ok, result.response
    assert result.output["count"] == 3 and type(result.output["count"]) is int
    assert type(result.output["mean"]) is float and type(result.output["label"]) is str
    assert result.output["best"] is True and result.output["values"] == [0.5, 1, 1.25]


async def test_what_is_not_json_is_still_refused_by_name() -> None:
    failure = (await PythonAgent("a", lambda task: {"n": {1, 2}}).execute(Task("r", "s", "p"))).failure
    assert failure.startswith("agent 'a' returned a value that is not JSON (result.n: ")


def test_plain_values_are_returned_as_they_are() -> None:
    value = {"a": [1, 2.5, "x", None, True, {"b": []}]}
    assert json_types(value) == value
    cyclic: list = []
    cyclic.append(cyclic)
    assert json_types(cyclic) is cyclic  # left for the JSON check to name


@pytest.mark.parametrize("value", [np.datetime64("2024-01-02T03:04:05", "ns"), np.timedelta64(5, "s"),
                                   np.array(["2024-01-01"], dtype="datetime64[ns]"), np.bytes_(b"ab")])
async def test_numpy_dates_durations_and_bytes_are_refused_not_read_as_counts(value) -> None:
    """Their tolist() gives nanoseconds since 1970 or bytes, which would pass for numbers."""
    failure = (await PythonAgent("a", lambda task: {"x": value}).execute(Task("r", "s", "p"))).failure
    assert failure.startswith("agent 'a' returned a value that is not JSON (result.x: expected a JSON value, found ")


async def test_dict_subclasses_are_taken_as_objects() -> None:
    import collections

    for value in (collections.OrderedDict(x=1), collections.defaultdict(int, x=1)):
        result = await PythonAgent("a", lambda task, value=value: value).execute(Task("r", "s", "p"))
        assert result.ok and result.output == {"x": 1} and type(result.output) is dict
