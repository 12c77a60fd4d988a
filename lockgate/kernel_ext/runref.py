"""What a RUN argument of ``%flow`` names: a run of this kernel, or a run id in the store.

``%flow`` is ``@no_var_expand`` (gate notes and inputs are taken literally), so RUN arguments
are expanded here the way IPython users expect: ``$name`` is a variable, ``{expr}`` a Python
expression, and a bare name a variable when one exists; any of them may hold a run object or a
run id string. A run id that a run object of this kernel has means that object, so a decision
reaches its gate card at once and a resume does not drive the run twice.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError


def referenced(shell: Any, word: str, verb: str) -> Any:
    """The value ``word`` stands for: a variable's or expression's value, else ``word`` itself."""
    if word.startswith("$") and word[1:].isidentifier():
        if word[1:] not in shell.user_ns:
            raise UsageError(f"%flow {verb}: no variable named {word[1:]!r}")
        return shell.user_ns[word[1:]]
    if len(word) > 2 and word.startswith("{") and word.endswith("}"):
        try:
            return shell.ev(word[1:-1])
        except Exception as exc:  # noqa: BLE001 - the user's expression: any error is theirs to see, in one line
            raise UsageError(f"%flow {verb}: {word} failed: {type(exc).__name__}: {exc}") from None
    if word.isidentifier() and word in shell.user_ns:
        return shell.user_ns[word]
    return word


def run_target(shell: Any, word: str, verb: str) -> tuple[Any, str | None]:
    """(the run object of this kernel RUN names, or None; its run id, None when not planned)."""
    value = referenced(shell, word, verb)
    if is_run(value):
        return value, value.run_id
    if isinstance(value, str):
        return live_run(shell, value), value
    raise UsageError(f"%flow {verb}: {word} is a {type(value).__name__}, not a run or a run id")


def is_run(value: Any) -> bool:
    return hasattr(value, "rows") and hasattr(value, "run_id")


def live_run(shell: Any, run_id: str) -> Any:
    """The run object in the user's namespace with this id, preferring one still driven here."""
    runs = [v for v in list(shell.user_ns.values()) if is_run(v) and v.run_id == run_id]
    return next((r for r in runs if r._task is not None and not r._task.done()), runs[-1] if runs else None)
