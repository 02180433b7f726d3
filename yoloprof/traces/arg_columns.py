"""The `args` of Kineto events -> columns: correlations, device ids and streams of device
activity and runtime calls, the allocator figures of `[memory]` instants, the input shapes of ops
(record_shapes). Part of the column pass of `traces.parse` (`_part` calls these per slice).

Each `args` may hold any JSON value (`kineto.GpuArgs`, `kineto.MemArgs`): a value of the type a
well-formed trace writes is read, anything else is counted and takes the documented fallback,
never fails the slice. Fast path: every value of a column a plain int (or null), read by one
C-level pass; otherwise the checked path reads field by field, event by event where it must.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from yoloprof.traces import exact_times
from yoloprof.traces.kineto import NO_GPU_ARGS, GpuArgs, Instant, MemArgs

_CORR, _DEVICE, _STREAM = map(attrgetter, ("correlation", "device", "stream"))
_NONE = type(None)
_INT_OR_NONE = frozenset((int, _NONE))
_EXACT_IN_FLOAT = 2.0**53  # every integer of smaller magnitude is exact in a float64
_GPU_ARG_TYPES: dict[str, set[type]] = {"correlation": {int, _NONE}, "device": {int, str, _NONE}, "stream": {int, str, _NONE}}
_MEM_ARG_TYPES: dict[str, set[type]] = {"device_type": {int, _NONE}, "device_id": {int, _NONE}, "nbytes": {int, float, _NONE},
                  "allocated": {int, float, _NONE}, "reserved": {int, float, _NONE}}
MEM_FIELDS = tuple(_MEM_ARG_TYPES)  # Memory's columns after ts, in MemArgs order


class Coder(dict[Any, int]):
    """key -> its code, the next integer at a key's first lookup (`__missing__`, once per distinct
    key). Why not `setdefault(key, next position)`: a hit is then a plain C-level lookup that
    returns a small int (cached by Python below 257), with no position to renumber."""

    def __missing__(self, key: Any) -> int:
        self[key] = code = len(self)
        return code


def codes_of(keys: Iterable[Any], n: int) -> tuple[np.ndarray, list[Any]]:
    """Integer code of each of the n keys (first appearance = 0, 1, ...) and the distinct keys in
    that order, in one C-level pass."""
    table = Coder()
    return np.fromiter(map(table.__getitem__, keys), np.int32, n), list(table)


def floats(values: Iterable[Any], n: int) -> np.ndarray:
    """float64 column; None (JSON null) becomes NaN."""
    return np.fromiter(values, np.float64, n)


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


def _well_typed(args: list[Any], struct: type, types: dict[str, set[type]]) -> np.ndarray | None:
    """Mask of the `args` that are `struct`s whose fields have the types a well-formed trace
    writes (a JSON bool is not an int); None when all are. Python runs per event only when some
    field is odd: the check is one C-level pass over the types per field."""
    if set(map(type, args)) <= {struct} and all(set(map(type, map(attrgetter(f), args))) <= allowed
                                                for f, allowed in types.items()):
        return None

    def ok(a: Any) -> bool:
        return type(a) is struct and all(type(getattr(a, f)) in allowed for f, allowed in types.items())

    return np.fromiter(map(ok, args), bool, len(args))


def gpu_columns(all_args: list[Any], read: np.ndarray, device_side: np.ndarray, thread: np.ndarray,
                threads: list[Any], counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correlation, device, stream) columns, read from `args` only for device activity and
    runtime/driver calls; a malformed `args` (not an object, or a key of another type) loses its
    correlation and is counted, never fatal. A device event without a usable device id takes its
    pid, without a stream its tid (both read once per thread: `_thread_ints`)."""
    n = len(all_args)
    corr, device, stream = np.full(n, -1, np.int64), np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    wanted = np.flatnonzero(read)
    args = list(compress(all_args, read.tolist()))
    dev = np.flatnonzero(device_side[wanted])
    values = _plain_gpu_values(args, dev)
    if values is None:  # some value is odd (a string device, a bool, a huge int): the checked path
        _checked_gpu_args(args, wanted, device_side, (thread, threads), (corr, device, stream), counts)
        return corr, device, stream
    counts["bad_args"] = 0
    corr[wanted] = _in_range(values[0], -1, 2**62, -1)
    on_device = wanted[dev]
    device[on_device] = _in_range(values[1], -2**31, 2**31, -1)
    stream[on_device] = _in_range(values[2], -2**31, 2**31, _thread_ints(thread[on_device], threads, 1))
    no_device = on_device[device[on_device] < 0]
    device[no_device] = _thread_ints(thread[no_device], threads, 0)
    return corr, device, stream


