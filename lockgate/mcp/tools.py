"""The MCP tools of ``lockgate mcp``: names, descriptions and JSON Schemas of their inputs.

The descriptions are the protocol manual a host's model reads: together they say how to write a
spec, start a run, do each dispatched step with the agent's own tools, report it, react to
violations and gates, and finish, so a host needs no other instructions. Schemas are strict
(``additionalProperties: false``) and avoid top-level ``anyOf``/``oneOf``, which several hosts
reject; "exactly one of" rules are checked by the handlers with a clear message instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.budget import MAX_SAFE_INTEGER
from ..engine.model import RUN_STATUSES
from ..engine.rounds import KEPT_ROUNDS

DECISIONS = ("approve", "revise", "kill", "reject")
RESOLVERS = ("human", "agent", "system")
MAX_WAIT_SECONDS = 300


@dataclass(frozen=True)
class ToolSpec:
    """One tool as listed to MCP hosts."""

    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...] = ()
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    schema: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        schema = {"type": "object", "properties": self.properties, "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        object.__setattr__(self, "schema", schema)


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


RUN_ID = _string("The run id returned by lockgate_plan (also listed by lockgate_runs).", minLength=1)
STEP_ID = _string("The step_id of the dispatch or gate you are answering, exactly as the server sent it "
                  "(fanout items look like 'fan/0', subflow children like 'wrap/child').", minLength=1)
TOKEN = _string("The token of that dispatch or gate, from the most recent response that issued it. "
                "Tokens are single-use: a retry or a revert issues a new one.", minLength=1)
SPEC = _string("The spec as inline YAML text (Stratum `version: 1`: contracts, flows). Give `spec` or "
               "`path`, not both.")
PATH = _string("Path of a spec file (.stratum.yaml) inside the workspace, relative to it or absolute. Give "
               "`spec` or `path`, not both.", minLength=1)
FLOW = _string("Which flow of the spec (default: the spec's flows.entry).", minLength=1)
LABEL = _string("The checkpoint label.", minLength=1, maxLength=200)
USAGE = {
    "type": "object",
    "description": "Optional spend of this attempt, counted against the budgets: any of `tokens`, `usd` and "
                   "`ms`, each a number from 0 to 2**53 - 1 (the server counts dispatches itself). A usage "
                   "of any other shape is refused, and nothing is changed.",
    "properties": {key: {"type": "number", "minimum": 0, "maximum": MAX_SAFE_INTEGER, "description": what}
                   for key, what in (("tokens", "Tokens used."), ("usd", "Money spent, in US dollars."),
                                     ("ms", "Milliseconds of work."))},
    "additionalProperties": False,
}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many entries (default 100)."}

_OVERVIEW = (
    "Lockgate runs governed workflows: you write a spec, the server plans a run and hands you one step "
    "at a time; you do the work with your own tools and report it; the server checks every result "
    "against the step's contract and `ensure` postconditions before the run moves on."
)

VALIDATE = ToolSpec(
    name="lockgate_validate",
    title="Validate a Lockgate spec",
    description=(
        "Check a Lockgate spec without starting a run. " + _OVERVIEW + "\n\n"
        "A spec is YAML with exactly `version: 1`, `contracts` (named output shapes: field -> type, "
        "types `string integer number boolean object array`, `T[]`, `a|b` enums, `T?` optional, "
        "capitalised contract names) and `flows` (`entry:` names the flow to run; each flow has "
        "`input`, `output: {from: \"${step.output}\", contract: Name}` and `steps`). A step has an `id` "
        "and exactly one of `do` (a task for an agent, with `out`, `ensure`, `attempts`), `set`, `gate` "
        "(`on_approve`/`on_revise`/`on_kill`), `fanout` or `run`. References: `${input.f}`, "
        "`${step.output.f}`. Ensures are expressions over `result`, e.g. `result.score >= 0.8`, "
        "`len(result.items) > 0`, `file_exists(result.path)`.\n\n"
        "Returns {valid, errors, warnings}; each diagnostic has `code`, `message`, a 0-based "
        "`range` {start: {line, character}, end}, the YAML `path`, and often a `hint` or `fix`. Fix "
        "every error, then call lockgate_plan."
    ),
    properties={"spec": SPEC, "path": PATH},
    read_only=True,
    idempotent=True,
)

PLAN = ToolSpec(
    name="lockgate_plan",
    title="Start a run of a spec",
    description=(
        "Validate a spec, start a durable run and get the first work. " + _OVERVIEW + "\n\n"
        "Give the spec as `spec` (inline YAML) or `path`, the flow's `inputs` (an object checked "
        "strictly against the flow's `input` fields) and optionally `flow`. Keep the returned "
        "`run_id`: every later call needs it. The response's `status` says what to do next:\n"
        "- `execute_step`: do the step described by `task` yourself (read files, write code, run "
        "tests); produce a JSON value matching `output_schema` (contract `output_contract`, fields "
        "`output_fields`) that satisfies every expression in `ensure`; then call "
        "lockgate_step_done with `run_id`, `step_id`, that dispatch's `token` and the `result`. "
        "`ready` lists every dispatch you may work on now, each with its own token; `gates` lists "
        "gates waiting meanwhile.\n"
        "- `await_gate`: only a decision can move the run. Show the user what the gate reviews and "
        "ask approve / revise / kill, then call lockgate_gate_resolve with the gate's `token`; or let "
        "a person decide from a terminal (`lockgate gate approve RUN STEP`) and call lockgate_status "
        "with `wait_seconds` to see the decision.\n"
        "- `complete` (with `output` and `trace`), `error` (`error_type`), `killed`: the run is over.\n"
        "An invalid spec or inputs start nothing and come back as an error listing every problem."
    ),
    properties={
        "spec": SPEC,
        "path": PATH,
        "inputs": {"type": "object", "description": "The flow inputs, e.g. {\"text\": \"...\"} (default {}).",
                   "additionalProperties": True},
        "flow": FLOW,
    },
)

STEP_DONE = ToolSpec(
    name="lockgate_step_done",
    title="Report a step's result",
    description=(
        "Report the result of a step you were dispatched (status `execute_step`). Pass `run_id`, "
        "`step_id`, the dispatch's `token`, and either `result` (the JSON output: an object with "
        "exactly the fields of `output_schema`; undeclared fields are rejected) or `failure` (a short "
        "reason when you could not do the task; it counts as a failed attempt). The server checks the "
        "contract, then each `ensure`. The response's `status`:\n"
        "- `ensure_failed` / `schema_failed`: the result was rejected. `violations` says exactly what "
        "failed; fix the work (not just the JSON) and report again with the NEW `token` in this "
        "response. `retries_remaining` counts the attempts left after this one. A result over 32 MiB "
        "of JSON is rejected so: write large outputs to a file in the workspace and return its path.\n"
        "- `execute_step`: next work (`ready` lists the dispatches this call released). After a round of an "
        "`iterate` step whose `until` does not hold yet, `iterated` ({step_id, round, max, until, reason}) says "
        "so and the step's next round is dispatched: improve on the result and report again with the new "
        "`token` (not a rejection).\n"
        "- `await_gate`: a gate waits for a decision (see lockgate_gate_resolve).\n"
        "- `complete`: the flow's `output` and the `trace`; call lockgate_audit for the full record.\n"
        "- `error`: e.g. `error_type: retries_exhausted`; `routed_from`/`routed_to` show an on_fail "
        "recovery route.\n"
        "A token is single-use: reporting with an old token is refused and changes nothing."
    ),
    properties={
        "run_id": RUN_ID,
        "step_id": STEP_ID,
        "token": TOKEN,
        "result": {"description": "The step's output: JSON matching the dispatch's output_schema."},
        "failure": _string("Why the task could not be done (instead of `result`); kept up to 64 KiB.",
                           minLength=1),
        "usage": USAGE,
    },
    required=("run_id", "step_id", "token"),
)

GATE_RESOLVE = ToolSpec(
    name="lockgate_gate_resolve",
    title="Decide a gate",
    description=(
        "Approve, revise or kill a gate that waits for a decision (status `await_gate`, or listed in "
        "`gates` / lockgate_gates). Gates exist for human oversight: relay the user's decision "
        "(`resolved_by: human`) unless the spec's author meant you to decide (`agent`). `approve` "
        "continues along the gate's on_approve route; `revise` sends the work back to the on_revise "
        "step (its dependents run again, limited by max_rounds) with `rationale` as the revision "
        "note, shown with the re-dispatched step; `kill` (or `reject`) ends the run unless on_kill "
        "routes elsewhere. Pass the gate's `token`. Returns the next work or the run's final status, "
        "like lockgate_step_done. If a person already decided elsewhere the call is refused and "
        "changes nothing: call lockgate_status to see the current state."
    ),
    properties={
        "run_id": RUN_ID,
        "step_id": STEP_ID,
        "outcome": {"type": "string", "enum": list(DECISIONS), "description": "The decision."},
        "rationale": _string("Why (at most 64 KiB): recorded in the audit log; for revise, the note sent back "
                             "with the step."),
        "resolved_by": {"type": "string", "enum": list(RESOLVERS), "description": "Who decided."},
        "token": TOKEN,
    },
    required=("run_id", "step_id", "outcome", "rationale", "resolved_by", "token"),
)

STATUS = ToolSpec(
    name="lockgate_status",
    title="Current state of a run",
    description=(
        "The run's current response, describing all outstanding work with current tokens (same shape "
        "as lockgate_plan's; nothing is changed). Use it after a refusal, or to learn about a gate "
        "decided by a person from the CLI or a notebook on the same store (a revise comes with the "
        "reviewer's note). With `wait_seconds`, when "
        "the run only waits for gate decisions (status `await_gate`) or for evaluate commands started "
        "elsewhere (status `evaluating`), wait up to that long for a change before answering."
    ),
    properties={
        "run_id": RUN_ID,
        "wait_seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS,
                         "description": "Wait this long at most for a gate decision made elsewhere (default 0)."},
    },
    required=("run_id",),
    read_only=True,
)

AUDIT = ToolSpec(
    name="lockgate_audit",
    title="Audit record of a run",
    description=(
        "The durable record of a run: status, inputs, output, rounds, spend, checkpoints, "
        "steps_completed / total_steps, a `trace` entry per step (status, attempts, output, failure, "
        "gate decisions: the current round only) and the hash-chained `events`. A step a gate's "
        "revise sent back has `round` (the revise round that reset it) and `earlier_rounds`: per "
        "round before, its status, attempts, spend and last failure (kind, reason cut short; a gate's "
        "`decision` in it; a "
        "fanout's `items` / a run step's `children`: counts by status, first failure), the last "
        f"{KEPT_ROUNDS} (`earlier_rounds_left_out` counts older ones); the full failures are in "
        "`events`. Call it when a run ends and include the trace summary in your report or commit "
        "message."
    ),
    properties={"run_id": RUN_ID},
    required=("run_id",),
    read_only=True,
)

COMMIT = ToolSpec(
    name="lockgate_commit",
    title="Checkpoint a run",
    description=(
        "Save a named checkpoint of the run's state (step statuses, outputs, carry, rounds; not its "
        "spend). Commit before risky steps; lockgate_revert restores it. Committing a label again "
        "replaces it. Refused while a fanout is in flight."
    ),
    properties={"run_id": RUN_ID, "label": LABEL},
    required=("run_id", "label"),
    idempotent=True,
)

REVERT = ToolSpec(
    name="lockgate_revert",
    title="Roll a run back to a checkpoint",
    description=(
        "Restore a checkpoint committed with lockgate_commit and continue from it: work done since "
        "is discarded, every outstanding token is replaced (old ones are refused), and a finished run "
        "(error, killed, complete) runs again. Returns the work to do now, with new tokens."
    ),
    properties={"run_id": RUN_ID, "label": LABEL},
    required=("run_id", "label"),
    destructive=True,
)

CANCEL = ToolSpec(
    name="lockgate_cancel",
    title="Cancel a run",
    description=(
        "Cancel a running run: every outstanding token is burned and no more results are taken. A "
        "run that already finished is reported as it is (`reason: already_<status>`)."
    ),
    properties={"run_id": RUN_ID},
    required=("run_id",),
    destructive=True,
    idempotent=True,
)

RESUME = ToolSpec(
    name="lockgate_resume",
    title="Continue a run from another session",
    description=(
        "Take over a run started by another session or process (after a restart, or a handover): "
        "the run is reloaded from the store, its spec checked against its digest, and all its "
        "outstanding work described with the same tokens as before (a dispatch whose result was received "
        "before the run stopped, while a judge was asked, carries it in `reported`: report it again "
        "with lockgate_step_done); an evaluate command found running "
        "(its process stopped) is run again here before the answer. Then continue as after "
        "lockgate_plan. Find run ids with lockgate_runs."
    ),
    properties={"run_id": RUN_ID},
    required=("run_id",),
)

RUNS = ToolSpec(
    name="lockgate_runs",
    title="List runs",
    description=("Runs in this server's store, newest first (run_id, flow, status, created_at, updated_at), "
                 "optionally only those with one status. Find a run to continue with lockgate_resume."),
    properties={"status": {"type": "string", "enum": sorted(RUN_STATUSES),
                           "description": "Only runs with this status."},
                "limit": LIMIT},
    read_only=True,
)

GATES = ToolSpec(
    name="lockgate_gates",
    title="List pending gates",
    description=(
        "Gates waiting for a decision across running runs (or one run), each with run_id, step_id, "
        "routes, round and its token for lockgate_gate_resolve."
    ),
    properties={"run_id": RUN_ID, "limit": LIMIT},
    read_only=True,
)

GRAPH = ToolSpec(
    name="lockgate_graph",
    title="Flow graph as Mermaid",
    description=(
        "The dependency graph of a flow as Mermaid `flowchart` text, to show the user. Give `spec` or "
        "`path` (with optional `flow`) to draw the flow as written, or `run_id` to draw a run with each "
        "step coloured by status (pending, ready, retrying, waiting, succeeded, failed, skipped, killed; "
        "in a run that ended: stopped for a step or gate it left running or waiting, not_reached for one it "
        "never started)."
    ),
    properties={"spec": SPEC, "path": PATH, "flow": FLOW, "run_id": RUN_ID},
    read_only=True,
    idempotent=True,
)

WHY = ToolSpec(
    name="lockgate_why",
    title="What a run waits on",
    description=(
        "Explain in words what a run is waiting on (gates, dispatched steps, evaluate commands "
        "running) and what ends each wait: `tools`, the calls you make (`tool`, the `arguments` known, "
        "and in `also` the ones you add: a step's `result`, a gate's decision), and for a gate a person "
        "may decide at a terminal, `commands`, the exact `lockgate` commands for them (`actions`, the "
        "same as data); for a finished run, why it ended and which checkpoints it can be reverted to."
    ),
    properties={"run_id": RUN_ID},
    required=("run_id",),
    read_only=True,
)

TOOLS: tuple[ToolSpec, ...] = (VALIDATE, PLAN, STEP_DONE, GATE_RESOLVE, STATUS, AUDIT, COMMIT, REVERT, CANCEL,
                               RESUME, RUNS, GATES, GRAPH, WHY)
BY_NAME: dict[str, ToolSpec] = {tool.name: tool for tool in TOOLS}
TOOL_NAMES: tuple[str, ...] = tuple(BY_NAME)
