"""Kineto trace JSON -> msgspec Structs: the typed decode, its repairs, and its chunking.

Why msgspec Structs: a 54 MB trace holds ~200k events whose `args` dicts are most of the bytes;
typed decoding builds only the few `args` keys the engine reads (correlation, device, stream,
input dims, the allocator's figures) and skips the rest without building objects, which is
several times faster and leaner than `json.load`. Events are a union tagged by "ph": only
complete ("X") events and instants get fields; flows, metadata and the rest decode to empty
Structs.

Why chunks: the Structs of a whole large trace take about as much memory as its JSON. A large
trace is decoded a slice of events at a time (`chunks`), each slice turned into columns and
freed before the next, so peak memory stays near the JSON size. Slices are cut textually at an
event boundary inside "traceEvents" and each must decode on its own; if any does not (odd
layout, invalid UTF-8, a malformed event), the whole document takes the one-piece path
(`decode`) with its repairs and its loose per-event fallback.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Union

import msgspec

from yoloprof.errors import ProfileError

# Top-level keys kept as trace metadata (the env of a "trace" profile).
META_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit",
             "baseTimeNanoseconds", "traceName", "trace_id", "cupti_version",
             "cuda_runtime_version", "cuda_driver_version", "record_shapes", "profile_memory",
             "with_stack", "host_name", "hostname")


_NO_RAW = msgspec.Raw(b"")
TRACE_KEY = b'"traceEvents"'  # the key that makes a JSON document a Kineto trace

# Every Chrome-trace phase letter. Events are decoded as a union tagged by "ph": complete ("X")
# events and instants ("i"/"I") get typed fields; every other phase (flows, metadata, counters,
# async...) decodes to an empty Struct whose fields msgspec skips without building objects.
_PHASES = tuple("BEXiICbneSTpFstfPNODMVvRc()")


class GpuArgs(msgspec.Struct, frozen=True, gc=False):
    """The `args` of a complete event, decoded in the event's own pass: the keys the engine reads
    and nothing else (every other key is skipped without building an object). Each may hold any
    JSON value: the columns check the types (`traces.parse`), so a malformed value costs its event
    the correlation and is counted, never the slice's decode."""

    correlation: Any = None
    device: Any = None
    stream: Any = None
    dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")  # record_shapes


class MemArgs(msgspec.Struct, frozen=True, gc=False):
    """The `args` of a `[memory]` instant (profile_memory=True), types checked as for GpuArgs."""

    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")
    nbytes: Any = msgspec.field(default=None, name="Bytes")
    allocated: Any = msgspec.field(default=None, name="Total Allocated")
    reserved: Any = msgspec.field(default=None, name="Total Reserved")


# `args` of any other JSON type (list, str, int, float, bool, null) decodes as itself and counts
# as malformed where it is read.
NO_GPU_ARGS = GpuArgs()
# Timestamps decode as Decimal (exact: traces.exact_times); an absent one is NaN, a float default
# that msgspec keeps as it is (a Decimal | float union would decode every timestamp as a float).


