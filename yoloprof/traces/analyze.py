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

from yoloprof.metrics.categories import CATEGORIES, classify, is_tensorcore
from yoloprof.traces.correlate import Join, join
from yoloprof.traces.intervals import exclusive_contributions, overlap_by_label
from yoloprof.traces.ops import self_times
from yoloprof.traces.parse import CAT_CODE, HOST_API_CATS, Events, parse_trace_bytes
from yoloprof.traces.phases import Timeline, build_timeline
from yoloprof.traces.steps import STEP_NAME, Steps, find_steps, step_of

US_PER_MS = 1000.0


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
    alloc_calls: np.ndarray | None = None
    memory: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def device_util_pct(self) -> float | None:
        """Busy time of the work launched in the analysed steps over their wall time plus the GPU
        tail after the last step (a CPU running ahead queues work that finishes later); capped
        at 100 because per-step unions may overlap across step boundaries."""
        if self.busy is None:
            return None
        wall = float(self.step_wall.sum()) + self.device_tail_us
        return min(100.0, 100.0 * float(self.busy.sum()) / wall) if wall > 0 else None

    def profile_sections(self, steps_hint: int | None = None) -> dict[str, Any]:
        from yoloprof.traces.sections import build_sections

        return build_sections(self, steps_hint)


def _per_step(step: np.ndarray, n_steps: int, weights: np.ndarray | None = None) -> np.ndarray:
    ok = step >= 0
    w = None if weights is None else weights[ok]
    return np.bincount(step[ok], weights=w, minlength=n_steps)[:n_steps].astype(np.float64)


def _per_step_label(step: np.ndarray, label: np.ndarray, n_steps: int, n_labels: int,
                    weights: np.ndarray | None = None) -> np.ndarray:
    ok = step >= 0
    key = step[ok] * n_labels + label[ok]
    w = None if weights is None else weights[ok]
    flat = np.bincount(key, weights=w, minlength=n_steps * n_labels)[:n_steps * n_labels]
    return flat.reshape(n_steps, n_labels).astype(np.float64)


