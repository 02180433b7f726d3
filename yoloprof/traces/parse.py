"""Kineto (torch.profiler Chrome-trace JSON) bytes -> columnar numpy arrays.

Why msgspec Structs with `args` kept as `msgspec.Raw`: a 54 MB trace holds ~200k events whose
`args` dicts are most of the bytes; typed decoding skips building those dicts and is several times
faster and leaner than `json.load`. Only the events the engine needs (device activity, runtime
calls, `[memory]` instants) get their `args` decoded, one small typed decode each.

Times stay in microseconds (Kineto writes µs even where `displayTimeUnit` says "ns") and are
shifted by the trace's first timestamp so float64 keeps sub-ns precision in differences.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, is_, is_not
from typing import Any, Iterable, Union

import msgspec
import numpy as np

from yoloprof.errors import ProfileError

# Normalised event categories. Old (2021) Kineto names map onto the current ones.
CATS = ("other", "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver",
        "kernel", "gpu_memcpy", "gpu_memset", "python_function", "trace")
CAT_ALIASES = {"operator": "cpu_op", "runtime": "cuda_runtime", "memcpy": "gpu_memcpy",
               "memset": "gpu_memset", "kernel": "kernel", "cuda_sync": "other"}
CAT_CODE = {name: code for code, name in enumerate(CATS)}
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_API_CATS = ("cuda_runtime", "cuda_driver")
GPU_SIDE_CATS = DEVICE_CATS + ("gpu_user_annotation",)

# Top-level keys kept as trace metadata (the env of a "trace" profile).
META_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit",
             "baseTimeNanoseconds", "traceName", "trace_id", "cupti_version",
             "cuda_runtime_version", "cuda_driver_version", "record_shapes", "profile_memory",
             "with_stack", "host_name", "hostname")


_NULL = msgspec.Raw(b"null")
_EMPTY = msgspec.Raw(b"{}")
_NO_RAW = msgspec.Raw(b"")

# Every Chrome-trace phase letter. Events are decoded as a union tagged by "ph": complete ("X")
# events and instants ("i"/"I") get typed fields; every other phase (flows, metadata, counters,
# async...) decodes to an empty Struct whose fields msgspec skips without building objects.
_PHASES = tuple("BEXiICbneSTpFstfPNODMVvRc()")


class _Complete(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = math.nan  # None and absent both become NaN in the columns
    dur: float | None = math.nan
    args: msgspec.Raw = _EMPTY


class _Instant(msgspec.Struct, gc=False, tag_field="ph", tag="i"):
    name: str = ""
    ts: float | None = math.nan
    args: msgspec.Raw = _NULL


class _InstantOld(_Instant, tag="I"):
    pass


_SKIPPED = tuple(msgspec.defstruct(f"_Phase{ord(ph)}", [], tag_field="ph", tag=ph, gc=False)
                 for ph in _PHASES if ph not in "XiI")
_AnyEvent = Union[(_Complete, _Instant, _InstantOld) + _SKIPPED]  # noqa: UP007 (a runtime tuple)


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


class _Trace(msgspec.Struct):
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



_MISSING = -(2**62)  # default of absent integer args: fails every range check, takes the fallback


class _GpuArgs(msgspec.Struct, gc=False):
    correlation: int | None = _MISSING
    device: int | str | None = _MISSING
    stream: int | str | None = _MISSING


class _MemArgs(msgspec.Struct, gc=False):
    device_type: int | None = msgspec.field(default=None, name="Device Type")
    device_id: int | None = msgspec.field(default=None, name="Device Id")
    nbytes: float | None = msgspec.field(default=None, name="Bytes")
    allocated: float | None = msgspec.field(default=None, name="Total Allocated")
    reserved: float | None = msgspec.field(default=None, name="Total Reserved")


_TRACE_DECODER = msgspec.json.Decoder(_Trace)
_LOOSE_DECODER = msgspec.json.Decoder(_LooseTrace)
_EVENT_DECODER = msgspec.json.Decoder(_Event)
_ANY_EVENT_DECODER = msgspec.json.Decoder(_AnyEvent)
_GPU_ARGS_LIST = msgspec.json.Decoder(list[_GpuArgs])
_MEM_ARGS_LIST = msgspec.json.Decoder(list[_MemArgs])
_LONE_SURROGATE = re.compile(
    rb"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@dataclass
class Memory:
    """`[memory]` instant events (profile_memory=True): one row per allocator call."""

    ts: np.ndarray
    device_type: np.ndarray  # 0 = CPU, 1 = CUDA, ... (c10::DeviceType)
    device_id: np.ndarray
    nbytes: np.ndarray
    allocated: np.ndarray
    reserved: np.ndarray

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class Events:
    """Complete ("X") events as parallel arrays; `strings[name[i]]` is event i's name."""

    strings: list[str]
    name: np.ndarray
    cat: np.ndarray
    thread: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    corr: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    t0: float
    memory: Memory
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # record_shapes: per event, index into `shape_strings` of its "Input Dims", -1 for none.
    shape: np.ndarray | None = None
    shape_strings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts)

    def is_cat(self, *cats: str) -> np.ndarray:
        return np.isin(self.cat, [CAT_CODE[c] for c in cats])

    def names_matching(self, pattern: re.Pattern[str]) -> np.ndarray:
        """Boolean mask of events whose name matches: the regex runs once per distinct name."""
        hits = np.fromiter((bool(pattern.search(s)) for s in self.strings), bool, len(self.strings))
        return hits[self.name] if len(self.strings) else np.zeros(len(self), bool)


