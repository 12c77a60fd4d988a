"""The catalogue of diagnostic codes.

Codes are stable: a code, once published, keeps its meaning. ``name`` is the Stratum v1
validator's code where one exists (so output can be compared with that engine), otherwise a
Lockgate name. Ranges of numbers group the layers:

LG1xx document and YAML · LG2xx structure (schema) · LG3xx contracts · LG4xx references ·
LG5xx steps and routing · LG6xx expressions · LG7xx flows, gates, fanout, subflows, carry ·
LG9xx lint (warnings).
"""

from __future__ import annotations

from dataclasses import dataclass

from .diagnostics import Severity

DOCS_URL = "https://lockgate.dev/codes/{code}"


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    name: str
    title: str
    severity: Severity = Severity.ERROR


_TABLE: tuple[tuple[str, str, str], ...] = (
    # document and YAML
    ("LG101", "DOCUMENT_TOO_LARGE", "the document exceeds the size limit"),
    ("LG102", "DOCUMENT_NOT_TEXT", "the document is not UTF-8 text"),
    ("LG103", "YAML_SYNTAX", "the YAML does not parse"),
    ("LG104", "YAML_DUPLICATE_KEY", "a mapping repeats a key"),
    ("LG105", "YAML_MULTIPLE_DOCUMENTS", "a spec file holds exactly one YAML document"),
    ("LG106", "YAML_ALIAS_LIMIT", "too many aliases or alias expansion too large"),
    ("LG107", "YAML_DEPTH_LIMIT", "the document nests too deeply"),
    ("LG108", "DOCUMENT_EMPTY", "the document is empty"),
    ("LG109", "YAML_UNSUPPORTED", "a YAML feature the spec language does not allow (tags, complex keys)"),
    ("LG110", "FILE_UNREADABLE", "a spec file that cannot be read"),
    ("LG111", "CONFIG_INVALID", "the project's lockgate.toml (or [tool.lockgate]) a spec runs with is broken"),
    # structure
    ("LG201", "SCHEMA_INVALID", "a value has the wrong type or shape"),
    ("LG202", "E2_UNKNOWN_FIELD", "a key that this object does not allow"),
    ("LG203", "SCHEMA_INVALID", "a required key is missing"),
    ("LG204", "E2_CONSTRUCT_MIX", "a step needs exactly one of do, set, gate, fanout, run, evaluate"),
    ("LG205", "E2_FIELD_FOR_KIND", "a key not allowed for this kind of step"),
    ("LG206", "E2_RESERVED_FIELD", "__proto__, constructor and prototype are reserved names"),
    ("LG207", "SCHEMA_INVALID", "a value outside the allowed set"),
    ("LG208", "SCHEMA_INVALID", "a name that does not match the allowed pattern"),
    ("LG209", "SCHEMA_INVALID", "the version must be 1"),
    ("LG210", "SCHEMA_INVALID", "a number out of range"),
    # contracts
    ("LG301", "CONTRACT_INVALID_TYPE", "an unparsable contract type"),
    ("LG302", "CONTRACT_UNKNOWN_REF", "a contract name that is not declared"),
    ("LG303", "CONTRACT_RECURSIVE_REF", "a contract that refers to itself"),
    ("LG304", "SET_OUT_MISMATCH", "a set step's keys are not its out contract's fields"),
    ("LG305", "EVALUATE_OUT_MISMATCH", "an evaluate step's out contract cannot hold the evaluator's result"),
    # references
    ("LG401", "REF_INVALID", "a malformed ${...} reference"),
    ("LG402", "REF_INVALID_SCOPE", "${item} and ${prev} only inside a fanout stage"),
    ("LG403", "REF_UNKNOWN_STEP", "a reference to a step that does not exist"),
    ("LG404", "REF_UNKNOWN_PATH", "a reference path not in the contract"),
    ("LG405", "REF_OUTPUT_CONTRACT_REQUIRED", "the referenced step declares no output contract"),
    ("LG406", "FANOUT_OUTPUT_REQUIRES_FINAL_OUT", "a referenced fanout's last stage has no out"),
    ("LG407", "REF_UNKNOWN_CARRY", "a reference to an undeclared carry variable"),
    ("LG408", "CARRY_REF_IN_EXPRESSION", "carry variables cannot be read in expressions"),
    ("LG409", "CARRY_PATH_RESERVED", "a carry name used as a step output"),
    ("LG410", "FANOUT_OVER_SINGLE_REF", "fanout.over must be exactly one full reference"),
    # steps and routing
    ("LG501", "STEP_DUPLICATE_ID", "two steps of a flow share an id"),
    ("LG502", "ROUTING_UNKNOWN_TARGET", "an after, on_fail or gate route names no step"),
    ("LG503", "ROUTING_SELF_TARGET", "a step routes to itself"),
    ("LG504", "ROUTING_CYCLE", "the steps' dependencies form a cycle"),
    ("LG505", "GATE_REVISE_NOT_ANCESTOR", "on_revise must target a strict ancestor of the gate"),
    ("LG506", "GATE_REVISE_REQUIRES_MAX_ROUNDS", "a revising gate needs the flow's max_rounds"),
    # expressions
    ("LG601", "EXPR_PARSE", "the expression does not parse"),
    ("LG602", "EXPR_UNKNOWN_IDENTIFIER", "an identifier that is not bound here"),
    ("LG603", "EXPR_UNKNOWN_FUNCTION", "a function that is not a builtin"),
    ("LG604", "EXPR_TYPE", "an expression that cannot type-check"),
    ("LG605", "EXPR_RESOURCE_LIMIT", "the expression exceeds a size limit"),
    ("LG606", "EXPR_UNKNOWN_FIELD", "a field the bound value's contract does not have"),
    # flows and constructs
    ("LG701", "FLOW_UNKNOWN_ENTRY", "flows.entry names no flow"),
    ("LG702", "SUBFLOW_UNKNOWN", "run names no flow"),
    ("LG703", "SUBFLOW_WITH_MISMATCH", "with must give exactly the called flow's inputs"),
    ("LG704", "SUBFLOW_RECURSIVE", "flows call each other in a cycle"),
    ("LG705", "SUBFLOW_BODY_RESTRICTED", "only the entry flow may contain fanout or run"),
    ("LG706", "CONSUMER_WORKTREE_FILESYSTEM_UNSUPPORTED", "consumer worktree stages cannot use file predicates"),
    ("LG707", "CONSUMER_WORKTREE_GATE_REQUIRED", "a consumer worktree fanout needs a successor gate"),
    ("LG708", "FLOW_OUTPUT_INVALID", "output.from must be one full step-output reference"),
    ("LG711", "CARRY_ROOT_ONLY", "carry is allowed only on the entry flow"),
    ("LG712", "CARRY_NAME_CONFLICT", "a carry name clashes with a step id or a binding"),
    ("LG713", "CARRY_REF_INVALID", "a carry value must be one full step or input reference"),
    ("LG714", "CARRY_INITIAL_SOURCE_CONDITIONAL", "a carry's initial source may not be conditional"),
    ("LG715", "CARRY_REF_BEFORE_INITIAL", "a carry read before its initial source has run"),
    ("LG716", "CARRY_UNKNOWN_GATE", "carry on_revise names no gate step"),
    ("LG717", "CARRY_REVISE_TARGET_NULL", "the revising gate has no on_revise target"),
    ("LG718", "CARRY_REVISE_MISSES_CONSUMER", "the revise reset does not cover every reader"),
    ("LG719", "CARRY_REVISE_GATE_NOT_AFTER_CONSUMER", "a carry reader does not reach the gate"),
    # lint
    ("LG901", "LINT_UNUSED_CONTRACT", "a contract no step or flow uses"),
    ("LG902", "LINT_UNREACHABLE_STEP", "a step no route or dependency can reach"),
    ("LG903", "LINT_SAME_AGENT_REVIEW", "a reviewer uses the same agent as the step it reviews"),
    ("LG904", "LINT_WHEN_UNORDERED", "when reads a step it does not depend on"),
    ("LG905", "LINT_UNKNOWN_AGENT", "an agent name that is not configured"),
    ("LG906", "LINT_NO_ENSURE", "an agent step with neither out nor ensure is unchecked"),
    ("LG907", "LINT_UNUSED_OUTPUT", "an output nobody reads"),
    ("LG908", "LINT_GATE_SPLIT_ROUTES", "a gate approves and kills to different steps (the reference engine strands one)"),
    ("LG909", "LINT_LITERAL_FILE_TEMPLATE", "a ${...} in a file_exists or file_contains ensure is checked as written"),
    ("LG910", "LINT_FAIL_ROUTE_AFTER_FAILURE", "an on_fail target waits on a step that runs only if the failing step succeeds"),
)

CODES: dict[str, Code] = {
    code: Code(code, name, title, Severity.WARNING if code.startswith("LG9") else Severity.ERROR)
    for code, name, title in _TABLE
}


#: Findings about which agents the project configures: a caller that brings its own agents (a
#: notebook's ``start(agents=...)``) or does the work itself (an MCP host) leaves them out.
AGENT_CONFIG_CODES = frozenset({"LG905"})


def lookup(code: str) -> Code:
    """The catalogue entry of ``code``; KeyError for an unknown code (a programming error)."""
    return CODES[code]


def docs_url(code: str) -> str:
    return DOCS_URL.format(code=code.lower())
