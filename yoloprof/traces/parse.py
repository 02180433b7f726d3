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
from typing import Any

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


_NO_RAW = msgspec.Raw(b"")


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    args: msgspec.Raw = _NO_RAW


class _Trace(msgspec.Struct):
    traceEvents: list[_Event] | None = None
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


class _GpuArgs(msgspec.Struct, gc=False):
    correlation: int | None = None
    device: int | str | None = None
    stream: int | str | None = None


class _MemArgs(msgspec.Struct, gc=False):
    device_type: int | None = msgspec.field(default=None, name="Device Type")
    device_id: int | None = msgspec.field(default=None, name="Device Id")
    nbytes: float | None = msgspec.field(default=None, name="Bytes")
    allocated: float | None = msgspec.field(default=None, name="Total Allocated")
    reserved: float | None = msgspec.field(default=None, name="Total Reserved")


_TRACE_DECODER = msgspec.json.Decoder(_Trace)
_LOOSE_DECODER = msgspec.json.Decoder(_LooseTrace)
_EVENT_DECODER = msgspec.json.Decoder(_Event)
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


def _decode(data: bytes) -> tuple[list[_Event], _Trace, list[str]]:
    """Typed decode with two repairs before giving up: invalid UTF-8 bytes and lone UTF-16
    surrogate escapes (both seen in names of real traces) become U+FFFD."""
    notes: list[str] = []
    try:
        doc = _TRACE_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        return _decode_loose(data, str(exc), notes)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        # msgspec < 0.23 raises UnicodeDecodeError on invalid UTF-8, 0.23+ a DecodeError: check the
        # bytes ourselves (one linear pass, only on this error path) instead of the exception type.
        if not _is_utf8(data):
            data = data.decode("utf-8", "replace").encode("utf-8")
            notes.append("trace has bytes that are not UTF-8; they were replaced with U+FFFD")
            return _decode_repaired(data, notes)
        return _decode_repaired(data, notes, first_error=exc)
    return _events_of(doc), doc, notes


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_repaired(data: bytes, notes: list[str], first_error: Exception | None = None
                     ) -> tuple[list[_Event], _Trace, list[str]]:
    fixed = _LONE_SURROGATE.sub(lambda m: m.group(1) or rb"\ufffd", data)
    try:
        doc = _TRACE_DECODER.decode(fixed)
    except msgspec.ValidationError as exc:
        return _decode_loose(fixed, str(exc), notes)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"not valid JSON ({first_error or exc})") from None
    if fixed != data:
        notes.append("trace has unpaired UTF-16 surrogate escapes; they were replaced with U+FFFD")
    return _events_of(doc), doc, notes


def _decode_loose(data: bytes, error: str, notes: list[str]) -> tuple[list[_Event], _Trace, list[str]]:
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
            events.append(_EVENT_DECODER.decode(raw))
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


def _events_of(doc: _Trace) -> list[_Event]:
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


def _cat_code(cat: str, cache: dict[str, int]) -> int:
    code = cache.get(cat)
    if code is None:
        low = cat.lower()
        code = CAT_CODE.get(CAT_ALIASES.get(low, low), 0)
        cache[cat] = code
    return code


def _columns(events: list[_Event], notes: list[str]) -> Events:
    """One pass per column with list comprehensions (C-speed loops over the Structs)."""
    counts = {"events": len(events)}
    xs = [e for e in events if e.ph == "X" and e.ts is not None and math.isfinite(e.ts)]
    counts["complete"] = len(xs)
    missing = sum(1 for e in xs if e.dur is None)
    negative = [e for e in xs if e.dur is not None and not e.dur >= 0]
    if missing:
        notes.append(f"{missing} event(s) have no 'dur'; treated as 0 us")
    if negative:
        notes.append(f"{len(negative)} event(s) with a negative or invalid 'dur' were dropped")
        xs = [e for e in xs if e.dur is None or e.dur >= 0]
    counts.update(missing_dur=missing, negative_dur=len(negative))
    mem = _memory([e for e in events if e.ph in ("i", "I") and e.name == "[memory]"], notes)
    t0 = min((e.ts for e in xs), default=0.0)
    if len(mem):
        t0 = min(t0, float(mem.ts.min())) if xs else float(mem.ts.min())
        mem.ts -= t0
    strings: dict[str, int] = {}
    threads: dict[tuple, int] = {}
    cats: dict[str, int] = {}
    n = len(xs)
    out = Events(
        strings=[],
        name=np.fromiter((strings.setdefault(e.name, len(strings)) for e in xs), np.int32, n),
        cat=np.fromiter((_cat_code(e.cat, cats) for e in xs), np.int8, n),
        thread=np.fromiter((threads.setdefault((e.pid, e.tid), len(threads)) for e in xs), np.int32, n),
        ts=np.fromiter((e.ts for e in xs), np.float64, n) - t0,
        dur=np.fromiter((e.dur or 0.0 for e in xs), np.float64, n),
        corr=np.full(n, -1, np.int64), device=np.full(n, -1, np.int32),
        stream=np.full(n, -1, np.int32), t0=t0, memory=mem, warnings=notes, counts=counts)
    out.strings = list(strings)
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


