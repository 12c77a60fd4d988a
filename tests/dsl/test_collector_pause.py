"""The garbage collector pause shared by concurrent loads (lockgate.dsl.loader)."""

from __future__ import annotations

import gc
import threading

import pytest

from lockgate.dsl.loader import _CollectorPause, load


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_overlapping_loads_keep_the_collector_off_until_the_last_one_ends(collector_on):
    pause = _CollectorPause()
    entered, release = threading.Event(), threading.Event()

    def other_load():
        with pause():
            entered.set()
            release.wait(30)

    thread = threading.Thread(target=other_load)
    with pause():
        assert not gc.isenabled()
        thread.start()
        assert entered.wait(30)
    assert not gc.isenabled()  # the other load is still running
    release.set()
    thread.join(30)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off(collector_on):
    pause = _CollectorPause()
    gc.disable()
    with pause():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_failed_load_turns_the_collector_back_on(collector_on):
    pause = _CollectorPause()
    with pytest.raises(RuntimeError), pause():
        raise RuntimeError("parse blew up")
    assert gc.isenabled()


def test_loads_from_many_threads_leave_the_collector_on(collector_on):
    text = "version: 1\nflows:\n  entry: main\n  main:\n    input: {}\n    steps:\n      - id: a\n        do: x\n"
    results = []
    threads = [threading.Thread(target=lambda: results.append(load(text))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 8 and gc.isenabled()
