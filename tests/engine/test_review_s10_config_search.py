"""``lockgate.run``/``run_sync`` given a spec's path and no configuration or workspace find the
lockgate.toml beside the spec, as ``lockgate run`` does (review s10 F7 #3): they searched from
the current folder only, so ``run_sync('examples/health.stratum.yaml', ...)`` from the project's
root did not find ``examples/lockgate.toml`` and its agents were unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.engine.runner import config_file_for, run_sync

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${write.output}", contract: Note}
    steps:
      - {id: write, do: "Write about ${input.topic}", agent: scribe, out: Note}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root (the current folder, with no configuration) whose ``specs`` folder holds a
    spec and the lockgate.toml that configures its agent ``scribe``."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "flow.stratum.yaml").write_text(SPEC)
    (specs / "scribe_agents.py").write_text("def scribe(task):\n    return {'text': 'from the config'}\n")
    (specs / "lockgate.toml").write_text('[agents.scribe]\ntype = "python"\ncallable = "scribe_agents:scribe"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("spec", ["specs/flow.stratum.yaml", Path("specs/flow.stratum.yaml")])
def test_run_sync_finds_the_configuration_beside_the_spec(project: Path, spec: str | Path) -> None:
    result = run_sync(spec, {"topic": "t"}, store=str(project / "runs.db"))
    assert result.status == "complete", result.response
    assert result.output == {"text": "from the config"}


def test_the_search_starts_from_the_spec_folder_only_for_a_path(project: Path) -> None:
    beside = (project / "specs" / "lockgate.toml").resolve()
    assert config_file_for("specs/flow.stratum.yaml") == beside
    assert config_file_for(SPEC) is None  # YAML text: from the current folder, which has none
    (project / "lockgate.toml").write_text("")
    assert config_file_for(SPEC) == (project / "lockgate.toml").resolve()
    assert config_file_for("specs/flow.stratum.yaml") == beside  # the nearer one wins
