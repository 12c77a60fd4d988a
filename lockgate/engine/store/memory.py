"""An in-memory :class:`~lockgate.engine.store.base.Store` for tests and notebooks.

Same semantics as the durable stores: versions and conflicts, the hash chain and its
verification, JSON validation. State is kept packed (:func:`~lockgate.engine.store.codec.pack_write`:
validated as JSON, stored as :mod:`marshal` bytes) and unpacked into fresh objects on load, so
nothing a caller passes in or gets back aliases stored state. Events are validated and numbered when saved, and linked into the hash
chain when first read (the chain depends only on what was committed, so it comes out the same). Thread-safe; :meth:`MemoryStore.wait_for_change` wakes on a condition
variable instead of polling.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from lockgate.engine.store import codec
from lockgate.engine.store.base import Event, RunSummary, StoredRun, VerifyReport
from lockgate.engine.store.chain import (
    Link,
    Pending,
    head_hash,
    link_events,
    prepare_events,
    stored_event,
    verify_chain,
)
from lockgate.errors import StoreError


@dataclass(slots=True)
class _Run:
    run_id: str
    header: bytes
    status: str
    flow: str
    version: int
    created_at: str
    updated_at: str
    steps: dict[str, bytes] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    #: committed events not linked yet: hashing waits for the first reader (the hashes are a
    #: pure function of the committed events, so they come out the same whenever computed)
    pending: list[Pending] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.links) + len(self.pending)

    def linked(self) -> list[Link]:
        """Every event, linked (call under the store's lock)."""
        if self.pending:
            self.links.extend(link_events(self.run_id, self.pending, head_hash(self.links)))
            self.pending = []
        return self.links


class MemoryStore:
    """Dict-backed store; lost when the process ends."""

    def __init__(self, *, where: str | None = None) -> None:
        """``where``: how to name this store in a "no run with id" error (a command standing in
        for a store that does not exist yet says which)."""
        self._where = where
        self._runs: dict[str, _Run] = {}
        self._changed = threading.Condition()
        self._waiting = 0  # threads in wait_for_change: a save wakes them only when there are some
        self._closed = False

    def create_run(
        self, run_id: str, header: dict[str, Any], steps: dict[str, dict[str, Any]], events: list[dict[str, Any]]
    ) -> int:
        codec.check_run_id(run_id)
        packed_header, status, flow, packed_steps, now = codec.pack_write(header, steps)
        pending = prepare_events(events, 1, now)
        with self._changed:
            self._check_open()
            if run_id in self._runs:
                raise StoreError(f"run {run_id!r} already exists")
            self._runs[run_id] = _Run(run_id, packed_header, status, flow, 1, now, now, dict(packed_steps), [],
                                      pending)
            self._changed.notify_all()
        return 1

    def load_run(self, run_id: str) -> StoredRun:
        codec.check_run_id(run_id, existing=True)
        with self._changed:
            run = self._run(run_id)
            header, version, steps = run.header, run.version, dict(run.steps)
        return StoredRun(
            run_id=run_id,
            header=codec.unpack(header),
            steps={step_id: codec.unpack(packed) for step_id, packed in steps.items()},
            version=version,
        )

    def save_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        header: dict[str, Any],
        steps: dict[str, dict[str, Any]],
        events: list[dict[str, Any]],
    ) -> int:
        codec.check_run_id(run_id, existing=True)
        codec.check_version(expected_version)
        packed_header, status, flow, packed_steps, now = codec.pack_write(header, steps)
        with self._changed:
            run = self._run(run_id)
            if run.version != expected_version:
                raise codec.conflict(run_id, expected_version, run.version)
            pending = prepare_events(events, run.count + 1, now)
            run.header, run.status, run.flow = packed_header, status, flow
            run.steps.update(packed_steps)
            run.pending.extend(pending)
            run.version += 1
            run.updated_at = now
            if self._waiting:
                self._changed.notify_all()
            return run.version

    def current_version(self, run_id: str) -> int:
        codec.check_run_id(run_id, existing=True)
        with self._changed:
            return self._run(run_id).version

    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunSummary]:
        codec.check_listing(status, limit)
        with self._changed:
            self._check_open()
            matching = (
                RunSummary(run_id, run.flow, run.status, run.created_at, run.updated_at, run.version)
                for run_id, run in reversed(self._runs.items())
                if status is None or run.status == status
            )
            return list(islice(matching, limit))

    def events(self, run_id: str, since_seq: int = 0) -> list[Event]:
        codec.check_run_id(run_id, existing=True)
        codec.check_seq(since_seq)
        with self._changed:
            links = self._run(run_id).linked()[max(since_seq, 0):]
        return [stored_event(link) for link in links]

    def verify(self, run_id: str) -> VerifyReport:
        codec.check_run_id(run_id, existing=True)
        with self._changed:
            links = list(self._run(run_id).linked())
        return verify_chain(run_id, links, head_hash(links), len(links))

    def wait_for_change(self, run_id: str, version: int, timeout: float) -> int:
        codec.check_run_id(run_id, existing=True)
        timeout = codec.check_wait(version, timeout)
        with self._changed:
            self._waiting += 1
            try:
                self._changed.wait_for(lambda: self._run(run_id).version != version, timeout=timeout)
            finally:
                self._waiting -= 1
            return self._run(run_id).version

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _run(self, run_id: str) -> _Run:
        self._check_open()
        run = self._runs.get(run_id)
        if run is None:
            raise codec.not_found(run_id, self._where)
        return run

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
