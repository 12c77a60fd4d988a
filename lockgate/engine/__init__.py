"""The run engine: the consumer protocol (:class:`Engine`) over a durable :class:`Store`.

``Engine.plan`` starts a run and answers with what to execute; ``step_done`` and
``gate_resolve`` report results and decisions, fenced by tokens; every transition is persisted
before it answers. Responses are JSON-ready dicts (see :mod:`lockgate.engine.responses`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Engine": "lockgate.engine.engine",
    "load_live": "lockgate.engine.engine",
    "response": "lockgate.engine.responses",
    "dispatch_entry": "lockgate.engine.responses",
    "gate_entry": "lockgate.engine.responses",
    "error_response": "lockgate.engine.responses",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lockgate.engine' has no attribute {name!r}")
    return getattr(import_module(module), name)
