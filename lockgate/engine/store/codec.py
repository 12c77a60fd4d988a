"""Validation and JSON encoding of what callers hand to a store, shared by every backend.

Every store keeps JSON text (or JSONB made from it), so encoding is also the deep copy that
keeps callers from mutating stored state, and a value that is not JSON fails the same way on
every backend: a :class:`StoreError` naming the offending part.
"""

from __future__ import annotations

import json
import marshal
import math
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any, NamedTuple

from lockgate.errors import (
    ConcurrencyConflict,
    RunNotFound,
    StoreError,
    UnstorableValue,
)

MAX_RUN_ID = 200
#: The longest step id a store keeps, in UTF-8 bytes (so 1,000 ASCII characters): PostgreSQL
#: indexes (run id, step id) and refuses an index row over ~2,700 bytes.
MAX_STEP_ID = 1000
#: The longest header ``status`` and ``flow``, in characters (status is indexed too).
MAX_STATUS = MAX_FLOW = 200
#: The largest integer SQLite keeps (64-bit signed): the bound of versions, seqs and limits.
MAX_INT = 2**63 - 1


def json_encoder(*, sort_keys: bool, ensure_ascii: bool) -> Callable[[Any], str]:
    """A compact, NaN-refusing JSON encoder function.

    The C encoder is built once here (``json.dumps`` builds one per call, a third of the cost of
    encoding a small record). It keeps no circular-reference markers, so it is safe to share
    between threads; a cycle ends in RecursionError, which callers report like any non-JSON.
    """

    def refuse(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    if c_make_encoder is None:  # pragma: no cover - CPython always has _json
        return json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=ensure_ascii,
                                allow_nan=False).encode
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring
    encode = c_make_encoder(None, refuse, strings, None, ":", ",", sort_keys, False, False)
    return lambda value: "".join(encode(value, 0))


_encode = json_encoder(sort_keys=False, ensure_ascii=True)


#: (the first microsecond of the current second, its date and time of day as ISO-8601 text)
_second: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string with microseconds.

    Every save stamps one; the date and time of day are formatted once per second.
    """
    global _second
    micros = time.time_ns() // 1000
    start, text = _second
    offset = micros - start
    if not 0 <= offset < 1_000_000:
        start = micros - micros % 1_000_000
        text = datetime.fromtimestamp(start // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        _second, offset = (start, text), micros - start
    return "%s%06d+00:00" % (text, offset)


def check_run_id(run_id: Any, *, existing: bool = False) -> str:
    """``run_id`` if it is one a run can have: a non-empty, printable string of at most
    :data:`MAX_RUN_ID` characters. A non-string is a StoreError everywhere; a string no run can
    have is a StoreError when creating and, with ``existing`` (every call on a stored run),
    RunNotFound without asking the database (which may refuse to even compare it)."""
    if not isinstance(run_id, str):
        raise StoreError(f"run id must be a string, not {type(run_id).__name__}: {run_id!r}")
    if 0 < len(run_id) <= MAX_RUN_ID and run_id.isprintable():
        return run_id
    if existing:
        raise not_found(run_id)
    if not run_id or len(run_id) > MAX_RUN_ID:
        raise StoreError(f"run id must be a non-empty string of at most {MAX_RUN_ID} characters, got {run_id!r}")
    raise StoreError(f"run id must be printable, got {run_id!r}")


def _check_int(value: Any, name: str, low: int) -> int:
    """``value`` if it is an int (not a bool) from ``low`` to :data:`MAX_INT`; else StoreError
    naming ``name``."""
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
        raise StoreError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= MAX_INT:
        kind = "positive" if low == 1 else "non-negative"
        raise StoreError(f"{name} must be a {kind} integer of at most {MAX_INT}, got {value!r}")
    return value


def check_version(version: Any, name: str = "expected_version") -> int:
    """A run version handed to a store: an int from 1 to :data:`MAX_INT`."""
    if type(version) is int and 0 < version <= MAX_INT:
        return version
    return _check_int(version, name, 1)


def check_listing(status: Any, limit: Any) -> None:
    if status is not None and not isinstance(status, str):
        raise StoreError(f"status must be a string or None, got {status!r}")
    if status is not None and not status.isascii():  # no status is; SQLite cannot even bind some
        check_text(status, "the status to list")
    _check_int(limit, "limit", 0)


def check_seq(since_seq: Any) -> int:
    return _check_int(since_seq, "since_seq", 0)


def check_wait(version: Any, timeout: Any) -> float:
    """The arguments of ``wait_for_change`` after its run id: ``version`` an int from 0 to
    :data:`MAX_INT`, ``timeout`` a finite number of seconds >= 0 (a bool is not one); returns
    the timeout as a float, at most ``threading.TIMEOUT_MAX`` (some 292 years: longer waits
    overflow the clocks they are handed to)."""
    _check_int(version, "version", 0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise StoreError(f"timeout must be a number of seconds, got {timeout!r}")
    try:
        seconds = float(timeout)
    except OverflowError:
        seconds = math.inf
    if not 0 <= seconds < math.inf:  # NaN fails both
        raise StoreError(f"timeout must be a finite number of seconds >= 0, got {timeout!r}")
    return min(seconds, threading.TIMEOUT_MAX)


def encode_json(value: Any, what: str, key: Any = None, encode: Callable[[Any], str] = _encode) -> str:
    """Compact JSON text of ``value`` (by ``encode``); StoreError naming ``what`` if it is not
    JSON. ``what`` may hold a ``{!r}``-style field for ``key``, formatted only for the error, so
    a store's loop over records pays nothing for naming them."""
    try:
        return encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UnstorableValue(f"{_name(what, key)} is not JSON-serialisable: {exc}") from exc


