"""Inputs typed as text are read by their declared type (CLI --input and %flow run --input)."""

import pytest

from lockgate.dsl.inputtext import InputPairError, input_from_text, inputs_from_pairs


@pytest.mark.parametrize(("text", "declared", "value"), [
    ("42", "string", "42"),
    ("1.10", "string?", "1.10"),
    ("true", "low|true", "true"),
    ('"quoted"', "string", '"quoted"'),
    ("42", "integer", 42),
    ("1.5", "number?", 1.5),
    ("true", "boolean", True),
    ("[1, 2]", "integer[]", [1, 2]),
    ('{"a": 1}', "Review", {"a": 1}),
    ("not json", "integer", "not json"),
    ("42", None, 42),
    ("NaN", None, "NaN"),
    ("1e400", "number", "1e400"),
    ("[1e400]", "number[]", "[1e400]"),
])
def test_text_is_read_by_the_declared_type(text, declared, value):
    assert input_from_text(text, declared) == value


DECLARED = {"topic": "string", "count": "integer"}


@pytest.mark.parametrize(("pairs", "inputs"), [
    (["topic=42", "count=3"], {"topic": "42", "count": 3}),
    ([" topic =x", "\tcount\t=3"], {"topic": "x", "count": 3}),
    (["topic= two words ", "count= 3 "], {"topic": " two words ", "count": 3}),
    (["topic=a=b", "count="], {"topic": "a=b", "count": ""}),
    (["topic=first", "topic=second"], {"topic": "second"}),
    (["extra=[1]"], {"extra": [1]}),
])
def test_pairs_trim_the_key_and_keep_the_value(pairs, inputs):
    assert inputs_from_pairs(pairs, DECLARED) == inputs


@pytest.mark.parametrize(("pair", "message"), [
    ("topic", "--input expects KEY=VALUE, got 'topic'"),
    ("", "--input expects KEY=VALUE, got ''"),
    ("=x", "--input expects KEY=VALUE, got '=x' (the KEY is empty)"),
    ("  =x", "--input expects KEY=VALUE, got '  =x' (the KEY is empty)"),
])
def test_a_text_that_is_not_a_pair_is_refused_by_name(pair, message):
    with pytest.raises(InputPairError) as caught:
        inputs_from_pairs(["topic=ok", pair], DECLARED)
    assert str(caught.value) == message
