"""TraceAnalysis -> the profile sections of DESIGN.md section 4 (metrics, phases, categories,
kernels, ops, trace, warnings, memory).

Why means and single samples: a trace is one trial, so each metric's value is the mean over the
analysed steps and it carries that one value as its only sample; per-step values go to
`trace.per_step` (used by `compare` on two raw traces), never into `samples`. Device figures of a
CPU-only trace are null, not 0: "no GPU" is not "an idle GPU".

Definitions (all per analysed step, averaged over steps):
- step_ms: wall time of the `ProfilerStep#N` span (CPU side).
- device_busy_ms: union of the kernel/memcpy/memset intervals *launched* in the step, per device
  (averaged over devices), so concurrent streams count once.
- device_util_pct: busy over wall, where wall adds the GPU tail after the last step (work a CPU
  running ahead queued); capped at 100.
- <phase>_device_ms: the busy time split exclusively among phases (each interval is credited
  with the time it adds to the union beyond intervals that started earlier), so the phases add
  up to device_busy_ms exactly; equal to the union within each phase when phases do not overlap.
- launches_per_step: kernel-launch API calls (cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch,
  hipLaunchKernel, ...); kernels_per_step: kernels run (a graph launch runs many).
- host_overhead_ms: CPU time inside those launch calls. Async memcpy calls are left out on
  purpose: a device-to-host copy blocks until the GPU catches up, which is waiting, not overhead.
- host_sync_ms: CPU time inside explicit synchronisation calls (Device/Stream/Event Synchronize).
- malloc_calls_per_step: cudaMalloc/cudaFree (hip*, cuMem*) calls: non-zero in steady state
  means the caching allocator is missing its pool.
- alloc_calls_per_step / peak_mem_mb: `[memory]` events (profile_memory=True); peak is the largest
  "Total Allocated" on a device (the CPU when the trace has no device), in MiB.
- orphan_kernels: kernels per step with no launch event in the trace (placed by GPU start).
- <phase>_wall_ms: CPU time covered by the phase's annotations ("other" = the rest of the step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yoloprof.metrics.categories import CATEGORIES, classify, is_tensorcore, short_name
from yoloprof.profiles.model import metric

MS = 1000.0


def _mean(values: np.ndarray | None, scale: float = 1.0) -> float | None:
    if values is None or len(values) == 0:
        return None
    return float(np.mean(values)) / scale


def _metrics(a: Any) -> dict[str, dict]:
    dev = a.has_device
    n = max(a.n_steps, 1)
    n_kernels = float(a.kernels.sum()) if dev else 0.0
    peak = _peak_mb(a.memory)
    m = {
        "step_ms": metric(_mean(a.step_wall, MS), "ms", "lower"),
        "device_busy_ms": metric(_mean(a.busy, MS) if dev else None, "ms", None),
        "device_util_pct": metric(a.device_util_pct if dev else None, "%", "higher"),
        "tensorcore_pct": metric(100.0 * a.tensorcore_us_total / a.kernel_us_total
                                 if dev and a.kernel_us_total > 0 else None, "%", "higher"),
        "launches_per_step": metric(_mean(a.launches) if a.gpu_expected else None, "count", "lower"),
        "kernels_per_step": metric(_mean(a.kernels) if dev else None, "count", None),
        "mean_kernel_us": metric(a.kernel_us_total / n_kernels if n_kernels else None, "us", None),
        "host_overhead_ms": metric(_mean(a.launch_us, MS) if a.gpu_expected else None, "ms", "lower"),
        "host_sync_ms": metric(_mean(a.sync_us, MS) if a.gpu_expected else None, "ms", None),
        "malloc_calls_per_step": metric(_mean(a.malloc_calls) if a.gpu_expected else None, "count",
                                        "lower"),
        "peak_mem_mb": metric(peak, "MiB", "lower"),
        "alloc_calls_per_step": metric(_mean(a.alloc_calls), "count", "lower"),
        "orphan_kernels": metric(a.orphans_in_steps / n if dev else None, "count", None),
    }
    for k, phase in enumerate(a.phase_names):
        m[f"{phase}_wall_ms"] = metric(_mean(a.phase_wall[:, k], MS), "ms", "lower")
        m[f"{phase}_device_ms"] = metric(_mean(a.phase_dev[:, k], MS) if dev else None, "ms", "lower")
        m[f"{phase}_kernels"] = metric(_mean(a.phase_kernels[:, k]) if dev else None, "count", None)
        m[f"{phase}_ops"] = metric(_mean(a.phase_ops[:, k]), "count", None)
    return m


def _peak_mb(memory: list[dict]) -> float | None:
    """Peak allocated on the devices (MiB), or on the CPU when the trace has only CPU events."""
    dev = [r["peak_allocated_mb"] for r in memory if r["device_type"] != 0]
    cpu = [r["peak_allocated_mb"] for r in memory if r["device_type"] == 0]
    return max(dev) if dev else max(cpu) if cpu else None


def _phases(a: Any) -> list[dict]:
    rows = []
    for k, phase in enumerate(a.phase_names):
        wall = _mean(a.phase_wall[:, k], MS)
        row = {"phase": phase, "wall_ms_per_step": wall,
               "device_ms_per_step": _mean(a.phase_dev[:, k], MS) if a.has_device else None,
               "kernels_per_step": _mean(a.phase_kernels[:, k]) if a.has_device else None,
               "ops_per_step": _mean(a.phase_ops[:, k])}
        if phase == "other" and not wall and not row["device_ms_per_step"] and not row["ops_per_step"]:
            continue
        rows.append(row)
    return rows


def _categories(a: Any) -> list[dict]:
    if not a.has_device:
        return []
    per_step = a.cat_us.mean(axis=0) / MS
    total = float(per_step.sum())
    rows = [{"category": c, "device_ms_per_step": float(v), "pct": 100.0 * float(v) / total if total else 0.0}
            for c, v in zip(CATEGORIES, per_step.tolist()) if v > 0]
    return sorted(rows, key=lambda r: -r["device_ms_per_step"])


def _kernels(a: Any) -> list[dict]:
    n = max(a.n_steps, 1)
    total = sum(r["us"] for r in a.kernel_rows)
    rows = [{"name": r["name"], "short_name": short_name(r["name"]), "category": classify(r["name"]),
             "tensorcore": is_tensorcore(r["name"]), "phase": r["phase"],
             "ms_per_step": r["us"] / MS / n, "pct": 100.0 * r["us"] / total if total else 0.0,
             "count_per_step": r["count"] / n} for r in a.kernel_rows]
    return sorted(rows, key=lambda r: (-r["ms_per_step"], r["name"], r["phase"]))


def _ops(a: Any) -> list[dict]:
    n = max(a.n_steps, 1)
    rows = [{"name": r["name"], "phase": r["phase"], "self_ms_per_step": r["self_us"] / MS / n,
             "total_ms_per_step": r["total_us"] / MS / n, "count_per_step": r["count"] / n}
            for r in a.op_rows]
    return sorted(rows, key=lambda r: (-r["self_ms_per_step"], r["name"], r["phase"]))


def _per_step(a: Any) -> list[dict]:
    rows = []
    for i, step in enumerate(a.steps.ids):
        row: dict[str, Any] = {"step": step, "step_ms": float(a.step_wall[i]) / MS,
                               "device_busy_ms": float(a.busy[i]) / MS if a.has_device else None}
        if a.has_device:
            row["categories"] = {c: float(v) / MS for c, v in zip(CATEGORIES, a.cat_us[i].tolist()) if v}
        row["phases"] = {p: float(a.phase_wall[i, k]) / MS for k, p in enumerate(a.phase_names)}
        rows.append(row)
    return rows


def build_sections(a: Any, steps_hint: int | None = None) -> dict[str, Any]:
    warnings = list(a.warnings)
    if steps_hint is not None and steps_hint != a.n_steps and not a.steps.whole_trace:
        warnings.append(f"expected {steps_hint} profiled step(s), the trace has {a.n_steps}")
    window = float(a.steps.end[-1] - a.steps.start[0]) / MS if a.n_steps else 0.0
    return {
        "metrics": _metrics(a),
        "phases": _phases(a),
        "categories": _categories(a),
        "kernels": _kernels(a),
        "ops": _ops(a),
        "trace": {"file": a.source, "steps_analyzed": a.n_steps, "window_ms": max(window, 0.0),
                  "step_ids": list(a.steps.ids), "whole_trace": a.steps.whole_trace,
                  "per_step": _per_step(a), "memory": a.memory},
        "warnings": warnings,
        "memory": a.memory,
    }
