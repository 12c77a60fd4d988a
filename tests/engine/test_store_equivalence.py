"""Same semantics everywhere: a random sequence of store operations gives identical outcomes,
states and hash chains on the memory, SQLite and PostgreSQL backends."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.engine.store import MemoryStore, SQLiteStore, Store
from lockgate.errors import LockgateError

AT = "2025-03-01T12:00:00+00:00"
RUN_IDS = ["a", "b"]

json_leaf = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(-1e6, 1e6) | st.text(max_size=6)
records = st.dictionaries(st.sampled_from(["x", "y", "z"]), json_leaf, max_size=3)
events = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["started", "done", "gate"]),
                           "step_id": st.none() | st.sampled_from(["s1", "s2"]), "detail": records,
                           "at": st.just(AT)}),
    max_size=3,
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(RUN_IDS), records, events),
        st.tuples(st.just("save"), st.sampled_from(RUN_IDS), st.integers(1, 6),
                  st.dictionaries(st.sampled_from(["s1", "s2", "s3"]), records, max_size=2), events),
    ),
    min_size=1,
    max_size=12,
)


def _apply(store: Store, operation: tuple[Any, ...]) -> Any:
    try:
        if operation[0] == "create":
            _, run_id, extra, evs = operation
            return store.create_run(run_id, {"status": "running", "flow": "main", **extra}, {"s1": {}}, evs)
        _, run_id, version, steps, evs = operation
        return store.save_run(run_id, expected_version=version, header={"status": f"v{version}", "flow": "main"},
                              steps=steps, events=evs)
    except LockgateError as exc:
        return type(exc).__name__


def _state(store: Store) -> list[Any]:
    state = []
    for run_id in RUN_IDS:
        try:
            state.append((store.load_run(run_id), store.events(run_id), store.verify(run_id)))
        except LockgateError as exc:
            state.append(type(exc).__name__)
    state.append([(s.run_id, s.status, s.version) for s in store.list_runs()])
    return state


@pytest.mark.postgres
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_backends_agree_on_every_operation_sequence(pg_dsn: str, ops: list[tuple[Any, ...]]) -> None:
    from lockgate.engine.store.postgres import PostgresStore

    schema = f"eq_{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[Store] = [MemoryStore(), SQLiteStore(Path(tmp) / "s.db"), PostgresStore(pg_dsn, schema=schema)]
        try:
            for operation in ops:
                outcomes = [_apply(store, operation) for store in stores]
                assert outcomes[0] == outcomes[1] == outcomes[2], operation
            states = [_state(store) for store in stores]
            assert states[0] == states[1] == states[2]
        finally:
            stores[2]._db.execute(f"DROP SCHEMA {schema} CASCADE")
            for store in stores:
                store.close()