def _decode(data: bytes) -> tuple[list[Any], _Trace, list[str]]:
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
    return _events_of(doc), doc, notes


def _maybe_utf8_error(exc: Exception) -> bool:
    return isinstance(exc, UnicodeDecodeError) or "utf-8" in str(exc).lower()


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_repaired(data: bytes, notes: list[str], first_error: Exception | None = None
                     ) -> tuple[list[Any], _Trace, list[str]]:
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
    return _events_of(doc), doc, notes


def _decode_loose(data: bytes, error: str, notes: list[str]) -> tuple[list[Any], _Trace, list[str]]:
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
    doc = _Trace(traceEvents=events)
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


def _events_of(doc: _Trace) -> list[Any]:
    return doc.traceEvents if doc.traceEvents is not None else []


def _check_shape(doc: _Trace) -> None:
    if doc.traceEvents is None:
        if doc.schema:
            try:
                schema = msgspec.json.decode(doc.schema)
            except msgspec.DecodeError:
                schema = "?"
            raise ProfileError(f"a JSON document with schema {schema!r}, not a Kineto trace "
                               "(no 'traceEvents')")
        raise ProfileError("JSON without 'traceEvents': not a Kineto trace")


def _meta(doc: _Trace) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in META_KEYS:
        raw = getattr(doc, key, None)
        if raw:
            try:
                meta[key] = msgspec.json.decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError):
                pass
    return meta


def parse_trace_bytes(data: bytes) -> Events:
    """Decode a whole Kineto trace; raise ProfileError (one line) for anything that is not one."""
    if not data or (len(data) < 65536 and not data.strip()):
        raise ProfileError("trace is empty")
    events, doc, notes = _decode(data)
    _check_shape(doc)
    if not events:
        raise ProfileError("trace has no events")
    out = _columns(events, notes)
    out.meta = _meta(doc)
    if not len(out) and not len(out.memory):
        raise ProfileError("trace has no events with a timestamp and duration")
    return out


# Column building. Every loop over events below runs in C: `map` with `attrgetter` or a bound
# method, `np.fromiter`, `dict.fromkeys`, `itertools.compress`. Python code runs once per distinct
# name / category / thread, never once per event, except on the slow paths taken when a field has
# an odd type (a string pid, a null correlation), which stay correct rather than fast.



