"""``lockgate graph``: the output file's extension picks the format, a file named for another
format (or for none) is refused before anything is written, and a spec with errors is not drawn."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main

REVIEWED = Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml"

DUPLICATE_STEP = textwrap.dedent("""
    version: 1
    contracts:
      Draft:
        title: string
    flows:
      entry: write
      write:
        input:
          topic: string
        output:
          from: "${use.output}"
          contract: Draft
        steps:
          - id: draft
            do: "Write about ${input.topic}"
            agent: writer
            out: Draft
          - id: use
            do: "Use ${draft.output.title}"
            agent: writer
            out: Draft
          - id: draft
            do: "Again"
            agent: writer
            out: Draft
    """).lstrip()


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(("name", "starts"), [
    ("g.dot", "digraph"), ("g.gv", "digraph"), ("g.mmd", "flowchart TD"),
    ("g.mermaid", "flowchart TD"), ("graph", "flowchart TD"),
])
def test_the_extension_picks_a_text_format(tmp_path, name, starts):
    out = tmp_path / name
    result = invoke("graph", str(REVIEWED), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith(starts)


def test_the_extension_picks_a_picture_format(tmp_path):
    png, svg = tmp_path / "G.PNG", tmp_path / "g.svg"
    assert invoke("graph", str(REVIEWED), "-o", str(png)).exit_code == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    assert invoke("graph", str(REVIEWED), "-o", str(svg)).exit_code == 0
    ET.parse(svg)


@pytest.mark.parametrize(("args", "message"), [
    (("-o", "{dir}/out.jpg"), "lockgate graph writes png, svg, dot or mermaid, not jpg"),
    (("-o", "{dir}/out.jpg", "--format", "png"), "not jpg"),
    (("-o", "{dir}/out.txt"), ".txt names no graph format"),
    (("-o", "{dir}/out.svg", "--format", "png"), "--format png does not match the .svg extension (svg)"),
    (("-o", "{dir}/out.mmd", "--format", "dot"), "--format dot does not match the .mmd extension (mermaid)"),
])
def test_a_file_named_for_another_format_is_a_usage_error(tmp_path, args, message):
    args = tuple(a.replace("{dir}", str(tmp_path)) for a in args)
    result = invoke("graph", str(REVIEWED), *args)
    assert result.exit_code == 2
    assert "Invalid value for '-o' / '--output'" in result.output
    assert message in " ".join(result.output.split())
    assert list(tmp_path.iterdir()) == []


def test_an_explicit_format_may_go_to_any_other_name(tmp_path):
    out = tmp_path / "graph.txt"
    result = invoke("graph", str(REVIEWED), "--format", "dot", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("digraph")


def test_a_spec_with_errors_is_not_drawn(tmp_path):
    spec = tmp_path / "dup.stratum.yaml"
    spec.write_text(DUPLICATE_STEP)
    out = tmp_path / "g.mmd"
    result = invoke("graph", str(spec), "-o", str(out))
    validated = invoke("validate", "--no-lint", str(spec))
    assert result.exit_code == 1
    assert not out.exists()
    assert "error LG501: duplicate step id 'draft'" in result.stderr
    # the errors read as `lockgate validate` prints them, excerpts included
    assert validated.stdout.strip() in result.stderr
    assert result.stderr.strip().endswith(f"{spec} has 1 error; nothing drawn (fix it, then draw it again)")
    assert result.stdout == ""