def encode_storable(value: Any, what: str, key: Any = None, encode: Callable[[Any], str] = _encode) -> str:
    """:func:`encode_json`, refusing U+0000 (:func:`refuse_nul`) and, in ASCII text, lone
    surrogates (:func:`refuse_lone_surrogate`) as well: the text every store can keep. (Text
    with non-ASCII characters, the chain's, has its strings checked by the caller.)"""
    text = encode_json(value, what, key, encode)
    if NUL_ESCAPE in text:
        refuse_nul(text, _name(what, key))
    if SURROGATE_ESCAPE in text:
        refuse_lone_surrogate(text, _name(what, key))
    return text


def _name(what: str, key: Any) -> str:
    return what if key is None else what.format(key)


def check_header(header: Any) -> tuple[str, str]:
    """(status, flow) of a run header: a dict whose ``status`` and ``flow`` are strings."""
    if not isinstance(header, dict):
        raise StoreError(f"header must be a dict, not {type(header).__name__}")
    status, flow = header.get("status"), header.get("flow")
    if not isinstance(status, str) or not isinstance(flow, str):
        raise StoreError(
            f"header['status'] and header['flow'] must be strings, got {status!r} and {flow!r}"
        )
    if len(status) > MAX_STATUS or len(flow) > MAX_FLOW:
        name, text, limit = ("status", status, MAX_STATUS) if len(status) > MAX_STATUS else ("flow", flow, MAX_FLOW)
        raise StoreError(f"header[{name!r}] must be at most {limit} characters, got {len(text)}: {text[:40]!r}...")
    return status, flow


def check_step(step_id: Any, record: Any) -> None:
    """Refuse a changed step that is not ``non-empty str id -> record dict``."""
    if not isinstance(step_id, str) or not step_id:
        raise StoreError(f"step ids must be non-empty strings, got {step_id!r}")
    if len(step_id) > MAX_STEP_ID or "\0" in step_id or not step_id.isascii():
        check_step_id_text(step_id)
    if not isinstance(record, dict):
        raise StoreError(f"steps[{step_id!r}] must be a dict, not {type(record).__name__}")


def check_step_id_text(step_id: str) -> None:
    """Refuse a step id holding U+0000 or a lone surrogate (UnstorableValue), or longer than
    :data:`MAX_STEP_ID` bytes of UTF-8 (StoreError); return for any other."""
    what = f"step id {step_id[:40]!r}{'...' if len(step_id) > 40 else ''}"
    size = len(check_text(step_id, what))
    if size > MAX_STEP_ID:
        raise StoreError(f"{what} is {size} bytes long in UTF-8; a step id may have at most {MAX_STEP_ID}")


def check_text(text: str, what: str) -> bytes:
    """``text`` as UTF-8; UnstorableValue naming ``what`` when it holds U+0000 (PostgreSQL refuses
    it) or a lone surrogate (not valid Unicode)."""
    if "\0" in text:
        raise UnstorableValue(f"{what} contains the character U+0000, which a store cannot keep (PostgreSQL "
                              "refuses it); remove it")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnstorableValue(f"{what} is not valid Unicode (it holds a lone surrogate): {exc}") from exc


def check_steps(steps: Any) -> dict[Any, Any]:
    if not isinstance(steps, dict):
        raise StoreError(f"steps must be a dict of step id -> record, not {type(steps).__name__}")
    return steps