def _grouped_rows(names: np.ndarray, phases: np.ndarray, n_phases: int,
                  sums: dict[str, np.ndarray]) -> list[tuple[int, int, dict[str, float], int]]:
    """Group events by (name, phase): [(name_code, phase, {column: sum}, count)]."""
    if len(names) == 0:
        return []
    key = names.astype(np.int64) * n_phases + phases
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    totals = {col: np.bincount(inv, weights=w, minlength=len(uniq)) for col, w in sums.items()}
    return [(int(k // n_phases), int(k % n_phases), {c: float(t[i]) for c, t in totals.items()},
             int(counts[i])) for i, k in enumerate(uniq.tolist())]


def _device_part(ev: Events, j: Join, steps: Steps, tl: Timeline, out: TraceAnalysis) -> None:
    """Busy time (union per device), its exclusive split by phase, categories, kernel table."""
    S, P = len(steps), len(tl.names)
    step = step_of(j.host_time, steps)
    keep = step >= 0
    d, step, host_t = j.device_idx[keep], step[keep], j.host_time[keep]
    out.orphans_in_steps = int((j.orphan[keep] & (ev.cat[d] == CAT_CODE["kernel"])).sum())
    phase = tl.phase_at(host_t)
    start, dur = ev.ts[d], ev.dur[d]
    devices, dev_code = np.unique(ev.device[d], return_inverse=True)
    out.n_devices = max(len(devices), 1)
    contrib = exclusive_contributions(start, start + dur, step * out.n_devices + dev_code)
    out.busy = _per_step(step, S, contrib) / out.n_devices
    # GPU work still running after the last step's CPU end belongs to the analysed steps' wall.
    out.device_tail_us = max(0.0, float((start + dur).max(initial=steps.end[-1])) - float(steps.end[-1]))
    out.phase_dev = _per_step_label(step, phase, S, P, contrib) / out.n_devices
    name_cat = np.array([CATEGORIES.index(classify(s)) for s in ev.strings], np.int64)
    name_tc = np.array([is_tensorcore(s) for s in ev.strings], bool)
    cats = name_cat[ev.name[d]]
    out.cat_us = _per_step_label(step, cats, S, len(CATEGORIES), dur)
    is_kernel = ev.cat[d] == CAT_CODE["kernel"]
    out.kernels = _per_step(np.where(is_kernel, step, -1), S)
    out.phase_kernels = _per_step_label(np.where(is_kernel, step, -1), phase, S, P)
    out.kernel_us_total = float(dur[is_kernel].sum())
    out.tensorcore_us_total = float(dur[is_kernel & name_tc[ev.name[d]]].sum())
    for name, ph, sums, count in _grouped_rows(ev.name[d], phase, P, {"us": dur}):
        out.kernel_rows.append({"name": ev.strings[name], "phase": tl.names[ph],
                                "us": sums["us"], "count": count})


def _host_part(ev: Events, j: Join, steps: Steps, tl: Timeline, out: TraceAnalysis) -> None:
    """Launch counts, enqueue and sync time, cudaMalloc/cudaFree calls, ops and phase walls."""
    S, P = len(steps), len(tl.names)
    host_step = step_of(ev.ts, steps)

    def count(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return _per_step(np.where(mask, host_step, -1), S, weights)

    out.launches = count(j.launch_mask)
    out.launch_us = count(j.launch_mask, ev.dur)
    out.sync_us = count(j.sync_mask, ev.dur)
    out.malloc_calls = count(j.malloc_mask)
    not_step = ~ev.names_matching(STEP_NAME)
    ops = np.flatnonzero((ev.cat == CAT_CODE["cpu_op"]) & (host_step >= 0) & not_step)
    op_phase = tl.phase_at(ev.ts[ops])
    out.phase_ops = _per_step_label(host_step[ops], op_phase, S, P)
    sums = {"self": self_times(ev, ops), "total": ev.dur[ops]}
    for name, ph, tot, count_ in _grouped_rows(ev.name[ops], op_phase, P, sums):
        out.op_rows.append({"name": ev.strings[name], "phase": tl.names[ph],
                            "self_us": tot["self"], "total_us": tot["total"], "count": count_})
    walls = np.array([overlap_by_label(tl.start, tl.end, tl.label, lo, hi, P)
                      for lo, hi in zip(steps.start.tolist(), steps.end.tolist())]).reshape(S, P)
    walls[:, tl.other] = np.maximum(out.step_wall - walls.sum(axis=1), 0.0)
    out.phase_wall = walls


def _memory_part(ev: Events, steps: Steps, out: TraceAnalysis) -> None:
    """Allocator calls per step and peaks per device from `[memory]` events (profile_memory)."""
    mem = ev.memory
    if not len(mem):
        return
    calls = (mem.nbytes != 0) & np.isfinite(mem.nbytes)
    out.alloc_calls = _per_step(np.where(calls, step_of(mem.ts, steps), -1), len(steps))
    keys = sorted({(int(t), int(i)) for t, i in zip(np.nan_to_num(mem.device_type, nan=-1).tolist(),
                                                   np.nan_to_num(mem.device_id, nan=-1).tolist())})
    for dtype, did in keys:
        sel = (np.nan_to_num(mem.device_type, nan=-1) == dtype) & (np.nan_to_num(mem.device_id, nan=-1) == did)
        out.memory.append({
            "device": "cpu" if dtype == 0 else f"device{did}" if dtype != 1 else f"cuda:{did}",
            "device_type": dtype, "device_id": did,
            "peak_allocated_mb": float(np.nanmax(mem.allocated[sel], initial=0.0)) / 2**20,
            "peak_reserved_mb": float(np.nanmax(mem.reserved[sel], initial=0.0)) / 2**20,
            "alloc_calls": int((sel & calls).sum())})


def _check(ev: Events, j: Join, steps: Steps, out: TraceAnalysis) -> list[str]:
    notes: list[str] = []
    if out.gpu_expected and not out.has_device:
        notes.append("the trace records GPU devices or CUDA/HIP runtime calls but no kernels: "
                     "CUPTI/roctracer did not attach, so device figures are unknown")
    n_orphans = int(j.orphan.sum())
    if n_orphans:
        notes.append(f"{n_orphans} device event(s) have no launch event in the trace (launched before "
                     f"the profiler started?); {out.orphans_in_steps} kernel(s) of them were placed "
                     "in steps by their own GPU start time")
    late = j.launches_without_work
    late = late[step_of(ev.ts[late], steps) >= 0] if len(late) else late
    if len(late):
        notes.append(f"{len(late)} kernel launch(es) in the analysed steps have no kernel in the trace "
                     "(the trace window ended before the GPU ran them?)")
    return notes


def analyze_events(ev: Events, source: str) -> TraceAnalysis:
    steps = find_steps(ev)
    j = join(ev)
    tl = build_timeline(ev)
    props = ev.meta.get("deviceProperties")
    out = TraceAnalysis(
        source=source, meta=ev.meta, steps=steps, phase_names=tl.names,
        gpu_expected=bool(props) or bool(ev.is_cat(*HOST_API_CATS).any()),
        has_device=len(j.device_idx) > 0, n_devices=0, step_wall=steps.wall,
        phase_wall=np.zeros(0), phase_kernels=np.zeros((len(steps), len(tl.names))),
        phase_ops=np.zeros(0), launches=np.zeros(0), launch_us=np.zeros(0), sync_us=np.zeros(0),
        malloc_calls=np.zeros(0))
    if out.has_device:
        _device_part(ev, j, steps, tl, out)
    _host_part(ev, j, steps, tl, out)
    _memory_part(ev, steps, out)
    out.warnings = list(dict.fromkeys(ev.warnings + steps.warnings + _check(ev, j, steps, out)))
    return out


def analyze_trace_bytes(data: bytes, source: str) -> TraceAnalysis:
    """Analyse a (gunzipped) Kineto trace; ProfileError for anything that is not one."""
    return analyze_events(parse_trace_bytes(data), source)


def analyze_trace_file(path: str | os.PathLike) -> TraceAnalysis:
    from yoloprof.profiles.io import read_bytes

    return analyze_trace_bytes(read_bytes(path), str(path))
