"""The grace an evaluate command left by a dead process gets before the MCP server calls it
gone restarts for each dead claim: a second drive that dies after a first one's grace ran out
has a command of its own stopping (lockgate.mcp.runners.gone_in)."""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.mcp.runners import DEAD_GRACE_S, gone_in

OUT = {"status": "evaluating", "evaluating": [{"step_id": "check", "started_at": 0}]}


@dataclass
class Claim:
    owner: str


class Stored:
    """The engine calls gone_in makes, answering from a run whose claim names ``dead``."""

    def __init__(self, dead: str) -> None:
        self.dead = Claim(dead)

    def driver_of(self, run_id: str) -> None:
        return None  # no live process holds the run

    def evaluations(self, run_id: str) -> list[dict]:
        return [{"step_id": "check"}]  # not run by this engine: left by the dead process

    def claim_of(self, run_id: str) -> Claim:
        return self.dead


def test_each_dead_claim_gets_its_own_grace() -> None:
    seen: dict = {}
    assert gone_in(Stored("drive-a"), "r", OUT, seen) > DEAD_GRACE_S - 1  # first seen now
    seen["r"] = ("drive-a", seen["r"][1] - DEAD_GRACE_S)  # as if its grace ran out
    assert gone_in(Stored("drive-a"), "r", OUT, seen) == 0.0
    assert gone_in(Stored("drive-b"), "r", OUT, seen) > DEAD_GRACE_S - 1  # another drive died: its own grace
