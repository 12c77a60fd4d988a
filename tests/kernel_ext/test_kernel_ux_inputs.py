"""``%flow run --input KEY=VALUE`` reads VALUE by the type the flow declares for KEY, as
``lockgate run --input`` does (dsl.inputtext.input_from_text): verbatim for string and enum
inputs, JSON otherwise (a real kernel)."""

from __future__ import annotations

import textwrap

import pytest
from kernel_session import KernelSession

SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Echo:
        text: string
    flows:
      entry: main
      main:
        input:
          topic: string
          level: low|high|7
          count: integer
          tags: string[]
          note: string?
        output:
          from: "${echo.output}"
          contract: Echo
        steps:
          - id: echo
            do: "${input.topic}"
            agent: echo
            out: Echo
    """).lstrip()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = KernelSession(cwd)
    session.bind(typed=SPEC)
    session.run("agents = {'echo': lambda task: {'text': task.prompt}}")
    yield session
    session.close()


@pytest.mark.parametrize("pairs, inputs", [
    (["topic=42", "level=7", "count=3", 'tags=["1.10"]', "note=007"],
     {"topic": "42", "level": "7", "count": 3, "tags": ["1.10"], "note": "007"}),
    (['topic={"a": 1}', "level=low", "count=1", "tags=[]", "note=null"],
     {"topic": '{"a": 1}', "level": "low", "count": 1, "tags": [], "note": "null"}),
])
def test_each_value_is_read_by_its_declared_type(kernel, pairs, inputs):
    line = " ".join(f"--input '{pair}'" for pair in pairs)
    out = kernel.run(f"%flow run typed {line} --agents agents --as r")
    assert out.error is None and "UsageError" not in out.stderr, out.shown
    assert kernel.value("await r") == {"text": inputs["topic"]}
    assert kernel.value('r.audit()["inputs"]') == inputs


def test_a_value_that_is_not_of_its_type_is_still_refused(kernel):
    out = kernel.run("%flow run typed --input topic=x --input level=low --input count=many --input tags=[] "
                     "--agents agents")
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown  # the cell failed
    assert out.traceback.startswith("FlowCellError: %flow run: inputs do not match flow 'main'"), out.traceback
    assert "input.count: expected integer" in out.traceback
