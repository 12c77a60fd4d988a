"""The hash chain of a run's events: canonical JSON, sha256 links, verification. Pure.

Event ``n`` of run ``r`` is linked to its predecessor by::

    hash_n = sha256(hash_{n-1} + canonical_json({run_id, seq, at, type, step_id, detail}))

with ``hash_0`` = :data:`GENESIS_HASH`. Canonical JSON is sorted keys, no spaces, UTF-8, floats as
``repr`` and no NaN/Infinity, so any JSON-equal content hashes the same on every store. Since
the seq and the run id are inside the hashed body, an event moved to another position or run
no longer verifies; the run row keeps the head hash and the count so a cut-off tail or an
appended forgery is caught too. Without a secret nothing stops someone who rewrites the whole
chain *and* the run row's head; short of that, an edit of the event log is evident.

The chain covers the event log only. The run's current state is not hashed: the rest of its row
(the status column, the header with the run's output and status) and its step records are what
``show`` and ``runs`` print, and an edit of those alone leaves the chain intact (``lockgate
verify`` says so).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

from lockgate.engine.store.base import Event, VerifyReport
from lockgate.engine.store.codec import (
    check_text,
    decode,
    encode_json,
    encode_storable,
    json_encoder,
)
from lockgate.errors import StoreError, UnstorableValue

GENESIS_HASH = "0" * 64

_EVENT_KEYS = frozenset({"type", "step_id", "detail", "at"})
_NO_DETAIL: dict[str, Any] = {}


_dumps = json_encoder(sort_keys=True, ensure_ascii=False)


def _string(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


class Link(NamedTuple):
    """An event as stored: ``detail_json`` is the canonical JSON text of its detail."""

    seq: int
    at: str
    type: str
    step_id: str | None
    detail_json: str
    prev_hash: str
    hash: str


def stored_event(row: Sequence[Any]) -> Event:
    """The :class:`Event` of a stored ``(seq, at, type, step_id, detail_json, prev_hash, hash)``
    row: a :class:`Link` or a database row in the same column order."""
    seq, at, type_, step_id, detail_json, prev_hash, digest = row
    return Event(seq, at, type_, step_id, decode(detail_json, "the detail of event {}", seq), prev_hash, digest)


def undecodable(link: Link) -> str | None:
    """The first of ``link``'s text fields that is not valid Unicode, by name: a store read it
    with ``surrogateescape`` because its bytes were not UTF-8 (an edit of the file); None when
    every field is text as the store wrote it."""
    for name, value in (("at", link.at), ("type", link.type), ("step_id", link.step_id),
                        ("detail", link.detail_json), ("prev_hash", link.prev_hash), ("hash", link.hash)):
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return name
    return None


def refuse_undecodable(run_id: str, rows: Iterable[Sequence[Any]]) -> None:
    """Raise StoreError naming the first of run ``run_id``'s stored event ``rows`` (in seq
    order, read as by :func:`undecodable`) holding text that is not UTF-8; return when none does."""
    for row in rows:
        name = undecodable(Link(*row))
        if name is not None:
            raise StoreError(f"the {name} of event {row[0]} of run {run_id!r} in the store is not valid UTF-8 text: "
                             f"the store was edited or damaged; `lockgate verify {run_id}` names the damaged events")


def canonical_json(value: Any, what: str = "value") -> str:
    """``value`` as canonical JSON text; StoreError naming ``what`` if it is not JSON."""
    return encode_json(value, what, encode=_dumps)


def link_hash(prev_hash: str, body: str) -> str:
    """sha256 of the previous hash followed by an event's canonical body, as hex."""
    try:
        return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()
    except UnicodeEncodeError as exc:
        raise UnstorableValue(f"event text is not valid Unicode: {exc}") from exc


def event_body(run_id: str, seq: int, at: str, type_: str, step_id: str | None, detail_json: str) -> str:
    """``canonical_json({run_id, seq, at, type, step_id, detail})`` built from the detail's
    canonical text without re-encoding it (keys in sorted order)."""
    return (
        f'{{"at":{_string(at)},"detail":{detail_json},"run_id":{_string(run_id)},'
        f'"seq":{seq},"step_id":{_string(step_id)},"type":{_string(type_)}}}'
    )


class Pending(NamedTuple):
    """A validated event with its number and canonical detail, not yet linked into the chain."""

    seq: int
    at: str
    type: str
    step_id: str | None
    detail_json: str


def chain_events(
    run_id: str, events: Iterable[Any], prev_hash: str, next_seq: int, now: str
) -> list[Link]:
    """Validate input events and link them after ``prev_hash``, numbering from ``next_seq``.

    An input event is ``{"type": str, "step_id": str | None, "detail": dict, "at": ISO-8601}``;
    ``step_id`` and ``detail`` may be left out, and ``at`` defaults to ``now``.
    """
    return link_events(run_id, prepare_events(events, next_seq, now), prev_hash)


