"""Inputs typed as text are read by their declared type (CLI --input and %flow run --input)."""

import pytest

from lockgate.dsl.inputtext import input_from_text


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
