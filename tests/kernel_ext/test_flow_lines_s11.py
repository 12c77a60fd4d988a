"""``%flow`` lines (a real kernel; review s11 findings 4, 5 and 6).

4: ``--as VAR`` and ``%%flow NAME`` refuse a name no cell can use (``my-run``, a keyword) before
   anything starts or is bound.
5: ``%flow SUBCOMMAND --help`` describes every argument, in the overview's terms.
6: every refusal names its subcommand and option.
"""

from __future__ import annotations

import re

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

SUBCOMMANDS = ("run", "approve", "revise", "kill", "runs", "show", "audit", "cancel", "resume", "graph")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    session = KernelSession(tmp_path_factory.mktemp("kernel"))
    session.bind(rw=REVIEWED_WORK)
    session.run(DONE_AGENTS)
    yield session
    session.close()


def _refusal(out) -> str:
    """The one-line message of a refused line."""
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    return out.error["evalue"]


@pytest.mark.parametrize(("name", "why"), [
    ("my-run", "'my-run' is not a valid Python name to bind the run to (letters, digits and underscores, "
               "not starting with a digit)"),
    ("class", "'class' is a Python keyword, not a name to bind the run to"),
])
def test_run_as_a_name_no_cell_can_use_is_refused_before_starting(kernel, name, why):
    refused = _refusal(kernel.run(f"%flow run rw --input text=a --agents agents --as {name}"))
    assert refused == f"%flow run: --as {why}; nothing was started"
    assert kernel.run("%flow runs").stdout.strip() == "no runs"
    assert kernel.value(f"{name!r} in get_ipython().user_ns") is False


def test_resume_as_a_keyword_is_refused_before_resuming(kernel):
    refused = _refusal(kernel.run("%flow resume nosuchrun --as for"))
    assert refused == "%flow resume: --as 'for' is a Python keyword, not a name to bind the run to; nothing was resumed"


def test_a_spec_cell_named_by_a_keyword_binds_nothing(kernel):
    refused = _refusal(kernel.run(f"%%flow class\n{REVIEWED_WORK}"))
    assert refused == "%%flow: 'class' is a Python keyword, not a name to bind the spec to"
    assert kernel.value("'class' in get_ipython().user_ns") is False


@pytest.mark.parametrize("verb", SUBCOMMANDS)
def test_every_argument_of_a_subcommand_has_its_help(kernel, verb):
    shown = kernel.run(f"%flow {verb} --help")
    assert shown.error is None, shown.shown
    usage, description, *sections = shown.stdout.strip().split("\n\n")
    assert usage.startswith(f"usage: %flow {verb} ") and len(description) > 20, shown.stdout
    for section in sections:
        heading, *entries = section.splitlines()
        assert heading in ("positional arguments:", "options:"), section
        # an entry is its name, then its help on the same line or indented on the next
        named = [line for line in entries if not line.startswith(" " * 6)]
        for line in named:
            following = entries[entries.index(line) + 1] if line != entries[-1] else ""
            assert re.search(r"\S\s{2,}\S", line.strip()) or following.startswith(" " * 6), (verb, line)


def test_the_overview_and_each_subcommands_help_name_options_alike(kernel):
    overview = kernel.run("%flow").stdout
    for verb in SUBCOMMANDS:
        usage = kernel.run(f"%flow {verb} --help").stdout.split("\n\n")[0]
        for option in re.findall(r"\[(--[\w-]+ [^\]\s]+)\]", usage):  # e.g. [--note TEXT]
            assert option in overview, (verb, option, overview)
    revise = " ".join(kernel.run("%flow revise --help").stdout.split())
    assert "--note TEXT, -m TEXT" in revise and "what to change (required)" in revise
    assert "a run id in the store, or a variable holding a run or a run id" in revise
    resume = kernel.run("%flow resume --help").stdout
    assert "after a kernel restart, the functions the run was driven with" in " ".join(resume.split())


@pytest.mark.parametrize(("line", "message"), [
    ("%flow run rw --input text=a --agents nosuchvar", "%flow run: --agents: no variable named 'nosuchvar'"),
    ("%flow run rw --inputs nosuchvar", "%flow run: --inputs: no variable named 'nosuchvar'"),
    ("%flow run rw --input text=a --agents rw", "%flow run: --agents rw must name a dict, not a FlowSpec"),
    ("%flow run nosuchspec", "%flow run: 'nosuchspec' is not a spec bound by %%flow (a %%flow nosuchspec cell binds "
                             "one)"),
])
def test_refusals_name_their_subcommand_and_option(kernel, line, message):
    assert _refusal(kernel.run(line)) == message
