"""``lockgate graph`` for a spec file and for a stored run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from lockgate.cli import main
from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.store import open_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REVIEWED = EXAMPLES / "reviewed-work.stratum.yaml"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_mermaid_of_a_spec_by_default():
    result = invoke("graph", str(REVIEWED))
    assert result.exit_code == 0
    assert result.output.startswith("flowchart TD")
    assert '{"review"}' in result.output and "-. revise .->" in result.output


def test_dot_and_flow_choice():
    result = invoke("graph", str(EXAMPLES / "deploy-subflow.stratum.yaml"), "--flow", "deploy", "--format", "dot")
    assert result.exit_code == 0
    assert '"push" -> "check"' in result.output and '"build"' not in result.output


def test_png_and_svg_files(tmp_path):
    png, svg = tmp_path / "g.png", tmp_path / "g.svg"
    assert invoke("graph", str(REVIEWED), "-o", str(png)).exit_code == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    assert invoke("graph", str(REVIEWED), "-o", str(svg)).exit_code == 0
    ET.parse(svg)


def test_a_run_is_coloured_by_status(tmp_path):
    db = str(tmp_path / "runs.db")
    engine = Engine(store=open_store(db))
    first = engine.plan(load(REVIEWED.read_text()).spec, {"text": "x"})
    engine.step_done(first["run_id"], "work", {"result": "r", "quality_score": 0.9}, first["token"])
    result = invoke("graph", first["run_id"], "--store", db)
    assert result.exit_code == 0
    assert "class n0_work succeeded" in result.output
    assert "class n1_review waiting" in result.output


def test_unknown_target_and_flow(tmp_path):
    missing = invoke("graph", "no-such-run", "--store", str(tmp_path / "runs.db"))
    assert missing.exit_code == 1 and "no-such-run: no such file, and no run with this id" in missing.output
    bad_flow = invoke("graph", str(REVIEWED), "--flow", "nope")
    assert bad_flow.exit_code == 1 and "no flow named 'nope'" in bad_flow.output