class Complete(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    # exact (traces.exact_times): an integer stays an int (a fraction, an exponent: Decimal), which
    # is both exact and several times cheaper to decode and subtract; None/absent -> NaN (see above)
    ts: int | Decimal | None = math.nan  # type: ignore[assignment]
    dur: float | None = math.nan
    args: GpuArgs | list | str | int | float | bool | None = NO_GPU_ARGS


class Instant(msgspec.Struct, gc=False, tag_field="ph", tag="i"):
    name: str = ""
    ts: int | Decimal | None = math.nan  # type: ignore[assignment]  # as Complete.ts
    args: MemArgs | list | str | int | float | bool | None = None


class InstantOld(Instant, tag="I"):
    pass


_SKIPPED = tuple(msgspec.defstruct(f"_Phase{ord(ph)}", [], tag_field="ph", tag=ph, gc=False)
                 for ph in _PHASES if ph not in "XiI")
if TYPE_CHECKING:  # mypy cannot evaluate a union of a runtime tuple: the skipped phases are Structs
    _AnyEvent = Union[Complete, Instant, InstantOld, msgspec.Struct]
else:
    _AnyEvent = Union[(Complete, Instant, InstantOld) + _SKIPPED]  # noqa: UP007 (a runtime tuple)


class _Event(msgspec.Struct, gc=False):
    """The shape of any event, for the loose path: tells an unknown phase (ignored) from a
    malformed event (counted)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    args: msgspec.Raw = _NO_RAW


class Trace(msgspec.Struct):
    traceEvents: list[_AnyEvent] | None = None
    schema: msgspec.Raw = _NO_RAW
    schemaVersion: msgspec.Raw = _NO_RAW
    deviceProperties: msgspec.Raw = _NO_RAW
    distributedInfo: msgspec.Raw = _NO_RAW
    displayTimeUnit: msgspec.Raw = _NO_RAW
    baseTimeNanoseconds: msgspec.Raw = _NO_RAW
    traceName: msgspec.Raw = _NO_RAW
    trace_id: msgspec.Raw = _NO_RAW
    cupti_version: msgspec.Raw = _NO_RAW
    cuda_runtime_version: msgspec.Raw = _NO_RAW
    cuda_driver_version: msgspec.Raw = _NO_RAW
    record_shapes: msgspec.Raw = _NO_RAW
    profile_memory: msgspec.Raw = _NO_RAW
    with_stack: msgspec.Raw = _NO_RAW
    host_name: msgspec.Raw = _NO_RAW
    hostname: msgspec.Raw = _NO_RAW


class _LooseTrace(msgspec.Struct):
    """Fallback shape: events kept raw so that one malformed event is dropped, not fatal."""

    traceEvents: list[msgspec.Raw] | None = None



_TRACE_DECODER = msgspec.json.Decoder(Trace)
_EVENTS_DECODER = msgspec.json.Decoder(list[_AnyEvent])
_LOOSE_DECODER = msgspec.json.Decoder(_LooseTrace)
_EVENT_DECODER = msgspec.json.Decoder(_Event)
_ANY_EVENT_DECODER = msgspec.json.Decoder(_AnyEvent)
_LONE_SURROGATE = re.compile(
    rb"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")



def decode(data: bytes) -> tuple[list[Any], Trace, list[str]]:
    """Typed decode with two repairs before giving up: invalid UTF-8 bytes and lone UTF-16
    surrogate escapes (both seen in names of real traces) become U+FFFD."""
    notes: list[str] = []
    try:
        doc = _TRACE_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        return _decode_loose(data, str(exc), notes)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        # msgspec < 0.23 raises UnicodeDecodeError on invalid UTF-8, 0.23+ a DecodeError saying
        # "UTF-8": only then check the bytes ourselves (one linear pass), so that a large file that
        # fails at its first byte fails at once.
        if _maybe_utf8_error(exc) and not _is_utf8(data):
            data = data.decode("utf-8", "replace").encode("utf-8")
            notes.append("trace has bytes that are not UTF-8; they were replaced with U+FFFD")
            return _decode_repaired(data, notes)
        return _decode_repaired(data, notes, first_error=exc)
    return events_of(doc), doc, notes


def _maybe_utf8_error(exc: Exception) -> bool:
    return isinstance(exc, UnicodeDecodeError) or "utf-8" in str(exc).lower()


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_repaired(data: bytes, notes: list[str], first_error: Exception | None = None
                     ) -> tuple[list[Any], Trace, list[str]]:
    # A lone surrogate needs a backslash (memchr-speed test) and shows as "surrogate" or, for a lone
    # high one, "truncated" in msgspec's error: anything else (a file of zeros, plain garbage) is
    # refused at once instead of after a regex pass over the whole file.
    fixed = data
    hint = str(first_error).lower() if first_error is not None else "surrogate"
    if ("surrogate" in hint or "truncated" in hint) and data.find(b"\\") >= 0:
        fixed = _LONE_SURROGATE.sub(lambda m: m.group(1) or rb"\ufffd", data)
    if first_error is not None and fixed is data:  # nothing repaired: the same error again
        raise ProfileError(f"not valid JSON ({first_error})")
    try:
        doc = _TRACE_DECODER.decode(fixed)
    except msgspec.ValidationError as exc:
        return _decode_loose(fixed, str(exc), notes)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"not valid JSON ({first_error or exc})") from None
    if fixed != data:
        notes.append("trace has unpaired UTF-16 surrogate escapes; they were replaced with U+FFFD")
    return events_of(doc), doc, notes


def _decode_loose(data: bytes, error: str, notes: list[str]) -> tuple[list[Any], Trace, list[str]]:
    """Some event (or the top level) has an unexpected type: decode event by event, drop the
    malformed ones with a counted warning, and fail only if the top level itself is wrong."""
    try:
        loose = _LOOSE_DECODER.decode(data)
        meta = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except (msgspec.ValidationError, msgspec.DecodeError):
        raise ProfileError(_shape_message(data, error)) from None
    if loose.traceEvents is None:
        raise ProfileError(_shape_message(data, error))
    events, bad = [], 0
    for raw in loose.traceEvents:
        try:
            events.append(_ANY_EVENT_DECODER.decode(raw))
            continue
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass
        try:  # a well-formed event of a phase we do not read ("ph" absent or unknown) is ignored
            _EVENT_DECODER.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            bad += 1
    if bad:
        notes.append(f"{bad} malformed trace event(s) were skipped")
    doc = Trace(traceEvents=events)
    for key in META_KEYS:
        if key in meta:
            setattr(doc, key, meta[key])
    return events, doc, notes


def _shape_message(data: bytes, error: str) -> str:
    try:
        top = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return f"not valid JSON ({error})"
    if isinstance(top, list):
        return "a JSON array, not a Kineto trace (expected an object with 'traceEvents')"
    if not isinstance(top, dict):
        return f"a JSON {type(top).__name__}, not a Kineto trace"
    return f"not a Kineto trace: {error}"


def events_of(doc: Trace) -> list[Any]:
    return doc.traceEvents if doc.traceEvents is not None else []


def check_shape(doc: Trace) -> None:
    if doc.traceEvents is None:
        if doc.schema:
            try:
                schema = msgspec.json.decode(doc.schema)
            except msgspec.DecodeError:
                schema = "?"
            raise ProfileError(f"a JSON document with schema {schema!r}, not a Kineto trace "
                               "(no 'traceEvents')")
        raise ProfileError("JSON without 'traceEvents': not a Kineto trace")


def meta_of(doc: Trace) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in META_KEYS:
        raw = getattr(doc, key, None)
        if raw:
            try:
                meta[key] = msgspec.json.decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError):
                pass
    return meta




# --- Chunks: slices of "traceEvents" decoded one at a time (see the module doc).
# Measured on df_index_resolver: 8 MiB slices took 0.219 s of CPU, 4 MiB 0.195 s, 2 MiB 0.202 s (same peak).
CHUNK_BYTES = 4 << 20
_SEPARATOR = re.compile(rb"\}\s*,\s*\{")  # between two events; raw newlines never occur in strings
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


class ChunkError(Exception):
    """A slice did not decode on its own: the caller takes the one-piece path."""


def _cuts(data: bytes, size: int) -> list[tuple[int, int]]:
    """(end of the previous event, start of the next) about every `size` bytes of traceEvents."""
    key = data.find(TRACE_KEY)
    if key < 0:
        return []
    cuts, pos = [], key + size
    while pos < len(data) - size:
        m = _SEPARATOR.search(data, pos)
        if m is None:
            break
        cuts.append((m.start() + 1, m.end() - 1))
        pos = m.end() + size
    return cuts


def plan(data: bytes, size: int | None = None) -> list[tuple[int, int]]:
    """Where to cut `data` into slices of about `size` bytes of events (CHUNK_BYTES by default):
    empty when it is small or has no place to cut. len(cuts) + 1 slices."""
    size = size or CHUNK_BYTES
    return _cuts(data, size) if len(data) >= 2 * size else []


def decode_slice(data: bytes, cuts: list[tuple[int, int]], i: int) -> tuple[list[Any], Trace | None]:
    """The events of slice i (and, for the first and last slices, the top-level document holding
    the keys before or after "traceEvents"). ChunkError when the slice does not decode alone."""
    view = memoryview(data)
    if i == 0:
        return _top(b"".join((view[:cuts[0][0]], b"]}")))
    if i == len(cuts):
        return _top(b"".join((b'{"traceEvents":[', view[cuts[-1][1]:])))
    piece = b"".join((b"[", view[cuts[i - 1][1]:cuts[i][0]], b"]"))
    try:
        return _EVENTS_DECODER.decode(piece), None
    except _DECODE_ERRORS as exc:
        raise ChunkError(str(exc)) from None


def _top(piece: bytes | bytearray) -> tuple[list[Any], Trace]:
    try:
        doc = _TRACE_DECODER.decode(piece)
    except _DECODE_ERRORS as exc:
        raise ChunkError(str(exc)) from None
    if doc.traceEvents is None:
        raise ChunkError("no traceEvents in an end slice")
    events, doc.traceEvents = doc.traceEvents, None
    return events, doc


def merged_meta(docs: list[Trace]) -> dict[str, Any]:
    """Top-level keys of the end slices (the first slice's value wins when both have one)."""
    meta: dict[str, Any] = {}
    for doc in reversed(docs):
        meta.update(meta_of(doc))
    return meta
