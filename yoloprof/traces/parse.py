"""Kineto (torch.profiler Chrome-trace JSON) bytes -> columnar numpy arrays.

The bytes become msgspec Structs in `traces.kineto` (a slice of events at a time for large
traces); here each slice becomes columns in one pass that reads each field once (`_scan`; the
rest per column in C or numpy, see "Column building"), and the slices' columns are merged
(string, thread and shape codes renumbered to one table each). `args` are
decoded in the events' own pass, only the keys the engine reads (`kineto.GpuArgs`,
`kineto.MemArgs`), and read only where they count (device activity, runtime calls, `[memory]`
instants, the input shapes of ops).

Times stay in microseconds (Kineto writes µs even where `displayTimeUnit` says "ns"). Start times
are decoded exactly and kept relative to an integer base (`traces.exact_times`: a float64 epoch
time holds only every 0.25 µs), then shifted by the trace's first timestamp.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from typing import Any

import numpy as np

from yoloprof.errors import ProfileError
from yoloprof.traces import exact_times, fork, kineto
from yoloprof.traces.arg_columns import MEM_FIELDS, Coder, codes_of, floats, gpu_columns, memory_columns, op_shapes
from yoloprof.traces.kineto import Complete, Instant, InstantOld, check_shape, meta_of

# Normalised event categories. Old (2021) Kineto names map onto the current ones.
CATS = ("other", "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver",
        "kernel", "gpu_memcpy", "gpu_memset", "python_function", "trace")
CAT_ALIASES = {"operator": "cpu_op", "runtime": "cuda_runtime", "memcpy": "gpu_memcpy",
               "memset": "gpu_memset", "kernel": "kernel", "cuda_sync": "other",
               # other vendors' host API calls (Kineto's ActivityType names): nodes of the op tree
               "xpu_runtime": "cuda_runtime", "mtia_runtime": "cuda_runtime",
               "privateuse1_runtime": "cuda_runtime", "privateuse1_driver": "cuda_driver"}
CAT_CODE = {name: code for code, name in enumerate(CATS)}
US_PER_MS = 1000.0  # trace times are microseconds (module doc); figures are reported in ms
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
DEVICE_KINDS = ("kernel", "memcpy", "memset")  # CUPTI activity kinds, in DEVICE_CATS order
HOST_API_CATS = ("cuda_runtime", "cuda_driver")
GPU_SIDE_CATS = DEVICE_CATS + ("gpu_user_annotation",)

def cat_mask(*cats: str) -> np.ndarray:
    """Lookup table: [code] is True for the named categories (indexing an int8 column by it is
    several times faster than `np.isin`)."""
    table = np.zeros(len(CATS), bool)
    table[[CAT_CODE[c] for c in cats]] = True
    return table


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
        return cat_mask(*cats)[self.cat]

    def names_matching(self, pattern: re.Pattern[str]) -> np.ndarray:
        """Boolean mask of events whose name matches: the regex runs once per distinct name."""
        hits = np.fromiter((bool(pattern.search(s)) for s in self.strings), bool, len(self.strings))
        return hits[self.name] if len(self.strings) else np.zeros(len(self), bool)


def parse_trace_bytes(data: bytes) -> Events:
    """Decode a whole Kineto trace; raise ProfileError (one line) for anything that is not one."""
    if not data or (len(data) < 65536 and not data.strip()):
        raise ProfileError("trace is empty")
    parts, meta, notes = _chunked(data)
    if parts is None:
        events, doc, notes = kineto.decode(data)
        check_shape(doc)
        if not events:
            raise ProfileError("trace has no events")
        parts, meta = [_part(events, exact_times.base_from_bytes(data))], meta_of(doc)
        del events, doc
    out = _merge(parts, notes)
    out.meta = meta
    if not len(out) and not len(out.memory):
        raise ProfileError("trace has no events with a timestamp and duration")
    return out


# Processes that decode the slices of one large trace: this one and, on a machine with a second
# core, one forked helper (set to 1 where processes already run one trace each, as readers.ranks
# does). Both claim slices in turn (`fork.claims`), so a helper slowed later by a busy core only
# takes fewer. Forked only from a single-threaded process (`fork.may_fork`) and while a core is
# idle now (`_idle_core`): Linux schedules a session's processes as one group (autogroup), so on
# busy cores a helper adds no CPU share, only its cost (fork, pickled columns: about 25% more
# CPU on the 54 MB trace, and 0.49 s instead of 0.30 s wall at load 5, measured here).
SLICE_WORKERS = min(2, os.cpu_count() or 1)


def _may_fork() -> bool:
    return fork.may_fork(SLICE_WORKERS) and _idle_core()


def _idle_core(loadavg: str = "/proc/loadavg") -> bool:
    """True when a core is free at this moment: the kernel's count of runnable tasks (the fourth
    field of /proc/loadavg, this process included) is below the cores. Why not the 1-minute load
    average: it lags by a minute, so right after a heavy command ends an idle machine still reads
    busy (the helper was then skipped in about one run of two of `bench/bench_parse.py`). Where
    /proc/loadavg is absent, that average below the cores minus a half."""
    cores = os.cpu_count() or 1
    try:
        with open(loadavg, encoding="ascii") as fh:
            return int(fh.read().split()[3].split("/")[0]) < cores
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0] < cores - 0.5
    except OSError:
        return True


def _chunked(data: bytes) -> tuple[list[_Part] | None, dict[str, Any], list[str]]:
    """Slice by slice (large traces): each slice's Structs are freed once it is columns. With two
    workers a forked child (`traces.fork`) claims slices too (the data is shared copy-on-write;
    its columns come back pickled, a few MB)."""
    cuts = kineto.plan(data)
    if not cuts:
        return None, {}, []
    n = len(cuts) + 1
    base = exact_times.base_from_bytes(data)
    todo = fork.claims(range(n)) if n >= 4 and _may_fork() else None
    if todo is None:  # one worker or few slices: all slices here, in order
        mine = _slices_or_none(data, cuts, base, iter(range(n)))
        return (None, {}, []) if mine is None else _in_order(n, [mine])
    try:
        helper = fork.fork_call(lambda: _slices_or_none(data, cuts, base, _claimed(todo)))
        try:
            mine = _slices_or_none(data, cuts, base, _claimed(todo))
            theirs = _join_helper(helper) if helper is not None else ({}, {})
        finally:
            if helper is not None:
                helper.kill()
    finally:
        os.close(todo)
    if mine is None or theirs is None:
        return None, {}, []
    return _in_order(n, [mine, theirs])


def _claimed(fd: int) -> Iterator[int]:
    while (i := fork.claim(fd)) is not None:
        yield i


def _in_order(n: int, results: list[tuple[dict[int, _Part], dict[int, Any]]]
              ) -> tuple[list[_Part] | None, dict[str, Any], list[str]]:
    parts = {i: p for r in results for i, p in r[0].items()}
    docs = {i: d for r in results for i, d in r[1].items()}
    if len(parts) != n:
        return None, {}, []
    return [parts[i] for i in range(n)], kineto.merged_meta([docs[i] for i in sorted(docs)]), []


def _slices_or_none(data: bytes, cuts: list[tuple[int, int]], base: int, which: Iterable[int]
                    ) -> tuple[dict[int, _Part], dict[int, Any]] | None:
    """The columns (and end documents) of slices `which`, or None when one of them does not
    decode alone (the one-piece path)."""
    parts, docs = {}, {}
    try:
        for i in which:
            events, doc = kineto.decode_slice(data, cuts, i)
            parts[i] = _part(events, base)
            if doc is not None:
                docs[i] = doc
            del events
    except kineto.ChunkError:
        return None
    return parts, docs


def _join_helper(helper: fork.Forked) -> tuple[dict[int, _Part], dict[int, Any]] | None:
    """The helper's columns; None (the one-piece path) when a slice failed or the helper died."""
    try:
        return helper.join()
    except fork.ForkFailed:
        return None