def _codes(keys: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Integer code of each key (first appearance = 0, 1, ...) and the distinct keys in that order."""
    table = dict.fromkeys(keys)
    for code, key in enumerate(table):
        table[key] = code
    return np.fromiter(map(table.__getitem__, keys), np.int32, len(keys)), list(table)


def _floats(values: Iterable[Any], n: int) -> np.ndarray:
    """float64 column; None (JSON null) becomes NaN."""
    return np.fromiter(values, np.float64, n)


def _cat_code(cat: str) -> int:
    low = cat.lower()
    return CAT_CODE.get(CAT_ALIASES.get(low, low), 0)


def _id_column(xs: list[_Complete], getter: attrgetter) -> np.ndarray:
    """pid or tid as one int64 per event: the ids themselves when all are integers (fast path),
    else codes of the distinct values (string ids such as "Spans" or "stream 7")."""
    try:
        return np.fromiter(map(getter, xs), np.int64, len(xs))
    except (TypeError, ValueError, OverflowError):
        return _codes(list(map(getter, xs)))[0].astype(np.int64)


def _thread_codes(xs: list[_Complete]) -> np.ndarray:
    """One code per distinct (pid, tid) pair, numbered by first appearance."""
    pair = np.stack([_id_column(xs, _PID), _id_column(xs, _TID)], axis=1)
    change = np.flatnonzero(np.any(pair[1:] != pair[:-1], axis=1)) + 1
    starts = np.concatenate([[0], change]) if len(pair) else change
    # Runs of equal pairs are long (events of one thread come together): unique the run heads only.
    _, first, inverse = np.unique(pair[starts], axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int32)
    run_code = rank[inverse.reshape(-1)]
    return np.repeat(run_code, np.diff(np.append(starts, len(pair)))).astype(np.int32)


_PID, _TID, _TS, _DUR, _NAME, _CAT, _ARGS = map(attrgetter, ("pid", "tid", "ts", "dur", "name",
                                                              "cat", "args"))


def _of_type(events: list[Any], types: list[type], *classes: type) -> list[Any]:
    """The events decoded as one of `classes` (phase letters), in order: a C-level filter."""
    if len(classes) == 1:
        return list(compress(events, map(is_, types, repeat(classes[0]))))
    return list(compress(events, map(frozenset(classes).__contains__, types)))


def _complete_events(xs: list[_Complete], notes: list[str], counts: dict[str, int]
                     ) -> tuple[list[_Complete], np.ndarray, np.ndarray]:
    """The "X" events with a finite `ts`, without those with a negative `dur`; and their ts/dur."""
    n = len(xs)
    ts, dur = _floats(map(_TS, xs), n), _floats(map(_DUR, xs), n)
    keep = np.isfinite(ts)
    counts["complete"] = int(keep.sum())
    missing = int((keep & np.isnan(dur)).sum())
    negative = int((keep & ~np.isnan(dur) & ~(dur >= 0)).sum())
    if missing:
        notes.append(f"{missing} event(s) have no 'dur'; treated as 0 us")
    if negative:
        notes.append(f"{negative} event(s) with a negative or invalid 'dur' were dropped")
    counts.update(missing_dur=missing, negative_dur=negative)
    keep &= ~(dur < 0)
    if not keep.all():
        xs = list(compress(xs, keep.tolist()))
        ts, dur = ts[keep], dur[keep]
    return xs, ts, np.nan_to_num(dur, nan=0.0, posinf=np.inf)


def _columns(events: list[Any], notes: list[str]) -> Events:
    """The Events columns, built without a Python-level loop per event."""
    counts = {"events": len(events)}
    types = list(map(type, events))
    xs, ts, dur = _complete_events(_of_type(events, types, _Complete), notes, counts)
    mem = _memory(_of_type(events, types, _Instant, _InstantOld), notes)
    t0 = float(ts.min()) if len(ts) else 0.0
    if len(mem):
        t0 = min(t0, float(mem.ts.min())) if len(ts) else float(mem.ts.min())
        mem.ts -= t0
    name, strings = _codes(list(map(_NAME, xs)))
    cat_raw, cats = _codes(list(map(_CAT, xs)))
    cat_lut = np.array([_cat_code(c) for c in cats] or [0], np.int8)
    n = len(xs)
    out = Events(
        strings=strings, name=name, cat=cat_lut[cat_raw], thread=_thread_codes(xs), ts=ts - t0,
        dur=dur, corr=np.full(n, -1, np.int64), device=np.full(n, -1, np.int32),
        stream=np.full(n, -1, np.int32), t0=t0, memory=mem, warnings=notes, counts=counts)
    _gpu_args(xs, out, notes)
    _op_shapes(xs, out)
    return out


def _small_int(value: int | str | None, fallback: int) -> int:
    """Device / stream ids arrive as ints, numeric strings or "0x0" strings."""
    if isinstance(value, int) and -2**31 < value < 2**31:
        return value
    if isinstance(value, str):
        try:
            num = int(value, 0)
        except ValueError:
            return fallback
        return num if -2**31 < num < 2**31 else fallback
    return fallback


def _int_column(values: list[Any], fallback: np.ndarray, lo: int = -2**31, hi: int = 2**31
                ) -> np.ndarray:
    """Integers strictly inside (lo, hi); anything else (absent, null, a string that is not a
    number, out of range) takes `fallback`. Fast path: all plain ints."""
    try:
        arr = np.fromiter(values, np.int64, len(values))
    except (TypeError, ValueError, OverflowError):
        return np.fromiter((_small_int(v, int(f)) if lo == -2**31 else
                            (v if isinstance(v, int) and lo < v < hi else int(f))
                            for v, f in zip(values, fallback.tolist())), np.int64, len(values))
    return np.where((arr > lo) & (arr < hi), arr, fallback)


def _batch_decode(raws: list[msgspec.Raw], decoder: msgspec.json.Decoder) -> list[Any]:
    """Decode many small `args` in one call (one JSON array), several times faster than one call
    each; if any one is malformed, fall back to one by one with None for the bad ones."""
    try:
        return decoder.decode(b"[" + b",".join(raws) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        pass
    item = msgspec.json.Decoder(decoder.type.__args__[0])
    out: list[Any] = []
    for raw in raws:
        try:
            out.append(item.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
            out.append(None)
    return out


_CORR, _DEVICE, _STREAM = map(attrgetter, ("correlation", "device", "stream"))


def _gpu_args(xs: list[_Complete], out: Events, notes: list[str]) -> None:
    """Decode `args` only for device activity and runtime/driver calls (correlation, device,
    stream); a malformed `args` loses its correlation and is counted, never fatal. A device
    event without a usable device id takes its pid, without a stream its tid (Kineto's layout)."""
    wanted = np.flatnonzero(out.is_cat(*DEVICE_CATS, *HOST_API_CATS))
    sub = list(map(xs.__getitem__, wanted.tolist()))
    decoded = _batch_decode(list(map(_ARGS, sub)), _GPU_ARGS_LIST)
    ok = np.fromiter(map(is_not, decoded, repeat(None)), bool, len(decoded))
    bad = int(len(ok) - ok.sum())
    if bad:
        notes.append(f"{bad} GPU/runtime event(s) have malformed 'args' (no correlation used)")
        wanted, decoded = wanted[ok], list(compress(decoded, ok.tolist()))
    out.counts["bad_args"] = bad
    out.corr[wanted] = _int_column(list(map(_CORR, decoded)), np.full(len(wanted), -1), -1, 2**62)
    device_side = out.is_cat(*DEVICE_CATS)
    dev = np.flatnonzero(device_side[wanted])
    dev_args = list(map(decoded.__getitem__, dev.tolist()))
    dev_events = list(map(xs.__getitem__, wanted[dev].tolist()))
    tid = _int_column(list(map(_TID, dev_events)), np.zeros(len(dev), np.int64))
    out.device[wanted[dev]] = _int_column(list(map(_DEVICE, dev_args)), np.full(len(dev), -1))
    out.stream[wanted[dev]] = _int_column(list(map(_STREAM, dev_args)), tid)
    no_device = np.flatnonzero(device_side & (out.device < 0))
    pids = list(map(_PID, map(xs.__getitem__, no_device.tolist())))
    out.device[no_device] = _int_column(pids, np.zeros(len(no_device), np.int64))


_MEM_FIELDS = ("device_type", "device_id", "nbytes", "allocated", "reserved")


def _memory(instants: list[_Instant], notes: list[str]) -> Memory:
    """`[memory]` instants; one without usable args (absent, malformed, no finite ts) is skipped."""
    evs = [e for e in instants if e.name == "[memory]"]
    decoded = _batch_decode(list(map(_ARGS, evs)), _MEM_ARGS_LIST)
    ts = _floats(map(_TS, evs), len(evs))
    ok = np.isfinite(ts) & np.fromiter(map(is_not, decoded, repeat(None)), bool, len(evs))
    if not ok.all():
        notes.append(f"{int(len(ok) - ok.sum())} [memory] event(s) without usable args were skipped")
        decoded, ts = list(compress(decoded, ok.tolist())), ts[ok]
    cols = [_floats(map(attrgetter(f), decoded), len(decoded)) for f in _MEM_FIELDS]
    return Memory(ts, *cols)


# --- Input shapes of cpu_op events (record_shapes=True). Kept apart from the column pass above:
# only traces recorded with shapes pay for it (the first ops' raw `args` are probed for the key).
class _ShapeArgs(msgspec.Struct, gc=False):
    dims: Any = msgspec.field(default=None, name="Input Dims")


_SHAPE_ARGS_LIST = msgspec.json.Decoder(list[_ShapeArgs])
_SHAPE_PROBE = 64


def _op_shapes(xs: list[_Complete], out: Events) -> None:
    """`out.shape[i]` = code of op i's input dims, spelled as torch does ("[[64, 32], []]")."""
    ops = np.flatnonzero(out.cat == CAT_CODE["cpu_op"]).tolist()
    if not any(b'"Input Dims"' in bytes(xs[i].args) for i in ops[:_SHAPE_PROBE]):
        return
    codes: dict[str, int] = {}
    shape = np.full(len(out), -1, np.int32)
    for i, a in zip(ops, _batch_decode([xs[i].args for i in ops], _SHAPE_ARGS_LIST)):
        if a is not None and isinstance(a.dims, list):
            text = str(a.dims)  # torch's own spelling: key_averages(group_by_input_shape=True)
            shape[i] = codes.setdefault(text, len(codes))
    out.shape, out.shape_strings = shape, list(codes)
