"""How ``%flow run --input KEY=VALUE`` splits a pair (dsl.inputtext.inputs_from_pairs, shared
with ``lockgate run --input``): KEY trimmed, VALUE verbatim and read by its declared type, the
last pair for a KEY wins, and a text with no ``=`` or an empty KEY is a UsageError. The magic
runs in an in-process shell; the run it would start is replaced by a record of its inputs."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError


@pytest.fixture
def started(shell, reviewed_work, monkeypatch):
    """The inputs each %flow run of ``rw`` (input ``text: string``) hands to start_run, which
    starts nothing here."""
    from lockgate.kernel_ext import run_view

    calls: list[dict] = []
    monkeypatch.setattr(run_view, "start_run", lambda spec, inputs, **kw: calls.append(dict(inputs)))
    shell.run_cell_magic("flow", "rw", reviewed_work)
    return calls


@pytest.mark.parametrize(("line", "inputs"), [
    ("--input ' text =x' --input 'extra =3'", {"text": "x", "extra": 3}),
    ("--input 'text= two words ' --input 'extra= [1] '", {"text": " two words ", "extra": [1]}),
    ("--input text=42 --input extra=a=b", {"text": "42", "extra": "a=b"}),
    ("--input text=first --input text=second", {"text": "second"}),
])
def test_the_key_is_trimmed_and_the_value_kept(shell, started, line, inputs):
    shell.run_line_magic("flow", f"run rw {line}")
    assert started == [inputs]


def test_pairs_override_the_inputs_mapping(shell, started):
    shell.user_ns["given"] = {"text": "from dict", "extra": 1}
    shell.run_line_magic("flow", "run rw --inputs given --input extra=2")
    assert started == [{"text": "from dict", "extra": 2}]


@pytest.mark.parametrize(("pair", "message"), [
    ("text", "%flow run: --input expects KEY=VALUE, got 'text'"),
    ("' =x'", "%flow run: --input expects KEY=VALUE, got ' =x' (the KEY is empty)"),
])
def test_a_text_that_is_not_a_pair_is_a_usage_error(shell, started, pair, message):
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("flow", f"run rw --input text=1 --input {pair}")
    assert str(caught.value) == message
    assert started == []