def prepare_events(events: Iterable[Any], next_seq: int, now: str) -> list[Pending]:
    """Validate input events (see :func:`chain_events`) and number them from ``next_seq``: all a
    store must check before it commits; linking them can then no longer fail."""
    if not isinstance(events, list):
        raise StoreError(f"events must be a list of dicts, not {type(events).__name__}")
    out = []
    for offset, event in enumerate(events):
        type_, step_id, detail, at = _check_event(event, offset, now)
        detail_json = encode_storable(detail, "events[{}].detail", offset, _dumps)
        if (not (detail_json.isascii() and type_.isascii() and (step_id is None or step_id.isascii())
                 and at.isascii())
                or "\0" in type_ or (step_id is not None and "\0" in step_id) or (at is not now and "\0" in at)):
            _check_text(offset, detail_json, type_, step_id, at)
        out.append(Pending(next_seq + offset, at, type_, step_id, detail_json))
    return out


def link_events(run_id: str, pending: Iterable[Pending], prev_hash: str) -> list[Link]:
    """Link prepared events after ``prev_hash`` (each hash covers the previous one)."""
    links = []
    sha256 = hashlib.sha256
    run_part = _string(run_id)
    for seq, at, type_, step_id, detail_json in pending:
        body = (f'{{"at":{_string(at)},"detail":{detail_json},"run_id":{run_part},'
                f'"seq":{seq},"step_id":{_string(step_id)},"type":{_string(type_)}}}')
        digest = sha256((prev_hash + body).encode("utf-8")).hexdigest()
        links.append(Link(seq, at, type_, step_id, detail_json, prev_hash, digest))
        prev_hash = digest
    return links


def head_hash(links: Sequence[Link], prev_hash: str = GENESIS_HASH) -> str:
    """The hash a chain ends on: its last link's, or ``prev_hash`` when ``links`` is empty."""
    return links[-1].hash if links else prev_hash


def _check_text(offset: int, detail_json: str, type_: str, step_id: str | None, at: str) -> None:
    """Refuse an event whose text no store can keep, naming the field: U+0000 in ``type``,
    ``step_id`` or ``at`` (``detail`` was checked as JSON), or a lone surrogate in any of them."""
    for name, text in (("detail", detail_json), ("type", type_), ("step_id", step_id), ("at", at)):
        if text is not None:
            check_text(text, f"events[{offset}].{name}")


def _check_event(event: Any, offset: int, now: str) -> tuple[str, str | None, dict[str, Any], str]:
    """The event's parts (``now``, already known good, when it has no ``at``)."""
    if isinstance(event, dict) and event.keys() <= _EVENT_KEYS:
        type_, step_id = event.get("type"), event.get("step_id")
        detail, at = event.get("detail", _NO_DETAIL), event.get("at", now)
        if (isinstance(type_, str) and type_ and (step_id is None or isinstance(step_id, str))
                and isinstance(detail, dict) and (at is now or (isinstance(at, str) and _is_iso8601(at)))):
            return type_, step_id, detail, at
    raise _event_error(event, f"events[{offset}]")


def _event_error(event: Any, where: str) -> StoreError:
    """Why ``event`` is not a valid input event (it is known not to be)."""
    if not isinstance(event, dict):
        return StoreError(f"{where} must be a dict, not {type(event).__name__}")
    unknown = event.keys() - _EVENT_KEYS
    if unknown:
        return StoreError(f"{where} has unknown keys {sorted(map(str, unknown))}")
    type_, step_id, detail = event.get("type"), event.get("step_id"), event.get("detail", _NO_DETAIL)
    if not isinstance(type_, str) or not type_:
        return StoreError(f"{where}.type must be a non-empty string")
    if step_id is not None and not isinstance(step_id, str):
        return StoreError(f"{where}.step_id must be a string or None")
    if not isinstance(detail, dict):
        return StoreError(f"{where}.detail must be a dict, not {type(detail).__name__}")
    return StoreError(f"{where}.at must be an ISO-8601 timestamp string, got {event.get('at')!r}")


def _is_iso8601(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def recompute(run_id: str, link: Link, seq: int | None = None) -> str | None:
    """The hash ``link`` should carry at ``seq`` (default its own) given its stored prev hash and
    content, or None when the stored content is not even well-formed (or nests deeper than JSON is
    read)."""
    try:
        detail = json.loads(link.detail_json)
        body = _dumps(
            {"run_id": run_id, "seq": link.seq if seq is None else seq, "at": link.at,
             "type": link.type, "step_id": link.step_id, "detail": detail}
        )
        return hashlib.sha256((str(link.prev_hash) + body).encode("utf-8")).hexdigest()
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):  # edited in the store
        return None


