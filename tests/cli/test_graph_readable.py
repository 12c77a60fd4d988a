"""``lockgate graph`` and ``lockgate show`` tell what a run is now: a gate a failed, cancelled
or killed run left waiting is stopped (nobody decides it any more), a step it never reached is
not reached; a ``$`` in a spec's file name is drawn as written; a long flow gets a canvas big
enough to read (the real command in a subprocess, or in process with a real SQLite store)."""

from __future__ import annotations

import io
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_support import lockgate_argv, lockgate_env
from click.testing import CliRunner
from PIL import Image

from lockgate.cli import main
from lockgate.engine import Engine
from lockgate.engine.graphs import run_graph
from lockgate.engine.store import open_store
from lockgate.kernel_ext.dag import MAX_PIXELS, STATUS_STYLES, draw

# work and side run side by side; review waits after work; ship follows an approval
SPEC = """version: 1
contracts:
  Out:
    v: integer
flows:
  entry: main
  main:
    input:
      x: integer
    output:
      from: "${ship.output}"
      contract: Out
    steps:
      - id: work
        do: "work"
        out: Out
      - id: side
        do: "side"
        out: Out
      - id: review
        after: [work]
        gate:
          on_approve: ship
          on_revise: null
          on_kill: null
      - id: ship
        do: "ship"
        out: Out
"""
WAITING_FILL = "#f2cc60"


def ended_run(db: Path, how: str) -> str:
    """A run that ended (``how``: cancelled, failed or killed) after its gate began to wait."""
    engine = Engine(store=open_store(db))
    first = engine.plan(SPEC, {"x": 1})
    run_id = first["run_id"]
    side = engine.step_done(run_id, "work", {"v": 1}, first["token"])  # review now waits; side is dispatched
    if how == "cancelled":
        engine.cancel(run_id)
    elif how == "failed":
        retry = engine.step_done(run_id, "side", {"bad": 1}, side["token"])
        engine.step_done(run_id, "side", {"bad": 2}, retry["token"])
    else:
        engine.resolve_waiting_gate(run_id, "review", "kill")
    assert engine.audit(run_id)["status"] == how
    engine.close()
    return run_id


def cli(db: Path, *args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--store", str(db)])
    assert result.exit_code == 0, result.output
    return result.output


def dot_fills(text: str) -> dict[str, str]:
    return dict(re.findall(r'^  "(\w+)" \[label=.*fillcolor="(#\w+)"\];$', text, re.MULTILINE))


@pytest.mark.parametrize("how", ["cancelled", "failed"])
def test_a_gate_an_ended_run_left_waiting_is_not_drawn_waiting(tmp_path: Path, how: str) -> None:
    db = tmp_path / "runs.db"
    run_id = ended_run(db, how)

    dot = cli(db, "graph", run_id, "--format", "dot")
    assert dot.startswith(f'digraph "run {run_id} (main): {how}"')
    fills = dot_fills(dot)
    assert fills["work"] == STATUS_STYLES["succeeded"].fill.lower()
    assert WAITING_FILL not in fills.values(), dot
    assert fills["review"] == STATUS_STYLES["stopped"].fill.lower()
    assert fills["ship"] == STATUS_STYLES["not_reached"].fill.lower()

    mermaid = cli(db, "graph", run_id, "--format", "mermaid")
    assert "waiting" not in mermaid, mermaid
    assert re.search(r"^    class n0_work succeeded$", mermaid, re.MULTILINE)
    assert f"classDef stopped fill:{STATUS_STYLES['stopped'].fill.lower()}," in mermaid, mermaid
    assert re.search(r"^    class (\w+,)*n2_review stopped$", mermaid, re.MULTILINE), mermaid

    shown = cli(db, "show", run_id)
    assert re.search(r"^review +gate +stopped ", shown, re.MULTILINE), shown
    assert re.search(r"^ship +do +not reached ", shown, re.MULTILINE), shown
    assert re.search(r"^side +do +failed " if how == "failed" else r"^side +do +stopped ", shown, re.MULTILINE), shown
    assert "waiting_gate" not in shown and "dispatched" not in shown


@pytest.mark.parametrize("how", ["cancelled", "failed"])
def test_the_picture_colours_and_its_legend_say_stopped(tmp_path: Path, how: str) -> None:
    run_id = ended_run(tmp_path / "runs.db", how)
    store = open_store(tmp_path / "runs.db")
    graph, statuses, title = run_graph(store, run_id)
    store.close()
    assert statuses["review"] == "stopped" and statuses["ship"] == "not_reached"
    picture = draw(graph, statuses, title=title)
    _, diamonds = picture._groups
    assert diamonds.nodes == ["review"]
    fill = diamonds.collection.get_facecolor()[0]
    assert tuple(round(c * 255) for c in fill[:3]) == tuple(int(STATUS_STYLES["stopped"].fill[i:i + 2], 16)
                                                            for i in (1, 3, 5))
    legend = [t.get_text() for t in picture.figure.legends[0].get_texts()]
    assert "stopped (run ended)" in legend and "not reached" in legend


def test_a_killed_run_still_draws_the_gate_that_killed_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = ended_run(db, "killed")
    fills = dot_fills(cli(db, "graph", run_id, "--format", "dot"))
    assert fills["review"] == STATUS_STYLES["killed"].fill.lower()
    assert re.search(r"^ship +do +not reached ", cli(db, "show", run_id), re.MULTILINE)


def test_a_running_run_still_draws_and_shows_its_gate_waiting(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    engine = Engine(store=open_store(db))
    first = engine.plan(SPEC, {"x": 1})
    run_id = first["run_id"]
    engine.step_done(run_id, "work", {"v": 1}, first["token"])
    engine.close()
    assert dot_fills(cli(db, "graph", run_id, "--format", "dot"))["review"] == WAITING_FILL
    shown = cli(db, "show", run_id)
    assert re.search(r"^review +gate +waiting_gate ", shown, re.MULTILINE) and re.search(r"^ship +do +pending ", shown, re.MULTILINE)


def lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("name", ["cost $5 to $10.stratum.yaml", r"x $\foo$.stratum.yaml", "price_$a^b$.stratum.yaml"])
def test_a_dollar_in_the_spec_file_name_is_drawn(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(SPEC)
    for output in ("g.png", "g.svg"):
        done = lockgate(tmp_path, "graph", name, "-o", output)
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"wrote {output}\n"
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")
    svg = (tmp_path / "g.svg").read_text()
    ET.fromstring(svg)
    assert f"{name}: main" in svg  # the title, as written (matplotlib names each text in a comment)


def test_a_long_flow_gets_a_canvas_it_can_be_read_on(tmp_path: Path) -> None:
    steps = "".join(f"      - id: s{i}\n        do: \"step {i}\"\n        out: Out\n"
                    + (f"        after: [s{i - 1}]\n" if i else "") for i in range(30))
    spec = SPEC.split("    steps:\n")[0].replace("${ship.output}", "${s29.output}") + "    steps:\n" + steps
    (tmp_path / "long.stratum.yaml").write_text(spec)
    done = lockgate(tmp_path, "graph", "long.stratum.yaml", "-o", "long.png")
    assert done.returncode == 0, done.stderr
    width, height = Image.open(io.BytesIO((tmp_path / "long.png").read_bytes())).size
    # 30 rows at the full size (0.9 in apart) instead of squeezed into the old 14-inch cap
    assert 30 * 0.85 * 100 < height <= MAX_PIXELS and width <= MAX_PIXELS
