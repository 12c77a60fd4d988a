"""Every display of a run stays live and shows the cards of its waiting gates (a real kernel).

The widget state is read on the kernel side from the model id each display output carries
(what a browser renders), and clicks are sent as the ``comm_msg`` a browser sends.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

VIEW_MIME = "application/vnd.jupyter.widget-view+json"

# Kernel side: the gate cards under a displayed widget model, as (step, [(button, disabled)])
# for the buttons a person sees; each card's message line; a button's model id.
CARDS_OF = '''
import re as _re
import ipywidgets as _w
from ipywidgets.widgets.widget import _instances as _models

def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)

def _card_boxes(model_id):
    """(step, card box) of every gate card under the widget with this model id, in order."""
    for box in _walk(_models[model_id]):
        kids = getattr(box, "children", None)
        if kids and isinstance(kids[0], _w.HTML) and "Gate <code>" in kids[0].value:
            yield _re.search(r"Gate <code>(.*?)</code>", kids[0].value).group(1), box

def _cards(model_id):
    return [(step, [(b.description, b.disabled) for b in _walk(box)
                    if isinstance(b, _w.Button) and b.layout.display != "none"])
            for step, box in _card_boxes(model_id)]

def _card_messages(model_id):
    return [box.children[-1].value for _step, box in _card_boxes(model_id)]

def _button(model_id, step, description):
    box = dict(_card_boxes(model_id))[step]
    return next(b.model_id for b in _walk(box) if isinstance(b, _w.Button) and b.description == description)
'''

TWO_GATES = '''version: 1
contracts:
  Out:
    result: string
    quality_score: number
flows:
  entry: two
  two:
    input:
      text: string
    output:
      from: "${work.output}"
      contract: Out
    steps:
      - id: work
        do: "Write ${input.text}"
        agent: codex
        out: Out
      - id: legal
        after: [work]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: design
        after: [work]
        gate: {on_approve: null, on_revise: null, on_kill: null}
'''

ENABLED = [("Approve", False), ("Revise", False), ("Kill", False)]
DISABLED = [("Approve", True), ("Revise", True), ("Kill", True)]


class ViewSession(KernelSession):
    """A kernel session that also keeps every iopub message, whichever cell it belongs to: a
    run's view is updated by the task an earlier cell started."""

    def __init__(self, cwd: Path) -> None:
        super().__init__(cwd)
        self.log: list[dict] = []
        receive = self.client.get_iopub_msg

        def logged(*args, **kwargs):
            msg = receive(*args, **kwargs)
            self.log.append(msg)
            return msg

        self.client.get_iopub_msg = logged

    def displays(self, code: str) -> list[dict]:
        """Run ``code``; the display_data contents it showed (with their display ids)."""
        msg_id = self.client.execute(code)
        shown = []
        while True:
            msg = self.client.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return shown
            if msg["msg_type"] == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            if msg["msg_type"] == "display_data":
                shown.append(msg["content"])

    def click(self, button_model_id: str) -> None:
        """Send the comm message a browser sends when a person clicks the button."""
        click = {"comm_id": button_model_id, "data": {"method": "custom", "content": {"event": "click"}}}
        self.client.shell_channel.send(self.client.session.msg("comm_msg", click))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = ViewSession(cwd)
    session.bind(rw=REVIEWED_WORK, two=TWO_GATES)
    session.run(DONE_AGENTS)
    session.run(CARDS_OF)
    yield session
    session.close()


def _view_output(displays: list[dict]) -> tuple[str, str]:
    """(model id, display id) of the run view among a cell's display outputs."""
    view = next(d for d in displays if VIEW_MIME in d["data"])
    return view["data"][VIEW_MIME]["model_id"], view["transient"]["display_id"]


def _last_text(kernel: ViewSession, display_id: str) -> str:
    """The text/plain an output with ``display_id`` shows now (its display, then its updates)."""
    texts = [m["content"]["data"].get("text/plain", "") for m in kernel.log
             if m["msg_type"] in ("display_data", "update_display_data")
             and m["content"].get("transient", {}).get("display_id") == display_id]
    return texts[-1]


def test_a_run_shown_after_its_gate_waits_has_the_buttons_in_every_view(kernel):
    kernel.run('a = rw.start({"text": "t"}, agents=agents)\n'
               'await a.wait_until(lambda r: "review" in r.waiting_gates())')
    first, first_id = _view_output(kernel.displays("a"))
    second, second_id = _view_output(kernel.displays("%flow show a"))
    for model in (first, second):
        assert kernel.value(f"_cards({model!r})") == [("review", ENABLED)]
    kernel.click(kernel.value(f"_button({second!r}, 'review', 'Approve')"))
    assert kernel.value("await a") == {"result": "done", "quality_score": 0.9}
    for model, display_id in ((first, first_id), (second, second_id)):
        assert kernel.value(f"_cards({model!r})") == [("review", DISABLED)]
        assert "approve</b> by human" in kernel.value(f"_card_messages({model!r})[0]")
        assert _last_text(kernel, display_id).startswith(f"run {kernel.value('a.run_id')} of rw: complete")


def test_the_first_view_stays_live_when_the_run_is_shown_again(kernel):
    first, first_id = _view_output(kernel.displays('b = rw.start({"text": "t"}, agents=agents)\nb'))
    kernel.run('await b.wait_until(lambda r: "review" in r.waiting_gates())')
    assert kernel.value(f"_cards({first!r})") == [("review", ENABLED)]
    second, second_id = _view_output(kernel.displays("%flow show b"))
    assert kernel.value(f"_cards({second!r})") == [("review", ENABLED)]
    assert kernel.run("%flow approve b review --note fine").error is None
    kernel.run("await b")
    for model, display_id in ((first, first_id), (second, second_id)):
        assert kernel.value(f"_cards({model!r})") == [("review", DISABLED)]
        assert "complete" in kernel.value(f"_models[{model!r}].children[0].value")
        assert _last_text(kernel, display_id).startswith(f"run {kernel.value('b.run_id')} of rw: complete")


def test_a_gate_decided_in_another_process_is_closed_in_every_view(kernel):
    kernel.run('c = rw.start({"text": "t"}, agents=agents)\n'
               'await c.wait_until(lambda r: "review" in r.waiting_gates())')
    views = [_view_output(kernel.displays(code))[0] for code in ("c", "%flow show c")]
    run_id = kernel.value("c.run_id")
    decided = subprocess.run([sys.executable, "-m", "lockgate", "gate", "approve", run_id, "review",
                              "--note", "from a terminal"], cwd=kernel.cwd, capture_output=True, text=True,
                             check=False)
    assert decided.returncode == 0, decided.stderr
    assert kernel.value("await c") == {"result": "done", "quality_score": 0.9}
    for model in views:
        assert kernel.value(f"_cards({model!r})") == [("review", DISABLED)]
        assert "decided elsewhere" in kernel.value(f"_card_messages({model!r})[0]")


def test_every_waiting_gate_has_its_card_when_the_run_is_shown(kernel):
    out = kernel.run('d = two.start({"text": "t"}, agents=agents)\n'
                     'await d.wait_until(lambda r: {"legal", "design"} <= set(r.waiting_gates()))')
    assert out.error is None, out.traceback
    model, _ = _view_output(kernel.displays("d"))
    assert sorted(step for step, _ in kernel.value(f"_cards({model!r})")) == ["design", "legal"]
    kernel.run('d.approve("legal"); d.approve("design")')
    assert kernel.value("await d") == {"result": "done", "quality_score": 0.9}