# Column building. Per event, Python does only what it must (read each field once); everything
# else runs per distinct key (the name, category and thread tables), per column in C (`map`,
# `np.fromiter`, `set(map(type, ...))` type checks, `itertools.compress`) or in numpy. The slow
# paths, taken where a field has an odd type (a string device, a bool, a Decimal time, an int
# beyond 2**53), stay correct rather than fast.
#
# Why a Python loop per slice (`_scan`) and comprehensions rather than `map(attrgetter(...))`
# chains (measured on the 54 MB df_index_resolver, 4 MiB slices, CPython 3.11): a Struct field
# read inside a loop is a specialised instruction, 2-3x cheaper than `attrgetter`'s generic
# lookup, and one loop touches each event's memory once. What stays per event costs 15-50 ns a
# step (a dict lookup, a type(), numpy's conversion of one Python number), so the pass builds no
# tuple per event (a list of them also wakes the garbage collector) except the one key below.

_KEY_NAME, _KEY_CAT, _KEY_THREAD = itemgetter(0), itemgetter(1), itemgetter(2, 3)


@dataclass
class _Part:
    """The columns of one slice of events: codes index the slice's own tables (names, threads...);
    `_merge` renumbers them. Times are µs relative to the integer `base` (traces.exact_times)."""

    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    names: list[str]
    cat: np.ndarray
    thread: np.ndarray
    threads: list[tuple[Any, Any]]  # (pid, tid)
    corr: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    mem: Memory
    shape: np.ndarray | None
    shapes: list[str]
    counts: dict[str, int]
    base: int = 0