def _plain_gpu_values(args: list[Any], dev: np.ndarray) -> list[np.ndarray] | None:
    """The correlation of every args, the device and stream of the device events' (`dev`), as
    `_plain_ints`; None when some args is not an object or some value is not plain."""
    try:  # an args that is not an object (a list, a string, a number, null) has no such attribute
        dev_args = [args[i] for i in dev.tolist()]
        columns = ([a.correlation for a in args], [a.device for a in dev_args], [a.stream for a in dev_args])
    except AttributeError:
        return None
    values = []
    for column in columns:
        if (plain := _plain_ints(column)) is None:
            return None
        values.append(plain)
    return values


def _plain_ints(column: list[Any]) -> np.ndarray | None:
    """The values as int64 (all ints) or float64 (ints and nulls -> NaN), or None unless all are
    ints (below 2**53 in magnitude where there are nulls, so that each float is exact) or nulls.
    Why floats: one C-level pass takes the ints and the nulls together."""
    kinds = set(map(type, column))
    try:
        if kinds <= {int}:
            return np.fromiter(column, np.int64, len(column))
        if kinds <= _INT_OR_NONE:
            values = np.fromiter(column, np.float64, len(column))
            return None if (np.abs(values) >= _EXACT_IN_FLOAT).any() else values
    except OverflowError:  # an int beyond int64 / float: the checked path
        pass
    return None


def _in_range(values: np.ndarray, lo: int, hi: int, fallback: Any) -> np.ndarray:
    """int64 of the exact `values` (int64, or float64 with NaN for null) strictly inside (lo, hi),
    `fallback` elsewhere (NaN too): `_int_column`'s rule for plain ints and nulls."""
    ok = (values > lo) & (values < hi)
    return np.where(ok, np.where(ok, values, 0).astype(np.int64), fallback)


def _thread_ints(thread: np.ndarray, threads: list[Any], which: int) -> np.ndarray:
    """Each event's pid (which=0) or tid (1) read by `_int_column` (0 when not a usable number),
    once per thread present: `_int_column` of the same set of values gives the same numbers."""
    present = np.flatnonzero(np.bincount(thread, minlength=len(threads)))
    values = [threads[t][which] for t in present.tolist()]
    lut = np.zeros(len(threads) or 1, np.int64)
    lut[present] = _int_column(values, np.zeros(len(values), np.int64))
    return lut[thread]


def _checked_gpu_args(args: list[Any], wanted: np.ndarray, device_side: np.ndarray,
                      threads_of: tuple[np.ndarray, list[Any]],
                      out: tuple[np.ndarray, np.ndarray, np.ndarray], counts: dict[str, int]) -> None:
    """`_gpu_args` where some value is odd: each field's types checked, per event where needed."""
    corr, device, stream = out
    thread, threads = threads_of
    ok = _well_typed(args, GpuArgs, _GPU_ARG_TYPES)
    counts["bad_args"] = 0 if ok is None else int(len(ok) - ok.sum())
    if ok is not None:  # a malformed args is read as an absent one: every fallback below applies
        args = [a if good else NO_GPU_ARGS for a, good in zip(args, ok.tolist())]
    corr[wanted] = _int_column(list(map(_CORR, args)), np.full(len(wanted), -1), -1, 2**62)
    dev = np.flatnonzero(device_side[wanted])
    dev_args = list(map(args.__getitem__, dev.tolist()))
    tids = [threads[t][1] for t in thread[wanted[dev]].tolist()]
    device[wanted[dev]] = _int_column(list(map(_DEVICE, dev_args)), np.full(len(dev), -1))
    stream[wanted[dev]] = _int_column(list(map(_STREAM, dev_args)), _int_column(tids, np.zeros(len(dev), np.int64)))
    no_device = np.flatnonzero(device_side & (device < 0))
    pids = [threads[t][0] for t in thread[no_device].tolist()]
    device[no_device] = _int_column(pids, np.zeros(len(no_device), np.int64))


