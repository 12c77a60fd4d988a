"""``lockgate runs --status`` takes the status names ``lockgate run`` prints as well as the stored
ones: a failed run is reported ``"status": "error"`` by ``run`` and listed ``failed``."""

from __future__ import annotations

import json
import textwrap

import pytest
from cli_support import in_project
from click.testing import CliRunner

from lockgate.cli import main

SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Out:
        text: string
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${work.output}"
          contract: Out
        steps:
          - id: work
            do: "Write about ${input.topic}"
            agent: writer
            out: Out
            attempts: 1
    """).lstrip()


@pytest.fixture
def failed_run(tmp_path, monkeypatch):
    """A run that failed (its only agent raises), in a store under tmp_path: (store, run id)."""
    in_project(tmp_path, monkeypatch, SPEC, "def writer(task):\n    raise RuntimeError('no words today')\n")
    store = str(tmp_path / "runs.db")
    ran = invoke("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                 "--store", store)
    assert ran.exit_code == 1, ran.stderr
    reported = json.loads(ran.stdout)
    assert reported["status"] == "error"
    return store, reported["run_id"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("status", ["error", "failed"])
def test_a_failed_run_is_listed_by_either_name(failed_run, status):
    store, run_id = failed_run
    listed = invoke("runs", "--status", status, "--store", store, "--format", "json")
    assert listed.exit_code == 0, listed.stderr
    assert [(r["run_id"], r["status"]) for r in json.loads(listed.stdout)] == [(run_id, "failed")]


def test_other_statuses_still_filter_it_out(failed_run):
    store, _ = failed_run
    listed = invoke("runs", "--status", "complete", "--store", store)
    assert (listed.exit_code, listed.stdout.strip()) == (0, "no runs")


def test_the_help_shows_every_accepted_name():
    shown = invoke("runs", "--help").stdout
    choices = shown[shown.index("--status [") + len("--status ["):].split("]")[0].split("|")
    assert choices == ["running", "complete", "failed", "killed", "cancelled", "error", "await_gate"]
    assert "error: failed" in " ".join(shown.split())


def test_an_unknown_status_is_still_a_usage_error():
    refused = invoke("runs", "--status", "broken")
    assert refused.exit_code == 2
    assert "'broken' is not one of" in refused.stderr