def verify_chain(run_id: str, links: Sequence[Link], head_hash: str, head_count: int) -> VerifyReport:
    """Check ``links`` (ordered by seq) against the chain rule and the run's recorded head.

    The first anomaly is classified with the help of the recorded count: more events than
    recorded means something was inserted, fewer that something was deleted; with the count
    intact a row whose content verifies at another position was reordered, anything else was
    edited.
    """
    if type(head_count) is not int:  # SQLite keeps whatever an edit put in the column
        return _bad(run_id, len(links), None, "edited",
                    f"the run's recorded event count {head_count!r} is not a number: its row was edited")
    surplus = len(links) - head_count
    origins = _chain_positions(links)
    expected_prev = GENESIS_HASH
    for position, link in enumerate(links, 1):
        problem = _check_link(run_id, links, position, link, expected_prev, origins, surplus)
        if problem is not None:
            return _bad(run_id, len(links), *problem)
        expected_prev = link.hash
    if surplus < 0:
        return _bad(run_id, len(links), len(links) + 1, "deleted",
                    f"the run recorded {head_count} events but only {len(links)} are stored")
    if expected_prev != head_hash:
        return _bad(run_id, len(links), len(links) or None, "edited",
                    "the last event's hash does not match the run's recorded chain head "
                    "(events were rewritten)")
    return VerifyReport(run_id=run_id, ok=True, count=len(links))


def _check_link(
    run_id: str, links: Sequence[Link], position: int, link: Link, expected_prev: str,
    origins: dict[str, int], surplus: int,
) -> tuple[int, str, str] | None:
    """(seq, problem, message) for the first thing wrong with the event at ``position``."""
    if position > len(links) - surplus and surplus > 0:
        return position, "inserted", f"event {link.seq} lies beyond the run's recorded chain head"
    if not isinstance(link.seq, int):
        return position, "edited", f"event {position} has a malformed sequence number {link.seq!r}"
    if link.seq != position:
        if link.seq > position:
            return position, "deleted", f"event {position} is missing (next stored is {link.seq})"
        return position, "inserted", f"event sequence number {link.seq} repeats at position {position}"
    if position == 1 and link.prev_hash != GENESIS_HASH:
        return 1, "bad_genesis", "the first event does not link to the genesis hash"
    self_ok = recompute(run_id, link) == link.hash
    if self_ok and link.prev_hash == expected_prev:
        return None
    if surplus > 0:
        forged_at = _inserted_at(links, position)
        return forged_at, "inserted", f"event {forged_at} is not part of the recorded chain"
    if surplus < 0:
        return position, "deleted", f"an event before event {position} is missing"
    name = undecodable(link)
    if name is not None:
        return position, "edited", (f"event {position} does not match its recorded hash: its {name} is not valid "
                                    "UTF-8 text (bytes edited into the store)")
    origin = origins.get(link.hash)
    if origin is not None and origin != position and recompute(run_id, link, origin) == link.hash:
        return position, "reordered", f"event {position} was recorded as event {origin}"
    return position, "edited", f"event {position} does not match its recorded hash"


def _inserted_at(links: Sequence[Link], position: int) -> int:
    """Which of the event at ``position`` (the first that does not verify) and the one before it
    was inserted, when both claim the same predecessor: the earlier one when only the later one
    is followed by the rest of the chain (a forgery pushed the genuine event down a place),
    else this one (a replayed copy of the event before it, or a forgery of its own)."""
    link = links[position - 1]
    previous = links[position - 2] if position > 1 else None
    following = links[position] if position < len(links) else None
    if (previous is not None and previous.prev_hash == link.prev_hash and previous.hash != link.hash
            and following is not None and following.prev_hash == link.hash):
        return position - 1
    return position


def _chain_positions(links: Sequence[Link]) -> dict[str, int]:
    """hash -> position in the chain obtained by following prev-hash links from genesis."""
    by_prev: dict[str, Link] = {}
    for link in links:
        by_prev.setdefault(str(link.prev_hash), link)
    positions: dict[str, int] = {}
    current, position = GENESIS_HASH, 0
    while current in by_prev and len(positions) < len(links):
        position += 1
        current = str(by_prev[current].hash)
        if current in positions:
            break
        positions[current] = position
    return positions


def _bad(run_id: str, count: int, seq: int | None, problem: str, message: str) -> VerifyReport:
    return VerifyReport(
        run_id=run_id, ok=False, count=count, first_bad_seq=seq, problem=problem, message=message
    )