def memory_columns(instants: list[Instant], counts: dict[str, int], base: int
                   ) -> tuple[np.ndarray, list[np.ndarray]]:
    """`[memory]` instants; one without usable args (absent, malformed, no finite ts) is skipped.
    Each figure is read in one loop (as `_scan`), its types checked with one C-level pass per
    column (a float is fine where an int is; a bool, a string or a float device id is not)."""
    stamps, args = [], []
    for e in instants:
        if e.name == "[memory]":
            stamps.append(e.ts)
            args.append(e.args)
    ts = exact_times.relative_us(stamps, base)
    ok = np.isfinite(ts)
    values = _mem_values(args)
    if values is None:  # some args is not an object: per event
        typed = _well_typed(args, MemArgs, _MEM_ARG_TYPES)
        if typed is not None:
            ok &= typed
        values = [[getattr(a, f, None) for a in args] for f in MEM_FIELDS]
    else:
        for column, allowed in zip(values, _MEM_ARG_TYPES.values()):
            if not set(map(type, column)) <= allowed:
                ok &= np.fromiter(map(allowed.__contains__, map(type, column)), bool, len(column))
    counts["bad_memory"] = int(len(ok) - ok.sum())
    if counts["bad_memory"]:  # dropped before numpy reads them (a string figure would raise)
        keep = ok.tolist()
        values, ts = [list(compress(c, keep)) for c in values], ts[ok]
    return ts, [floats(c, len(c)) for c in values]


def _mem_values(args: list[Any]) -> list[list[Any]] | None:
    """The five figures of each MemArgs, a list per field (MemArgs order); None when some args
    is not a MemArgs."""
    values: list[list[Any]] = [[], [], [], [], []]
    kind, device, nbytes, allocated, reserved = values
    try:  # an args that is not an object (a list, a string, a number, null) has no such attribute
        for a in args:
            kind.append(a.device_type)
            device.append(a.device_id)
            nbytes.append(a.nbytes)
            allocated.append(a.allocated)
            reserved.append(a.reserved)
    except AttributeError:
        return None
    return values


# --- Input shapes of cpu_op events (record_shapes=True). Kept apart from the column pass above:
# only traces recorded with shapes pay for it (the first ops' raw `args` are probed for the key).
_SHAPE_PROBE = 64
_DIMS = attrgetter("dims")


def op_shapes(all_args: list[Any], is_op: np.ndarray) -> tuple[np.ndarray | None, list[str]]:
    """Code of each op's input dims, spelled as torch does ("[[64, 32], []]"), -1 for none; None
    when the slice's first ops have no "Input Dims" (recorded without record_shapes). The raw
    texts are grouped first (C-level, as the other codes), and only each distinct text is decoded
    and spelled: a trace repeats a few hundred shapes over tens of thousands of ops."""
    ops = np.flatnonzero(is_op)
    if not any(len(getattr(all_args[i], "dims", b"")) for i in ops[:_SHAPE_PROBE].tolist()):
        return None, []
    args = list(map(all_args.__getitem__, ops.tolist()))
    if set(map(type, args)) <= {GpuArgs}:
        raws = list(map(bytes, map(_DIMS, args)))
    else:  # some op's args were not an object
        raws = [bytes(getattr(a, "dims", b"")) for a in args]
    raw_code, distinct = codes_of(raws, len(raws))
    texts: dict[str, int] = {}
    lut = np.full(len(distinct), -1, np.int32)
    for k, raw in enumerate(distinct):
        dims = _decode_or_none(raw)
        if isinstance(dims, list):
            text = str(dims)  # torch's own spelling: key_averages(group_by_input_shape=True)
            lut[k] = texts.setdefault(text, len(texts))
    shape = np.full(len(all_args), -1, np.int32)
    shape[ops] = lut[raw_code]
    return shape, list(texts)


def _decode_or_none(raw: bytes) -> Any:
    """The JSON value, or None for an empty or malformed text."""
    try:
        return msgspec.json.decode(raw) if raw else None
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
