"""The trace analysis engine: one Kineto trace -> per-step tables (a `TraceAnalysis`).

A trace is one trial: every figure is a mean over the analysed steps, and `profile_sections`
turns those means into the profile sections (metrics, phases, categories, kernels, ops, ...)
shared by capture (its own trace) and the readers (anyone's trace). Everything is vectorised
over events with numpy; Python loops only run over distinct names, steps and phase spans.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from yoloprof.defs.metrics import BYTES_PER_MIB
from yoloprof.metrics.categories import CATEGORIES, classify, is_tensorcore
from yoloprof.traces import fork, parse
from yoloprof.traces.correlate import Join, join
from yoloprof.traces.grouping import distinct, grouped_rows
from yoloprof.traces.grouping import per_step as _per_step
from yoloprof.traces.grouping import per_step_label as _per_step_label
from yoloprof.traces.intervals import SortedUnion, overlap_by_label, sorted_union, union_without_each
from yoloprof.traces.op_rows import op_rows_of
from yoloprof.traces.op_table import memory_inclusive, op_nesting, tree_events, with_memory
from yoloprof.traces.parse import CAT_CODE, DEVICE_KINDS, HOST_API_CATS, US_PER_MS, Events, parse_trace_bytes
from yoloprof.traces.phase_timeline import Timeline, build_timeline
from yoloprof.traces.profiler_steps import Steps, find_steps, step_of
from yoloprof.traces.step_selection import steady_steps


OVERVIEW_NOT_READ = ("read only when the whole trace is parsed at once (not for a trace streamed "
                     "in bounded memory or read from the cache); `summary --per-step` gives it")


@dataclass
class TraceAnalysis:
    """Per-step arrays (rows = steps) and grouped tables; times in µs unless named `_ms`."""

    source: str
    meta: dict[str, Any]
    steps: Steps
    phase_names: list[str]
    gpu_expected: bool
    has_device: bool
    n_devices: int
    step_wall: np.ndarray
    phase_wall: np.ndarray
    phase_kernels: np.ndarray
    phase_ops: np.ndarray
    launches: np.ndarray
    launch_us: np.ndarray
    sync_us: np.ndarray
    malloc_calls: np.ndarray
    busy: np.ndarray | None = None
    phase_dev: np.ndarray | None = None
    cat_us: np.ndarray | None = None
    kernels: np.ndarray | None = None
    device_tail_us: float = 0.0
    kernel_us_total: float = 0.0
    tensorcore_us_total: float = 0.0
    orphans_in_steps: int = 0
    kernel_rows: list[dict[str, Any]] = field(default_factory=list)
    op_rows: list[dict[str, Any]] = field(default_factory=list)
    op_shape_rows: list[dict[str, Any]] = field(default_factory=list)
    window_us: float = 0.0
    devices: list[dict[str, Any]] = field(default_factory=list)
    kind_us: np.ndarray | None = None
    cat_saving_us: np.ndarray | None = None
    alloc_calls: np.ndarray | None = None
    memory: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # torch-tb-profiler's overview per device over the analysed steps (`gpu_utilisation.
    # steps_overview`: gpu_util, sm_efficiency, occupancy_pct and their *_na reasons); None when
    # the kernels' args were not read (`with_overview`), and why
    overview: list[dict[str, Any]] | None = None
    overview_na: str = OVERVIEW_NOT_READ
    t0_us: float | None = None  # the first event's `ts` as written (µs; `parse.Events.t0`)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def device_util_pct(self) -> float | None:
        """Mean over devices of (union of the device's intervals launched in the analysed steps)
        / (the analysed window, `_device_window`: from the later of the first step's start and the
        end of the device work launched before it, to the later of the last step's end and the
        end of the steps' work). The window holds every interval, so this is <= 100 by construction: a
        figure above 100 is a bug, reported by `_check`, never clipped."""
        if self.busy is None or self.window_us <= 0:
            return None
        return 100.0 * float(self.busy.sum()) / self.window_us

    def profile_sections(self, steps_hint: int | None = None) -> dict[str, Any]:
        from yoloprof.traces.sections import build_sections

        return build_sections(self, steps_hint)


_KIND_OF_CAT = {CAT_CODE["kernel"]: 0, CAT_CODE["gpu_memcpy"]: 1, CAT_CODE["gpu_memset"]: 2}
_KIND_LUT = np.full(max(CAT_CODE.values()) + 1, -1, np.int64)  # category code -> kind, by lookup
_KIND_LUT[list(_KIND_OF_CAT)] = list(_KIND_OF_CAT.values())


def _device_window(steps: Steps, start: np.ndarray, end: np.ndarray, prior_end: float) -> tuple[float, float]:
    """The analysed window on the device clock (docs/readers.md "Analysed window"): from the later
    of the first step's start and the end of the device work launched before it (`prior_end`),
    to the later of the last step's end and the end of the work launched in the steps.

    Why: a kernel belongs to the step its launch is in, and a GPU that lags the CPU runs step N's
    kernels during step N+1's CPU span; the device's time for a window of steps then starts when
    it is done with the work of the steps before (the plugin's `_update_steps_duration` widens
    its steps the same way). Counting from the first step's CPU start instead credits the
    earlier steps' tail as idle time: rank-0.Apr steps 103-105 read 75.3% for a device busy
    94.4 of every 95.5 ms. The window still holds every interval of the steps' work (a skewed
    clock or a concurrent stream may start one a hair earlier), so utilisation stays <= 100%."""
    lo = min(max(float(steps.start[0]), prior_end), float(start.min(initial=np.inf)))
    hi = max(float(steps.end[-1]), float(end.max(initial=-np.inf)), lo)
    return lo, hi


def _prior_end(ev: Events, j: Join, launched: np.ndarray, first_start: float) -> float:
    """End of the device work launched before `first_start` (-inf when none): `launched` is each
    device event's launch time (an orphan's own start)."""
    d = j.device_idx[launched < first_start]
    return float((ev.ts[d] + ev.dur[d]).max(initial=-np.inf))


def _category_saving(start: np.ndarray, end: np.ndarray, dev: np.ndarray, cats: np.ndarray,
                     n_dev: int, contrib: np.ndarray, prepared: SortedUnion | None) -> np.ndarray:
    """Per category, union of all device work minus the union without that category (µs, mean
    over devices): what the device clock would lose if the category vanished, overlap included.
    `contrib`: `exclusive_contributions(start, end, dev)`, already computed by the caller from
    `prepared` (`sorted_union`)."""
    total = contrib.sum()
    out = np.zeros(len(CATEGORIES))
    present = np.unique(cats, return_counts=True)[0].tolist()  # counts: skips importing numpy.ma
    for c, rest_union in union_without_each(start, end, dev, cats, present, prepared).items():
        out[c] = total - rest_union
    return out / n_dev


def _device_part(ev: Events, j: Join, steps: Steps, tl: Timeline, host_step: np.ndarray,
                 out: TraceAnalysis) -> None:
    """Busy time: ONE union per device over the analysed window, each instant credited once, to
    the step (and phase) whose launch started the interval that first covers it. Categories,
    activity kinds and the kernel table are plain sums of durations. `host_step`: the step of
    every event (`step_of(ev.ts)`): a launch time is its launch event's ts (an orphan's, its own)."""
    S, P = len(steps), len(tl.names)
    when = j.launch_event
    prior_end = _prior_end(ev, j, ev.ts[when], float(steps.start[0]))
    step = host_step[when]
    keep = np.flatnonzero(step >= 0)
    d, step, when = j.device_idx[keep], step[keep], when[keep]
    out.orphans_in_steps = int((j.orphan[keep] & (ev.cat[d] == CAT_CODE["kernel"])).sum())
    phase = tl.phase_at(ev.ts[when])
    del when
    start, dur = ev.ts[d], ev.dur[d]
    end = start + dur
    devices, dev_code = distinct(ev.device[d])
    n_dev = out.n_devices = max(len(devices), 1)
    prepared = sorted_union(start, end, dev_code)  # one union per device, all steps
    contrib = prepared.contributions() if prepared is not None else np.zeros(0)
    out.busy = _per_step(step, S, contrib) / n_dev
    lo, hi = _device_window(steps, start, end, prior_end)
    out.window_us = hi - lo
    out.device_tail_us = max(0.0, hi - float(steps.end[-1]))
    per_dev = np.bincount(dev_code, weights=contrib, minlength=len(devices))
    out.devices = [{"device": int(dv), "busy_us": float(b), "util_pct": 100.0 * float(b) / out.window_us
                    if out.window_us > 0 else None} for dv, b in zip(devices.tolist(), per_dev.tolist())]
    out.phase_dev = _per_step_label(step, phase, S, P, contrib) / n_dev
    # Classified: the names of device activity only (host op and runtime names never are).
    used = np.flatnonzero(np.bincount(ev.name[d], minlength=len(ev.strings))).tolist()  # no numpy.ma import
    name_cat, name_tc = np.zeros(len(ev.strings), np.int64), np.zeros(len(ev.strings), bool)
    name_cat[used] = [CATEGORIES.index(classify(ev.strings[i])) for i in used]
    name_tc[used] = [is_tensorcore(ev.strings[i]) for i in used]
    cats = name_cat[ev.name[d]]
    out.cat_us = _per_step_label(step, cats, S, len(CATEGORIES), dur)
    out.cat_saving_us = _category_saving(start, end, dev_code, cats, n_dev, contrib, prepared) / S
    kind = _KIND_LUT[ev.cat[d]]
    out.kind_us = _per_step_label(step, kind, S, len(DEVICE_KINDS), dur)
    is_kernel = kind == 0
    out.kernels = _per_step(np.where(is_kernel, step, -1), S)
    out.phase_kernels = _per_step_label(np.where(is_kernel, step, -1), phase, S, P)
    out.kernel_us_total = float(dur[is_kernel].sum())
    out.tensorcore_us_total = float(dur[is_kernel & name_tc[ev.name[d]]].sum())
    key = ev.name[d].astype(np.int64) * len(DEVICE_KINDS) + kind
    for code, ph, sums, count in grouped_rows(key, phase, P, {"us": dur}):
        out.kernel_rows.append({"name": ev.strings[code // len(DEVICE_KINDS)], "phase": tl.names[ph],
                                "kind": DEVICE_KINDS[code % len(DEVICE_KINDS)],
                                "us": sums["us"], "count": count})


# Events from which the op tree's nesting (`op_table.op_nesting`: the costliest share of the op
# rows, half the analysis of a large trace) is computed by a forked helper while this process
# analyses the rest (`fork.Soon`); it comes back through the shared file (`traces.fork`: kept,
# self time and the kept children's parents, about 25 bytes per tree node, mapped, not copied).
# Memory: the helper maps this process's pages (trimmed first: `fork.trim_heap`) and adds its
# own working set, at most TREE_HELPER_BYTES_PER_EVENT per event (107 measured on
# df_index_resolver x20 when the helper also built the table's memory columns and grouped the
# rows, which it no longer does: an upper bound); it is forked only while the system has twice
# that available, else the nesting is computed here after the rest (the same figures; slower,
# and the process tree's summed RSS lower).
PARALLEL_TREE_EVENTS = 1 << 20
TREE_HELPER_BYTES_PER_EVENT = 128


def _room_for_helper(n_events: int) -> bool:
    free = fork.available_bytes()
    return free is None or free >= 2 * TREE_HELPER_BYTES_PER_EVENT * n_events


def _host_part(ev: Events, j: Join, steps: Steps, tl: Timeline, host_step: np.ndarray,
               out: TraceAnalysis) -> None:
    """Launch counts, enqueue and sync time, cudaMalloc/cudaFree calls and phase walls (ops per
    phase come with the op rows: `op_rows.op_rows_of`). `host_step`: `step_of(ev.ts, steps)`."""
    S = len(steps)
    in_steps = host_step >= 0

    def count(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        # The events of `mask` in steps, in event order: the same sums as a bincount over all
        # events with the others' step set to -1 and left out (`_per_step`).
        sel = np.flatnonzero(mask & in_steps)
        return np.bincount(host_step[sel], weights=None if weights is None else weights[sel],
                           minlength=S)[:S].astype(np.float64)

    out.launches = count(j.launch_mask)
    out.launch_us = count(j.launch_mask, ev.dur)
    out.sync_us = count(j.sync_mask, ev.dur)
    out.malloc_calls = count(j.malloc_mask)
    walls = _phase_walls(steps, tl)
    walls[:, tl.other] = np.maximum(out.step_wall - walls.sum(axis=1), 0.0)
    out.phase_wall = walls


def _phase_walls(steps: Steps, tl: Timeline) -> np.ndarray:
    """Per step and phase, the time of the step covered by the phase's segments: per step,
    `overlap_by_label` over the segments that overlap it only (segments are disjoint and sorted,
    so those are one range of them; the others cover nothing and add +0.0 to no sum's value)."""
    S, P = len(steps), len(tl.names)
    if not len(tl.start):  # no phase segments: every step's wall is "other" (set by the caller);
        return np.zeros((S, P))  # float, as the bincount below: an int array cut it to whole µs
    first = np.searchsorted(tl.end, steps.start, side="right")  # the first segment ending after
    stop = np.maximum(np.searchsorted(tl.start, steps.end, side="left"), first)
    if not (bool((tl.start[1:] >= tl.end[:-1]).all()) and bool((tl.end >= tl.start).all())):
        return np.array([overlap_by_label(tl.start, tl.end, tl.label, lo, hi, P)  # not disjoint
                         for lo, hi in zip(steps.start.tolist(), steps.end.tolist())]).reshape(S, P)
    counts = stop - first
    which = np.repeat(np.arange(S), counts)
    seg = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    covered = np.clip(np.minimum(tl.end[seg], steps.end[which]) - np.maximum(tl.start[seg], steps.start[which]),
                      0.0, None)
    return np.bincount(which * P + tl.label[seg], weights=covered, minlength=S * P).reshape(S, P)


def _memory_part(ev: Events, steps: Steps, out: TraceAnalysis) -> None:
    """Allocator calls per step and peaks per device from `[memory]` events (profile_memory)."""
    mem = ev.memory
    if not len(mem):
        return
    calls = (mem.nbytes != 0) & np.isfinite(mem.nbytes)
    out.alloc_calls = _per_step(np.where(calls, step_of(mem.ts, steps), -1), len(steps))
    dtypes = np.nan_to_num(mem.device_type, nan=-1).astype(np.int64)
    dids = np.nan_to_num(mem.device_id, nan=-1).astype(np.int64)
    distinct = lambda a: np.unique(a, return_counts=True)[0].tolist()  # noqa: E731 (counts: no numpy.ma)
    pairs = [(dt, di) for dt in distinct(dtypes) for di in distinct(dids[dtypes == dt])]  # sorted
    for dtype, did in pairs:
        sel = (dtypes == dtype) & (dids == did)
        out.memory.append({
            "device": "cpu" if dtype == 0 else f"device{did}" if dtype != 1 else f"cuda:{did}",
            "device_type": dtype, "device_id": did,
            "peak_allocated_mb": float(np.nanmax(mem.allocated[sel], initial=0.0)) / BYTES_PER_MIB,
            "live_at_start_mb": _live_at_start(mem, sel),
            "peak_reserved_mb": float(np.nanmax(mem.reserved[sel], initial=0.0)) / BYTES_PER_MIB,
            "alloc_calls": int((sel & calls).sum())})


def _live_at_start(mem: Any, sel: np.ndarray) -> float | None:
    """MiB the allocator counted as allocated just before the window's first `[memory]` event of
    a device: that event's "Total Allocated" minus its own bytes. On CUDA the caching allocator
    counts every live block, so this is what was alive when the window opened (weights,
    optimizer state); torch's CPU reporter counts only tensors allocated while the profiler runs,
    so on the CPU it is ~0 and says nothing about older tensors (docs/readers.md)."""
    idx = np.flatnonzero(sel)
    if not len(idx):
        return None
    first = idx[np.argmin(mem.ts[idx])]
    live = float(mem.allocated[first]) - float(np.nan_to_num(mem.nbytes[first]))
    return live / BYTES_PER_MIB if np.isfinite(live) else None


def _check(ev: Events, j: Join, host_step: np.ndarray, out: TraceAnalysis) -> list[str]:
    notes: list[str] = []
    if out.gpu_expected and not out.has_device:
        notes.append("the trace records GPU devices or CUDA/HIP runtime calls but no kernels: "
                     "CUPTI/roctracer did not attach, so device figures are unknown")
    n_orphans = int(j.orphan.sum())
    if n_orphans:
        notes.append(f"{n_orphans} device event(s) have no launch event in the trace (launched before "
                     f"the profiler started?); {out.orphans_in_steps} kernel(s) of them were placed "
                     "in steps by their own GPU start time")
    if out.busy is not None and out.n_steps and out.busy.mean() > out.step_wall.mean() * 1.001:
        notes.append(f"the device work launched per step ({out.busy.mean() / US_PER_MS:.1f} ms busy) exceeds the "
                     f"step's wall time ({out.step_wall.mean() / US_PER_MS:.1f} ms): the host runs ahead and the "
                     f"device queue grows ({out.device_tail_us / US_PER_MS:.1f} ms of device work after the last "
                     "step); a steady-state step takes at least the busy time")
    util = out.device_util_pct
    if util is not None and util > 100.0 + 1e-9:
        notes.append(f"BUG: device utilisation computes to {util:.3f}% (> 100%); please report it")
    late = j.launches_without_work
    late = late[host_step[late] >= 0] if len(late) else late
    if len(late):
        notes.append(f"{len(late)} kernel launch(es) in the analysed steps have no kernel in the trace "
                     "(the trace window ended before the GPU ran them?)")
    return notes


def analyze_events(ev: Events, source: str, select: Any = None, steady: bool = False) -> TraceAnalysis:
    """`select`: a `traces.step_selection.StepSelection` (the steps analysed), or None for all;
    `steady` (readers of a trace, without a selection): the leading warm-up steps left out
    (`step_selection.steady_steps`). A capture's own trace has had its warm-up already.

    Two cores: once the steps and the phase timeline are known (a few cheap passes), a forked
    helper computes the op tree's nesting and self times (`op_table.op_nesting`, the costliest
    share of the op rows) while this process computes everything else and the ops' inclusive
    memory, then groups the op rows from both (`op_rows.op_rows_of`); the same functions on the
    same data, so the same figures whichever process computes them."""
    steps = find_steps(ev)
    if select:
        steps = select.apply(steps)
    elif steady:
        steps = steady_steps(steps)
    tl = build_timeline(ev)
    parallel = len(ev) >= PARALLEL_TREE_EVENTS and parse._may_fork() and _room_for_helper(len(ev))
    if parallel:
        fork.trim_heap()  # the slices' freed columns: not mapped into the helper (`fork.trim_heap`)
    tree = tree_events(ev)  # the op tree's nodes: the helper's and this process's
    nesting = fork.Soon(lambda: op_nesting(ev, tree), parallel)
    try:
        return _analyze(ev, source, steps, tl, tree, nesting)
    finally:
        nesting.cancel()


def _analyze(ev: Events, source: str, steps: Steps, tl: Timeline, tree: np.ndarray, nesting: fork.Soon
             ) -> TraceAnalysis:
    j = join(ev)
    props = ev.meta.get("deviceProperties")
    out = TraceAnalysis(
        source=source, meta=ev.meta, steps=steps, phase_names=tl.names,
        gpu_expected=bool(props) or bool(ev.is_cat(*HOST_API_CATS).any()),
        has_device=len(j.device_idx) > 0, n_devices=0, step_wall=steps.wall,
        phase_wall=np.zeros(0), phase_kernels=np.zeros((len(steps), len(tl.names))),
        phase_ops=np.zeros(0), launches=np.zeros(0), launch_us=np.zeros(0), sync_us=np.zeros(0),
        malloc_calls=np.zeros(0), t0_us=ev.t0)
    host_step = step_of(ev.ts, steps)
    if out.has_device:
        _device_part(ev, j, steps, tl, host_step, out)
    _host_part(ev, j, steps, tl, host_step, out)
    _memory_part(ev, steps, out)
    out.warnings = list(dict.fromkeys(ev.warnings + steps.warnings + _check(ev, j, host_step, out)))
    del host_step
    inclusive = memory_inclusive(ev, tree)  # while the helper computes the nesting
    table = with_memory(nesting.result(), inclusive)
    del inclusive
    out.op_rows, out.op_shape_rows, out.phase_ops = op_rows_of(ev, steps, tl, tree, table)
    return out


def analyze_trace_bytes(data: bytes, source: str, steady: bool = False) -> TraceAnalysis:
    """Analyse a (gunzipped) Kineto trace; ProfileError for anything that is not one."""
    ev = parse_trace_bytes(data)
    return with_overview(analyze_events(ev, source, steady=steady), data, ev)


def with_overview(out: TraceAnalysis, data: bytes, ev: Events) -> TraceAnalysis:
    """`out` with torch-tb-profiler's overview (est. SM efficiency, est. achieved occupancy) over
    its analysed steps. Why here and not in `analyze_events`: the figures need each kernel's
    `blocks per SM` and occupancy args, which only a second pass over the bytes reads
    (`traces.kernel_args`: about 0.1 s for a 15 MB trace), paid only by a trace with kernels."""
    if out.has_device:
        from yoloprof.traces.gpu_utilisation import steps_overview
        from yoloprof.traces.kernel_args import read_kernel_args

        out.overview = steps_overview(ev, read_kernel_args(data, ev, launch=False), list(out.steps.ids))
    return out


def analyze_trace_file(path: str | os.PathLike) -> TraceAnalysis:
    from yoloprof.profiles.io import read_bytes

    return analyze_trace_bytes(read_bytes(path), str(path))