def _cat_code(cat: str) -> int:
    low = cat.lower()
    return CAT_CODE.get(CAT_ALIASES.get(low, low), 0)


def _part(events: list[Any], base: int) -> _Part:
    """The columns of one slice of decoded events; times relative to `base` (one per trace, so
    every slice's floats are the one-piece ones)."""
    counts = {"events": len(events)}
    scan = _scan(events)
    ts, dur, keep = _times(scan, counts, base)
    args, key, keys = scan.args, np.fromiter(scan.codes, np.int32, len(scan.codes)), list(scan.table)
    if keep is not None:  # some dropped: their keys leave the tables
        args = list(compress(args, keep.tolist()))
        key, keys = _kept_keys(key[keep], keys)
    name, names, cat, thread, threads = _key_codes(key, keys)
    mem = _memory(scan.instants, counts, base)
    corr, device, stream = _gpu_args(args, cat, thread, threads, counts)
    shape, shapes = _op_shapes(args, cat)
    return _Part(ts, dur, name, names, cat, thread, threads, corr, device, stream, mem, shape,
                 shapes, counts, base)


@dataclass
class _Scan:
    """What one pass over a slice's events gathers (`_scan`)."""

    args: list[Any] = field(default_factory=list)  # each X event's args
    codes: list[int] = field(default_factory=list)  # each X event's key code, into `table`
    table: Coder = field(default_factory=lambda: Coder())  # (name, cat, pid, tid) -> code
    ts: list[Any] = field(default_factory=list)
    dur: list[Any] = field(default_factory=list)
    instants: list[Instant] = field(default_factory=list)


def _scan(events: list[Any]) -> _Scan:
    """One Python loop over the events: of each complete ("X") event its key code, ts, dur and
    args, and the instants. Why a loop rather than C-level `map`s: CPython 3.11+ reads a Struct
    field inside a loop with a specialised instruction, several times faster than `attrgetter`,
    and one pass touches each event's memory once (measured on df_index_resolver: 41 ms against
    52 ms for a comprehension per column, and 75 ms for the maps). The key is one tuple per
    event and one dict lookup: the few distinct keys are split later (`_key_codes`)."""
    out = _Scan()
    args, codes, table, ts, dur, instants = out.args, out.codes, out.table, out.ts, out.dur, out.instants
    for e in events:
        kind = type(e)
        if kind is Complete:
            codes.append(table[(e.name, e.cat, e.pid, e.tid)])
            ts.append(e.ts)
            dur.append(e.dur)
            args.append(e.args)
        elif kind is Instant or kind is InstantOld:
            instants.append(e)
    return out


