"""Client settings: every shape a client may send gives working settings, with defaults."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from lockgate.lsp.settings import Settings


@pytest.mark.parametrize("raw, expected", [
    ({"debounceMs": 40}, 40), ({"lockgate": {"debounce_ms": 0}}, 0), ({"debounceMs": True}, 150),
    ({"debounceMs": -1}, 150), ({"debounceMs": 99_999}, 150), ({"debounceMs": "50"}, 150), (None, 150),
])
def test_the_debounce_is_a_whole_number_of_milliseconds(raw, expected) -> None:
    assert Settings.from_client(raw).debounce_ms == expected


def test_malformed_values_fall_back_to_defaults() -> None:
    settings = Settings.from_client({"lockgate": {"agents": "nope", "lint": "yes", "inlayHints": {"enabled": False}}})
    assert (settings.agents, settings.lint, settings.inlay_hints) == ((), True, False)


def test_a_workspace_root_from_an_older_client_changes_nothing() -> None:
    """The setting is gone (the server never resolves file predicates): sent, it is an unknown key."""
    sent = {"lockgate": {"agents": ["scanner"], "workspaceRoot": "/elsewhere"}}
    settings = Settings.from_client(sent)
    assert replace(settings, extra={}) == replace(Settings.from_client({"agents": ["scanner"]}), extra={})
    assert "workspace_root" not in {f.name for f in fields(Settings)}