def _batch_decode(raws: list[msgspec.Raw], decoder: msgspec.json.Decoder) -> list[Any]:
    """Decode many small `args` in one call (one JSON array), several times faster than one call
    each; if any one is malformed, fall back to one by one with None for the bad ones."""
    try:
        return decoder.decode(b"[" + b",".join(bytes(r) if r else b"{}" for r in raws) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        pass
    item = msgspec.json.Decoder(decoder.type.__args__[0])
    out: list[Any] = []
    for raw in raws:
        try:
            out.append(item.decode(raw) if raw else None)
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
            out.append(None)
    return out


def _gpu_args(xs: list[_Event], out: Events, notes: list[str]) -> None:
    """Decode `args` only for device activity and runtime/driver calls (correlation, device,
    stream); a malformed `args` loses its correlation and is counted, never fatal."""
    wanted = np.flatnonzero(np.isin(out.cat, [CAT_CODE[c] for c in DEVICE_CATS + HOST_API_CATS]))
    device_side = out.is_cat(*DEVICE_CATS)
    idx = wanted.tolist()
    decoded = _batch_decode([xs[i].args for i in idx], _GPU_ARGS_LIST)
    bad = 0
    for i, a in zip(idx, decoded):
        if a is None:
            bad += xs[i].args is not None and len(xs[i].args) > 0
            continue
        if a.correlation is not None and 0 <= a.correlation < 2**62:
            out.corr[i] = a.correlation
        if device_side[i]:
            out.device[i] = _small_int(a.device, -1)
            out.stream[i] = _small_int(a.stream, _small_int(xs[i].tid, 0))
    for i in np.flatnonzero(device_side & (out.device < 0)).tolist():
        out.device[i] = _small_int(xs[i].pid, 0)
    if bad:
        notes.append(f"{bad} GPU/runtime event(s) have malformed 'args' (no correlation used)")
    out.counts["bad_args"] = int(bad)


def _memory(evs: list[_Event], notes: list[str]) -> Memory:
    decoded = _batch_decode([e.args for e in evs], _MEM_ARGS_LIST)
    rows = [(ev.ts, _nan(a.device_type), _nan(a.device_id), _nan(a.nbytes), _nan(a.allocated),
             _nan(a.reserved)) for ev, a in zip(evs, decoded)
            if a is not None and ev.ts is not None and math.isfinite(ev.ts)]
    if len(rows) < len(evs):
        notes.append(f"{len(evs) - len(rows)} [memory] event(s) without usable args were skipped")
    cols = np.array(rows, np.float64).reshape(-1, 6).T
    return Memory(*(np.ascontiguousarray(c) for c in cols))


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


# --- Input shapes of cpu_op events (record_shapes=True). Kept apart from the column pass above:
# only traces recorded with shapes pay for it (the first ops' raw `args` are probed for the key).
class _ShapeArgs(msgspec.Struct, gc=False):
    dims: Any = msgspec.field(default=None, name="Input Dims")


_SHAPE_ARGS_LIST = msgspec.json.Decoder(list[_ShapeArgs])
_SHAPE_PROBE = 64


def _op_shapes(xs: list[_Event], out: Events) -> None:
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