def encode_header(header: Any) -> tuple[str, str, str]:
    """(JSON text, status, flow) of a run header; ``status`` and ``flow`` must be strings."""
    status, flow = check_header(header)
    return encode_storable(header, "header"), status, flow


def encode_steps(steps: Any) -> list[tuple[str, str]]:
    """[(step id, JSON text of its record)] for a ``{step_id: record dict}`` mapping."""
    encoded = []
    for step_id, record in check_steps(steps).items():
        check_step(step_id, record)
        encoded.append((step_id, encode_storable(record, "steps[{!r}]", step_id)))
    return encoded


class EncodedWrite(NamedTuple):
    """What ``create_run`` and ``save_run`` write besides events, validated and encoded once."""

    header: str  #: the header's JSON text
    status: str
    flow: str
    steps: list[tuple[str, str]]  #: (step id, JSON text of its record)
    now: str  #: the write's timestamp


def encode_write(header: Any, steps: Any) -> EncodedWrite:
    """Validate and encode a write's header and changed step records, and stamp it: every backend
    refuses the same bad input with the same error, header first."""
    header_json, status, flow = encode_header(header)
    return EncodedWrite(header_json, status, flow, encode_steps(steps), utc_now())


class _NotPlain(Exception):
    """A value the fast check leaves to the JSON round trip (which reports or normalises it)."""


def _check_plain(value: Any) -> None:
    """Return when ``value`` is a dict or list made only of plain JSON values: exact ``dict``
    with ``str`` keys, ``list``, ``str`` without U+0000, ``int``, ``bool``, finite ``float``,
    ``None``; raise :class:`_NotPlain` at anything else (tuples, subclasses, NaN, ...)."""
    if type(value) is dict:
        for key in value:
            if type(key) is not str or "\0" in key or not (key.isascii() or is_unicode(key)):
                raise _NotPlain
        items: Any = value.values()
    elif type(value) is list:
        items = value
    else:
        raise _NotPlain
    for item in items:
        kind = type(item)
        if kind is str:
            if "\0" in item or not (item.isascii() or is_unicode(item)):
                raise _NotPlain
        elif kind is dict or kind is list:
            _check_plain(item)
        elif kind is float:
            if item - item != 0.0:  # NaN and the infinities
                raise _NotPlain
        elif not (kind is int or kind is bool or item is None):
            raise _NotPlain


def is_plain(value: Any) -> bool:
    """Whether ``value`` is a dict or list of plain JSON values only (see :func:`_check_plain`)."""
    try:
        _check_plain(value)
    except (_NotPlain, RecursionError):
        return False
    return True


