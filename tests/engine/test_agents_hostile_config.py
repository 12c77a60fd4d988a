"""lockgate.toml values that TOML accepts but no adapter can use are ConfigErrors naming the key,
not exceptions at run time: non-finite numbers, dates in a JSON body, NUL bytes, bad URLs,
environment names with '=', header values with line breaks."""

from __future__ import annotations

import tomllib

import pytest

from lockgate.engine.agents import parse_config
from lockgate.errors import ConfigError

OPENAI = 'type = "openai"\nmodel = "m"\n'
COMMAND = 'type = "command"\ncommand = ["lint"]\n'


@pytest.mark.parametrize(("table", "expected"), [
    (OPENAI + "timeout = nan", "agents.a.timeout: expected a finite number, got nan"),
    (OPENAI + "temperature = inf", "agents.a.temperature: expected a finite number, got inf"),
    (OPENAI + "extra_body = {seed = nan}", "agents.a.extra_body.seed: expected a finite number"),
    (OPENAI + "extra_body = {at = 1979-05-27T07:32:00Z}",
     "agents.a.extra_body.at: a date or time is not JSON"),
    (OPENAI + "extra_body = {stop = [1, 07:32:00]}",
     "agents.a.extra_body.stop[1]: a date or time is not JSON"),
    (OPENAI + 'base_url = "http://[::1/v1"', "agents.a.base_url: not a valid URL"),
    (OPENAI + 'base_url = "localhost:11434/v1"',
     "agents.a.base_url: expected an http:// or https:// URL with a host"),
    (OPENAI + 'base_url = "ftp://host/v1"', "expected an http:// or https:// URL with a host"),
    (OPENAI + 'headers = {"X-Team" = "a\\r\\nEvil: 1"}',
     "agents.a.headers.X-Team: a header value may not contain a line break"),
    (OPENAI + 'headers = {"Bad Name" = "v"}', "agents.a.headers: not an HTTP header name"),
    (OPENAI + "headers = {X = 1}", "agents.a.headers: expected a table of strings"),
    (COMMAND + 'env = {"A=B" = "1"}', "agents.a.env: an environment variable name must be"),
    (COMMAND + 'env = {"" = "1"}', "agents.a.env: an environment variable name must be"),
    (COMMAND + 'env = {A = "x\\u0000y"}', "agents.a.env.A: a string may not contain U+0000"),
    (COMMAND + "env = {A = true}", "agents.a.env: expected a table of strings"),
    (COMMAND + "env = [\"A=1\"]", "agents.a.env: expected a table of strings"),
    ('type = "command"\ncommand = ["lint\\u0000"]', "agents.a.command: a string may not"),
    ('type = "command"\ncommand = "lint \\u0000x"', "agents.a.command: a string may not"),
    (COMMAND + "timeout = -inf", "agents.a.timeout: expected a finite number"),
    (COMMAND + 'cwd = "\\u0000"', "agents.a.cwd: a string may not contain U+0000"),
    (COMMAND + "timeout = 30\ncommnd = 1", "unknown key 'commnd' (did you mean 'command'?)"),
    ('type = "claude"\nextra_args = ["--x", 1]', "agents.a.extra_args: expected a list of strings"),
    ('type = "codex"\nenv = {"X=1" = "2"}', "agents.a.env: an environment variable name"),
])
def test_unusable_values_are_config_errors(table, expected):
    data = tomllib.loads("[agents.a]\n" + table)
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_sound_values_still_pass():
    data = tomllib.loads("[agents.a]\n" + OPENAI + 'base_url = "http://127.0.0.1:11434/v1"\n'
                         'headers = {"X-Team" = "core"}\n'
                         'extra_body = {seed = 7, stop = ["\\n"], options = {top_k = 1.5}}\n'
                         "[agents.b]\n" + COMMAND + 'env = {LINT_MODE = "strict"}\n')
    config = parse_config(data)
    assert config.agent("a").extra_body == {"seed": 7, "stop": ["\n"], "options": {"top_k": 1.5}}
    assert config.agent("b").env == {"LINT_MODE": "strict"}
