"""The live progress table of ``lockgate run`` in a terminal too short for it shows the steps
still in play (running, failed, waiting at a gate) and summarises the finished ones ("15
finished"); the terminal used to cut the bottom of the table, where the running steps are."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from lockgate.cli.run import Progress


def event(kind: str, step: str) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, step_id=step, attempt=1, agent="writer", violations=None, message="",
                           data={}, status=None)


def progress(height: int) -> Progress:
    """A progress display on a terminal of ``height`` lines: 18 steps done, then one running,
    one failed and a gate waiting."""
    shown = Progress()
    shown.console = Console(file=io.StringIO(), height=height, width=100, force_terminal=True, color_system=None)
    for i in range(18):
        shown._row(event("step_succeeded", f"done{i}"))
    for kind, step in (("step_started", "drafting"), ("step_failed", "checking"), ("gate_waiting", "review")):
        shown._row(event(kind, step))
    return shown


def rendered(shown: Progress) -> list[str]:
    shown.console.print(shown._table())
    return shown.console.file.getvalue().splitlines()


def steps(lines: list[str]) -> list[str]:
    """The first cell of each body row of a rendered table."""
    return [line.split("│")[1].strip() for line in lines if line.startswith("│")]


def test_a_short_terminal_shows_the_steps_in_play_first_and_counts_the_finished():
    lines = rendered(progress(height=12))
    assert len(lines) < 12
    assert steps(lines) == ["drafting", "checking", "review", "done16", "done17", "16 more finished, not shown"]


def test_a_terminal_too_short_even_for_the_steps_in_play_counts_those_too():
    lines = rendered(progress(height=8))
    assert len(lines) < 8 and steps(lines) == ["drafting", "2 more in play, 18 more finished, not shown"]


def test_a_table_that_fits_keeps_every_row_in_the_order_the_steps_came():
    lines = rendered(progress(height=40))
    assert steps(lines) == [*(f"done{i}" for i in range(18)), "drafting", "checking", "review"]
