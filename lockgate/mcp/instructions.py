"""The execution model in words: the block for CLAUDE.md / AGENTS.md and the MCP server instructions.

``lockgate agent-instructions`` prints :func:`agent_instructions`; MCP hosts receive
:data:`SERVER_INSTRUCTIONS` when they connect. Both name every tool, so an agent that reads either
knows the whole protocol.
"""

from __future__ import annotations

from .tools import TOOL_NAMES

HEADING = "## Lockgate Execution Model"

_STEPS = """\
For non-trivial tasks (several steps, anything with tests or a review), run the work through Lockgate:

1. Write a spec (`version: 1` YAML: contracts, flows of steps with `do` tasks, `ensure`
   postconditions, `gate` reviews); keep it in `.lockgate/` and do not show it to the user unless asked.
   Check it with `lockgate_validate` and fix every error.
2. Call `lockgate_plan` with the spec (or its path) and the flow inputs. Keep the `run_id`.
3. For each dispatch (`status: execute_step`): do the `task` with your own tools, then call
   `lockgate_step_done` with `run_id`, `step_id`, the dispatch's `token` and a `result` that matches
   `output_schema`, or a `failure` when you cannot do it. Narrate progress in plain English.
4. On `ensure_failed` or `schema_failed` your attempt was rejected and the step is dispatched again:
   read `violations` (`schema_failed`: your report's shape, its `result` or its `usage`;
   `ensure_failed`: a postcondition, or the `failure` you reported), fix the work itself and report
   again with the new `token`. Never fake a result to pass a check. An `execute_step` with `iterated`
   is the next round of an `iterate` step (its `until` does not hold yet): improve on your last result.
5. On `await_gate`, show the user what the gate reviews and offer the gate's `decisions` (approve /
   revise / kill; revise is left out, and `revise_unavailable` says why, when it would fail the run
   or the gate has no revise target);
   record their decision with `lockgate_gate_resolve` (`resolved_by: human`). A person may also decide from a terminal
   (`lockgate gate approve RUN STEP`); `lockgate_status` with `wait_seconds` picks the decision up, and
   `lockgate_gates` lists every gate that waits.
6. Steps with `evaluate` are checks the server runs itself (a command, no dispatch to you): the
   call that makes one ready returns only when its command has finished (up to its `timeout_ms`);
   your result is recorded before the command starts. Status `evaluating` means a command started
   elsewhere is still running (a `driven_by` process runs those of a run it drives, a `commands_by`
   process only those): call `lockgate_status` with `wait_seconds`, or `lockgate_resume` when the
   guidance says the process running it is gone (`runner_gone`: its command was stopped with it).
   Who else holds the run: `driven_by` names a process whose agents do the dispatched steps (do not
   do them too; follow it with `lockgate_status`); `stopping_by` one whose drive is stopping (Ctrl-C;
   its agents may still be finishing: wait with `lockgate_status` and `wait_seconds` until it is
   gone); `commands_by` one that only runs commands (the dispatched steps are left to you).
7. Before risky steps `lockgate_commit` a checkpoint; `lockgate_revert` returns to it (new tokens).
8. At the end call `lockgate_audit` and include the trace summary in the commit message.

Other tools: `lockgate_resume` continues a run started in another session (find it with
`lockgate_runs`); `lockgate_why` explains what a run waits on; `lockgate_graph` draws a flow or a run
as Mermaid; `lockgate_cancel` stops a run. A refused call changes nothing: its message says what to do
(a stale token means: use the token from the latest response, see `lockgate_status`).
"""

SERVER_INSTRUCTIONS = (
    "Lockgate checks your work step by step. Write a spec, lockgate_plan it, do each dispatched task with "
    "your own tools, report it with lockgate_step_done (run_id, step_id, token, result), fix and resubmit on "
    "ensure_failed/schema_failed with the new token, relay gate decisions with lockgate_gate_resolve, and "
    "finish with lockgate_audit. Each tool's description gives the details. Tools: " + ", ".join(TOOL_NAMES) + "."
)


def agent_instructions() -> str:
    """The Markdown block to append to CLAUDE.md or AGENTS.md."""
    return f"{HEADING}\n\n{_STEPS}"