def is_unicode(text: str) -> bool:
    """Whether ``text`` holds no surrogate code point (what UTF-8, and so PostgreSQL, refuses)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def pack_json(value: Any, what: str, key: Any = None) -> bytes:
    """``value`` as JSON would give it back (``decode(encode_json(value))``), packed with
    :mod:`marshal` for :func:`unpack`; refuses what a store refuses (not JSON, NaN or infinity,
    U+0000) with the same StoreError. Plain values are checked in one walk and packed in C
    without formatting any text (floats are the dear part of JSON encoding); anything else takes
    the JSON round trip first. Bytes, unlike nested dicts, cost the garbage collector nothing.
    ``what`` and ``key`` name the value in errors, as for :func:`encode_json`."""
    try:
        _check_plain(value)
    except (_NotPlain, RecursionError):
        value = decode(encode_storable(value, what, key))
    try:
        # Format 2: no table of shared objects. Formats 3+ hash every object referenced more
        # than once, and a record shares most of its values with the engine's live state.
        return marshal.dumps(value, 2)
    except ValueError as exc:  # nested deeper than marshal goes (JSON went deeper)
        raise UnstorableValue(f"{_name(what, key)} is nested too deeply to store: {exc}") from exc


def unpack(packed: bytes) -> Any:
    """A fresh copy of the value :func:`pack_json` packed."""
    return marshal.loads(packed)


class PackedWrite(NamedTuple):
    """What ``create_run`` and ``save_run`` write besides events, validated and packed once (the
    memory store keeps these instead of JSON text)."""

    header: bytes
    status: str
    flow: str
    steps: list[tuple[str, bytes]]  #: (step id, its packed record)
    now: str  #: the write's timestamp


def pack_write(header: Any, steps: Any) -> PackedWrite:
    """:func:`encode_write` for a store that keeps packed values: the same checks and errors, in
    the same order."""
    status, flow = check_header(header)
    packed_header = pack_json(header, "header")
    packed = []
    for step_id, record in check_steps(steps).items():
        check_step(step_id, record)
        packed.append((step_id, pack_json(record, "steps[{!r}]", step_id)))
    return PackedWrite(packed_header, status, flow, packed, utc_now())


#: How U+0000 appears in encoded JSON: a cheap ``in`` test before the exact one.
NUL_ESCAPE = "\\u0000"
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def refuse_nul(text: str, what: str) -> None:
    """Refuse a header, record or event detail holding the character U+0000 (escaped ``\\u0000`` in ``text``,
    not a literal backslash followed by ``u0000``): PostgreSQL's JSONB cannot store it, so no
    backend accepts it and every backend fails the same way."""
    if _NUL.search(text):
        raise UnstorableValue(f"{what} contains the character U+0000, which a store cannot keep (PostgreSQL "
                         "refuses it); remove it from the value")


#: How a surrogate code point appears in ASCII-encoded JSON: a cheap ``in`` test before the
#: exact one.
SURROGATE_ESCAPE = "\\ud"
# An escaped surrogate not in a high-low pair, in text whose escaped backslashes are blanked out
# (so every backslash left starts an escape).
_LONE_SURROGATE = re.compile(r"\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}")


def refuse_lone_surrogate(text: str, what: str) -> None:
    """Refuse a header, record or event detail holding a lone surrogate, escaped in ASCII JSON
    ``text`` as ``\\udXXX`` without its partner (a pair is one character, which JSON decodes
    as such; a literal backslash followed by ``udXXX`` is ordinary text). Such a string is not
    Unicode: PostgreSQL cannot store it, so no backend accepts it."""
    found = _LONE_SURROGATE.search(text.replace("\\\\", "__"))
    if found:
        code = found.group()[2:].upper()  # its escape, \\udXXX
        raise UnstorableValue(f"{what} is not valid Unicode: it holds the lone surrogate U+{code}, which a store "
                              "cannot keep (PostgreSQL refuses it)")


def decode(text: str | bytes, what: str = "a stored value", key: Any = None) -> Any:
    """Parse JSON text the store kept; StoreError naming ``what`` (formatted with ``key`` as for
    :func:`encode_json`) when it is not JSON or nests deeper than the parser goes, which only an
    edit or damage to the store makes."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        problem = "nests deeper than it can be read" if isinstance(exc, RecursionError) else "is not valid JSON"
        raise StoreError(f"{_name(what, key)} in the store {problem} ({exc}): the store was edited "
                         "or damaged; `lockgate verify RUN` names the damaged events") from exc


def damaged(what: str, problem: str) -> StoreError:
    """The error for a stored value that is JSON but not of the shape the engine wrote (``what``
    names it, ``problem`` says how it is wrong): as for text that is not JSON (:func:`decode`),
    only an edit or damage to the store makes one. No `verify` hint: it checks the event chain,
    not the records."""
    return StoreError(f"{what} in the store is {problem}: the store was edited or damaged")


def json_kind(value: Any) -> str:
    """What JSON calls the type of a decoded ``value`` (for :func:`damaged` messages)."""
    if isinstance(value, bool):
        return "a boolean"
    for kind, name in ((dict, "an object"), (list, "an array"), (str, "a string"), (int, "an integer"),
                       (float, "a number")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else f"a {type(value).__name__}"


def not_found(run_id: str, where: object = None) -> RunNotFound:
    """The error every backend raises for a run id it does not hold (``where``: the store, when
    naming it helps: a file in another folder than the one the run was started in)."""
    place = f" in {where}" if where is not None else ""
    return RunNotFound(f"no run with id {run_id!r}{place}", run_id=run_id)


def conflict(run_id: str, expected: int, actual: int) -> ConcurrencyConflict:
    """The error for a save against ``expected`` when the run is at ``actual``. Equal versions
    mean the run's chain head moved under a cached one (the database was swapped or edited)."""
    if actual == expected:
        message = f"run {run_id!r} changed underneath this store (its chain head moved); reload it"
    else:
        message = f"run {run_id!r} is at version {actual}, not {expected}"
    return ConcurrencyConflict(message, run_id=run_id, expected_version=expected, actual_version=actual)


def events_behind(run_id: str, count: int) -> StoreError:
    """The refusal of a save whose new events' numbers are taken by stored events of the run."""
    return StoreError(
        f"run {run_id!r}: its stored event count ({count}) is behind its events (an event numbered "
        f"{count + 1} or above is already stored): the store was edited (an event inserted by hand, or the "
        f"run's row changed) or restored from a backup; "
        f"nothing was written; `lockgate verify {run_id}` names the damaged events"
    )
