"""The live view of a step whose children run (fanout items, a subflow's steps) in a real kernel:
the step's row stays running while any child still works, whatever the others' outcome, and
takes the step's own status once it has ended (read from the store: the runner reports no event
for the end of such a step). Each child used to overwrite the row: the fanout showed succeeded
while its last item still ran."""

from __future__ import annotations

import pytest
from kernel_session import KernelSession

FANOUT = """version: 1
contracts:
  Words: {words: "string[]"}
  Stat: {word: string, letters: integer}
flows:
  entry: count
  count:
    input: {n: integer}
    output: {from: "${after.output}", contract: Words}
    steps:
      - {id: split, do: "Make ${input.n} words", agent: splitter, out: Words}
      - id: measure
        fanout:
          over: "${split.output.words}"
          concurrency: 4
          isolation: none
          require: all
          merge: sequential
          steps:
            - {do: "Count the letters of ${item}", agent: counter, out: Stat}
      - {id: after, after: [measure], do: "Summarise", agent: splitter, out: Words}
"""
SUBFLOW = """version: 1
contracts:
  W: {result: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${ship.output}", contract: W}
    steps:
      - {id: ship, run: deploy, with: {}}
  deploy:
    input: {}
    output: {from: "${slow.output}", contract: W}
    steps:
      - {id: quick, do: "quick", agent: worker, out: W}
      - {id: slow, do: "slow", agent: worker, out: W}
"""
AGENTS = '''
import threading
release = threading.Event()
done = []
def splitter(task):
    return {"words": [f"w{i}" for i in range(6)]} if task.prompt.startswith("Make") else {"words": ["ok"]}
def counter(task):
    word = task.prompt.rsplit(" ", 1)[1]
    if word == "w5":
        release.wait(60)  # the last item works until the test lets it go
    done.append(word)
    return {"word": word, "letters": len(word)}
def worker(task):
    if task.prompt == "slow":
        release.wait(60)
    done.append(task.prompt)
    return {"result": task.prompt}
agents = {"splitter": splitter, "counter": counter, "worker": worker}
def stored(run, kind, step=None):
    # events of this kind in the store: written in the same stretch of the loop as the progress
    # events that report them, so a predicate seeing them runs after the view has heard of them
    events = run.audit()["events"] if run.run_id else ()
    return sum(1 for e in events if e["type"] == kind and step in (None, e["step_id"]))
'''


@pytest.fixture()
def kernel(tmp_path):
    session = KernelSession(tmp_path)
    session.bind(words=FANOUT, sub=SUBFLOW)
    session.run(AGENTS)
    yield session
    session.run("release.set()")
    session.close()


def test_a_fanout_stays_running_while_an_item_works(kernel):
    out = kernel.run('run = words.start({"n": 6}, agents=agents)\n'
                     'await run.wait_until(lambda r: stored(r, "fanout_attempt_result") == 5)')
    assert out.error is None, out.traceback
    assert kernel.value('run.rows["measure"].status, run.rows["after"].status') == ("running", "pending")
    # once no item works the store is read (in 0.25 s: now here), and says the same
    assert kernel.value('run._look_up_nodes() or run.rows["measure"].status') == "running"
    out = kernel.run("release.set()\nawait run\n"
                     'print(run.rows["measure"].status, run.rows["after"].status)')
    assert out.stdout.split() == ["succeeded", "succeeded"], out.shown


def test_a_step_whose_last_item_ended_takes_the_status_the_store_gives_it(kernel):
    out = kernel.run('run = words.start({"n": 6}, agents=agents)\n'
                     "release.set()\n"
                     'await run.wait_until(lambda r: r.rows["measure"].status == "succeeded")\n'
                     "await run")
    assert out.error is None, out.traceback
    assert kernel.value("run.statuses()") == {"split": "succeeded", "measure": "succeeded", "after": "succeeded"}


def test_a_subflow_step_stays_running_while_one_of_its_steps_works(kernel):
    out = kernel.run("run = sub.start({}, agents=agents)\n"
                     'await run.wait_until(lambda r: stored(r, "result", "ship/quick") == 1)')
    assert out.error is None, out.traceback
    assert kernel.value('run.rows["ship"].status') == "running"
    assert kernel.value('run._look_up_nodes() or run.rows["ship"].status') == "running"
    out = kernel.run('release.set()\nprint((await run)["result"], run.rows["ship"].status)')
    assert out.stdout.split() == ["slow", "succeeded"], out.shown