def _times(scan: _Scan, counts: dict[str, int], base: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """ts/dur of the "X" events with a finite `ts` and no negative `dur`, and the mask that keeps
    them (None when all are kept)."""
    n = len(scan.ts)
    ts, dur = exact_times.relative_us(scan.ts, base), floats(scan.dur, n)
    if not n or (float(dur.min()) >= 0 and math.isfinite(float(ts.min()) + float(ts.max()))):
        counts.update(complete=n, missing_dur=0, negative_dur=0)  # the usual slice: all kept as read
        return ts, dur, None
    keep = np.isfinite(ts)
    counts["complete"] = int(keep.sum())
    counts["missing_dur"] = int((keep & np.isnan(dur)).sum())
    counts["negative_dur"] = int((keep & ~np.isnan(dur) & ~(dur >= 0)).sum())
    keep &= ~(dur < 0)
    if keep.all():
        return ts, np.nan_to_num(dur, nan=0.0, posinf=np.inf), None
    return ts[keep], np.nan_to_num(dur[keep], nan=0.0, posinf=np.inf), keep


def _kept_keys(key: np.ndarray, keys: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Key codes renumbered over the kept events only (first appearance among them), and the
    keys they still use: the tables the kept events alone would have built."""
    used, first = np.unique(key, return_index=True)
    order = used[np.argsort(first, kind="stable")]
    lut = np.zeros(len(keys) or 1, np.int32)
    lut[order] = np.arange(len(order), dtype=np.int32)
    return lut[key], [keys[k] for k in order.tolist()]


def _key_codes(key: np.ndarray, keys: list[Any]
               ) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, list[Any]]:
    """(name codes, names, category codes, thread codes, threads (pid, tid)) from each event's
    key code and the distinct keys (name, cat, pid, tid) in order of first appearance: each
    table then is in order of first appearance too, and each event's codes are numpy lookups."""
    k = len(keys)
    name_of, names = codes_of(map(_KEY_NAME, keys), k)
    cat_of, cats = codes_of(map(_KEY_CAT, keys), k)
    thread_of, threads = codes_of(map(_KEY_THREAD, keys), k)
    cat_code = np.array([_cat_code(c) for c in cats] or [0], np.int8)[cat_of]
    return name_of[key], names, cat_code[key], thread_of[key], threads


def _remap(parts: list[_Part], codes: str, table: str) -> tuple[np.ndarray, list[Any]]:
    """Concatenate the parts' local codes renumbered into one table (first appearance order),
    each part's codes looked up straight into its place in the output (no copy per part)."""
    merged: dict[Any, int] = {}
    out = np.empty(sum(len(getattr(p, codes)) for p in parts), np.int32)
    at = 0
    for part in parts:
        lut = np.array([merged.setdefault(k, len(merged)) for k in getattr(part, table)] or [0], np.int32)
        local = getattr(part, codes)
        np.take(lut, local, out=out[at:at + len(local)], mode="wrap")  # -1 (no shape) as lut[-1]
        at += len(local)
    return out, list(merged)


def _merge(parts: list[_Part], notes: list[str]) -> Events:
    """One Events from the slices' columns; warnings from the summed counts. Why few temporaries:
    each whole-trace column is fresh memory (about 20 MB per million events for a float64 one),
    and the kernel's zeroing of fresh pages cost about as much as the arithmetic on them."""
    counts = {k: sum(p.counts.get(k, 0) for p in parts) for k in
              ("events", "complete", "missing_dur", "negative_dur", "bad_args", "bad_memory")}
    notes.extend(_count_notes(counts))
    counts.pop("bad_memory")
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    base = parts[0].base if parts else 0  # one integer base for all slices: exact shifts
    for p in parts:
        if p.base != base:
            p.ts, p.mem.ts, p.base = p.ts + float(p.base - base), p.mem.ts + float(p.base - base), base
    mem = _merged_memory(parts, base, notes)
    ts, dur = cat("ts"), cat("dur")
    mask = _plausible(ts, float(base), dur, notes, counts)
    # Every event plausible (the usual case): the merged columns as they are, not a copy of each.
    keep: np.ndarray | slice = slice(None) if mask is None or mask.all() else mask
    ts = ts[keep]
    t0 = float(ts.min()) if len(ts) else 0.0
    if len(mem):
        t0 = min(t0, float(mem.ts.min())) if len(ts) else float(mem.ts.min())
        mem.ts -= t0
    ts -= t0  # ts is this function's own array (a concatenation, or a masked copy of one)
    name, strings = _remap(parts, "name", "names")
    thread, _ = _remap(parts, "thread", "threads")
    out = Events(strings=strings, name=name[keep], cat=cat("cat")[keep], thread=thread[keep],
                 ts=ts, dur=dur[keep], corr=cat("corr")[keep], device=cat("device")[keep],
                 stream=cat("stream")[keep], t0=float(base) + t0, memory=mem, warnings=notes, counts=counts)
    if any(p.shape is not None for p in parts):
        for p in parts:
            if p.shape is None:
                p.shape = np.full(len(p.ts), -1, np.int32)
        shape, out.shape_strings = _remap(parts, "shape", "shapes")
        out.shape = np.where(cat("shape") >= 0, shape, -1).astype(np.int32)[keep]
    return out


def _merged_memory(parts: list[_Part], base: int, notes: list[str]) -> Memory:
    """The slices' `[memory]` rows in one Memory, without those far out in time (a [memory]
    instant far out would shift every time of the trace)."""
    mem = Memory(*(np.concatenate([getattr(p.mem, f) for p in parts]) for f in ("ts",) + MEM_FIELDS))
    if _all_near(mem.ts, float(base)):
        return mem
    mem_far = ~(np.abs(mem.ts + float(base)) <= MAX_ABS_US)
    if mem_far.any():
        notes.append(f"{int(mem_far.sum())} [memory] event(s) with a timestamp beyond {MAX_ABS_US:.3g} us "
                     "were dropped")
        mem = Memory(*(getattr(mem, f)[~mem_far] for f in ("ts",) + MEM_FIELDS))
    return mem


# Bounds on the times a trace can hold (microseconds). Beyond MAX_ABS_US a float64 no longer holds
# every microsecond and nanosecond integers overflow int64 in later arithmetic; a duration longer
# than the trace (the span of all start times, doubled, and at least MAX_DUR_SLACK_US beyond it)
# is a corrupt value, not a measurement: summed, it would turn every figure into nonsense.
MAX_ABS_US = float(2**53)
MAX_DUR_SLACK_US = 60e6


def _all_near(ts: np.ndarray, base: float) -> bool:
    """Whether every |ts + base| <= MAX_ABS_US, from the extremes alone: float rounding is
    monotonic, so the largest and smallest ts + base are the rounded sums of the extremes (and
    a NaN extreme fails the test, sending the caller to its element-wise check)."""
    if not len(ts):
        return True
    lo, hi = float(ts.min()) + base, float(ts.max()) + base
    return abs(lo) <= MAX_ABS_US and abs(hi) <= MAX_ABS_US


def _plausible(rel: np.ndarray, base: float, dur: np.ndarray, notes: list[str], counts: dict[str, int]
               ) -> np.ndarray | None:
    """Mask of events whose start (rel + base) and duration a trace can hold, None when all
    can (decided from the extremes, without a temporary column); the others are counted in a
    warning that gives the largest offending value (never a silent overflow)."""
    if _all_near(rel, base):
        span = float(float(rel.max()) + base - (float(rel.min()) + base)) if len(rel) else 0.0
        limit = span + max(span, MAX_DUR_SLACK_US)
        if not len(dur) or (not float(dur.max()) > limit and float(dur.min()) > -math.inf):
            counts.update(far_ts=0, overlong_dur=0)
            return None
    ts = rel + base
    with np.errstate(invalid="ignore", over="ignore"):
        far = ~(np.abs(ts) <= MAX_ABS_US)
        starts = ts[~far]
        span = float(starts.max() - starts.min()) if len(starts) else 0.0
        limit = span + max(span, MAX_DUR_SLACK_US)
        long_ = ~far & (np.isinf(dur) | (dur > limit))
    if far.any():
        notes.append(f"{int(far.sum())} event(s) with a timestamp beyond {MAX_ABS_US:.3g} us were dropped "
                     f"(largest {float(np.abs(ts[far]).max()):.3g} us)")
    if long_.any():
        notes.append(f"{int(long_.sum())} event(s) lasting longer than the trace were dropped (largest "
                     f"'dur' {float(dur[long_].max()):.3g} us; the trace's start times span {span:.3g} us)")
    counts.update(far_ts=int(far.sum()), overlong_dur=int(long_.sum()))
    return ~(far | long_)


def _count_notes(counts: dict[str, int]) -> list[str]:
    notes = []
    if counts["missing_dur"]:
        notes.append(f"{counts['missing_dur']} event(s) have no 'dur'; treated as 0 us")
    if counts["negative_dur"]:
        notes.append(f"{counts['negative_dur']} event(s) with a negative or invalid 'dur' were dropped")
    if counts["bad_memory"]:
        notes.append(f"{counts['bad_memory']} [memory] event(s) without usable args were skipped")
    if counts["bad_args"]:
        notes.append(f"{counts['bad_args']} GPU/runtime event(s) have malformed 'args' (no correlation used)")
    return notes


# --- args: read by traces.arg_columns, for the events of the categories that carry them.
_ARGS_READ = cat_mask(*DEVICE_CATS, *HOST_API_CATS)  # categories whose args are read
_DEVICE_SIDE = cat_mask(*DEVICE_CATS)


def _gpu_args(all_args: list[Any], cat: np.ndarray, thread: np.ndarray, threads: list[Any],
              counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correlation, device, stream) columns (`arg_columns.gpu_columns`)."""
    return gpu_columns(all_args, _ARGS_READ[cat], _DEVICE_SIDE[cat], thread, threads, counts)


def _memory(instants: list[Instant], counts: dict[str, int], base: int) -> Memory:
    """`[memory]` instants (`arg_columns.memory_columns`)."""
    ts, cols = memory_columns(instants, counts, base)
    return Memory(ts, *cols)


def _op_shapes(all_args: list[Any], cat: np.ndarray) -> tuple[np.ndarray | None, list[str]]:
    """Input shapes of the cpu_op events (`arg_columns.op_shapes`)."""
    return op_shapes(all_args, cat == CAT_CODE["cpu_op"])
