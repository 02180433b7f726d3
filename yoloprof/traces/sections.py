"""TraceAnalysis -> the profile sections of DESIGN.md section 4 (metrics, phases, categories,
kernels, ops, trace, warnings, memory).

Why means and single samples: a trace is one trial, so each metric's value is the mean over the
analysed steps and it carries that one value as its only sample; per-step values go to
`trace.per_step` (used by `compare` on two raw traces), never into `samples`. Device figures of a
CPU-only trace are null, not 0: "no GPU" is not "an idle GPU".

Definitions (all per analysed step, averaged over steps):
- step_ms: wall time of the `ProfilerStep#N` span (CPU side).
- device_busy_ms: the device's busy time, counting kernels, memcpys and memsets: ONE union of
  those intervals per device over all analysed steps (concurrent streams and work that spills into
  the next step count once), each instant credited to the step that launched the interval first
  covering it; mean over steps and over devices. Per-device figures: `trace.devices`.
- device_util_pct: that union over the analysed window (from the later of the first step's start
  and the end of the device work launched before it, to the later of the last step's end and the
  end of the work launched in the steps: a lagging GPU's span for those steps), mean over
  devices; <= 100 by
  construction (above 100 is reported as a bug, never clipped).
- kernel_ms / memcpy_ms / memset_ms: summed durations per step of each CUPTI activity kind
  (a sum, not a union: two overlapping kernels count twice); kernel figures (kernels table totals,
  mean_kernel_us, tensorcore_pct) never include memcpy/memset.
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
  "Total Allocated" on a device, in MiB: the caching allocator's count of every live block, so
  tensors alive before the window (weights, optimizer state) are in it. torch's CPU memory
  reporter counts only tensors allocated while the profiler runs, so a trace with CPU memory
  events only has no peak_mem_mb (n/a: its older tensors are unseen) and gives
  cpu_window_alloc_peak_mb instead: the largest CPU "Total Allocated", the peak of what the
  window itself allocated and still held.
- orphan_kernels: kernels per step with no launch event in the trace (placed by GPU start).
- <phase>_wall_ms: CPU time covered by the phase's annotations ("other" = the rest of the step).
- sm_efficiency_pct / achieved_occupancy_pct: torch-tb-profiler's est. SM efficiency and est.
  achieved occupancy (`traces.gpu_utilisation`) over the plugin's spans of the analysed steps,
  mean over devices; absent, with the reason in `trace.overview_na`, when the kernels carry no
  such args (AMD, older CUPTI) or their args were not read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yoloprof.metrics.categories import CATEGORIES, classify, is_tensorcore, short_name
from yoloprof.profiles.model import measured
from yoloprof.traces.parse import DEVICE_KINDS, US_PER_MS


def _mean(values: np.ndarray | None, scale: float = 1.0) -> float | None:
    if values is None or len(values) == 0:
        return None
    return float(np.mean(values)) / scale


def _metrics(a: Any) -> dict[str, dict]:
    """Values only: units and directions come from the metric registry (`measured`)."""
    dev, gpu = a.has_device, a.gpu_expected
    n = max(a.n_steps, 1)
    n_kernels = float(a.kernels.sum()) if dev else 0.0
    values: dict[str, float | None] = {
        "step_ms": _mean(a.step_wall, US_PER_MS),
        "device_busy_ms": _mean(a.busy, US_PER_MS) if dev else None,
        "device_util_pct": a.device_util_pct if dev else None,
        "tensorcore_pct": (100.0 * a.tensorcore_us_total / a.kernel_us_total
                           if dev and a.kernel_us_total > 0 else None),
        "launches_per_step": _mean(a.launches) if gpu else None,
        "kernels_per_step": _mean(a.kernels) if dev else None,
        "mean_kernel_us": a.kernel_us_total / n_kernels if n_kernels else None,
        **{f"{kind}_ms": _mean(a.kind_us[:, k], US_PER_MS) if dev else None for k, kind in enumerate(DEVICE_KINDS)},
        "host_overhead_ms": _mean(a.launch_us, US_PER_MS) if gpu else None,
        "host_sync_ms": _mean(a.sync_us, US_PER_MS) if gpu else None,
        "malloc_calls_per_step": _mean(a.malloc_calls) if gpu else None,
        "peak_mem_mb": _peak_mb(a.memory),
        "cpu_window_alloc_peak_mb": _cpu_window_peak_mb(a.memory),
        "alloc_calls_per_step": _mean(a.alloc_calls),
        "orphan_kernels": a.orphans_in_steps / n if dev else None,
        "sm_efficiency_pct": _overview(a, "sm_efficiency", 100.0) if dev else None,
        "achieved_occupancy_pct": _overview(a, "occupancy_pct", 1.0) if dev else None,
    }
    for k, phase in enumerate(a.phase_names):
        values[f"{phase}_wall_ms"] = _mean(a.phase_wall[:, k], US_PER_MS)
        values[f"{phase}_device_ms"] = _mean(a.phase_dev[:, k], US_PER_MS) if dev else None
        values[f"{phase}_kernels"] = _mean(a.phase_kernels[:, k]) if dev else None
        values[f"{phase}_ops"] = _mean(a.phase_ops[:, k])
    return {name: measured(name, v) for name, v in values.items()}


# overview metric -> (its key in `gpu_utilisation.device_metrics`, the key of its n/a reason)
OVERVIEW = {"sm_efficiency_pct": ("sm_efficiency", "sm_efficiency_na"),
            "achieved_occupancy_pct": ("occupancy_pct", "occupancy_na")}


def _overview(a: Any, key: str, scale: float) -> float | None:
    """Mean over the devices that have it of one of the plugin's overview figures."""
    values = [float(d[key]) * scale for d in a.overview or [] if d.get(key) is not None]
    return sum(values) / len(values) if values else None


def _overview_na(a: Any) -> dict[str, str]:
    """Why an overview figure of a trace with kernels is absent (`trace.overview_na`)."""
    if not a.has_device:
        return {}
    if a.overview is None:
        return {name: a.overview_na for name in OVERVIEW}
    out = {}
    for name, (key, why) in OVERVIEW.items():
        if all(d.get(key) is None for d in a.overview):
            out[name] = next((str(d[why]) for d in a.overview if d.get(why)), "no kernel carries it")
    return out


def _peak_mb(memory: list[dict]) -> float | None:
    """Peak allocated on the devices (MiB), everything live included; None without device events
    (the CPU's figure leaves out tensors older than the window: module docstring)."""
    dev = [r["peak_allocated_mb"] for r in memory if r["device_type"] != 0]
    return max(dev) if dev else None


def _cpu_window_peak_mb(memory: list[dict]) -> float | None:
    """Peak of the CPU allocations made inside the profiled window (MiB), when the trace has no
    device memory events."""
    if any(r["device_type"] != 0 for r in memory):
        return None
    cpu = [r["peak_allocated_mb"] for r in memory if r["device_type"] == 0]
    return max(cpu) if cpu else None


def _phases(a: Any) -> list[dict]:
    rows = []
    for k, phase in enumerate(a.phase_names):
        wall = _mean(a.phase_wall[:, k], US_PER_MS)
        row = {"phase": phase, "wall_ms_per_step": wall,
               "device_ms_per_step": _mean(a.phase_dev[:, k], US_PER_MS) if a.has_device else None,
               "kernels_per_step": _mean(a.phase_kernels[:, k]) if a.has_device else None,
               "ops_per_step": _mean(a.phase_ops[:, k])}
        if phase == "other" and not wall and not row["device_ms_per_step"] and not row["ops_per_step"]:
            continue
        rows.append(row)
    return rows


def _categories(a: Any) -> list[dict]:
    if not a.has_device:
        return []
    per_step = a.cat_us.mean(axis=0) / US_PER_MS
    total = float(per_step.sum())
    saving = a.cat_saving_us / US_PER_MS
    rows = [{"category": c, "device_ms_per_step": float(v), "pct": 100.0 * float(v) / total if total else 0.0,
             "busy_saving_ms_per_step": float(saving[k])}
            for k, (c, v) in enumerate(zip(CATEGORIES, per_step.tolist())) if v > 0]
    return sorted(rows, key=lambda r: -r["device_ms_per_step"])


def _kernels(a: Any) -> list[dict]:
    """Device activity rows; `kind` says kernel, memcpy or memset, and `pct` is the share of the
    summed time of the same kind (a kernel's share of kernel time)."""
    n = max(a.n_steps, 1)
    total = {kind: sum(r["us"] for r in a.kernel_rows if r["kind"] == kind) for kind in DEVICE_KINDS}
    rows = [{"name": r["name"], "short_name": short_name(r["name"]), "category": classify(r["name"]),
             "tensorcore": is_tensorcore(r["name"]), "phase": r["phase"], "kind": r["kind"],
             "ms_per_step": r["us"] / US_PER_MS / n,
             "pct": 100.0 * r["us"] / total[r["kind"]] if total[r["kind"]] else 0.0,
             "count_per_step": r["count"] / n} for r in a.kernel_rows]
    return sorted(rows, key=lambda r: (-r["ms_per_step"], r["name"], r["phase"]))


def _ops(a: Any, rows_in: list[dict], key: str) -> list[dict]:
    """Op rows per step: calls, self and inclusive time as key_averages counts them, and self
    allocated/freed bytes when the trace has memory events; `kind` says op, runtime or driver
    (an API call such as cudaLaunchKernel, a row of its own as in key_averages)."""
    n = max(a.n_steps, 1)
    rows = []
    for r in rows_in:
        row = {"name": r["name"], "kind": r["kind"], key: r[key], "self_ms_per_step": r["self_us"] / US_PER_MS / n,
               "total_ms_per_step": r["total_us"] / US_PER_MS / n, "count_per_step": r["count"] / n}
        if "alloc_bytes" in r:
            row.update(alloc_bytes_per_step=r["alloc_bytes"] / n, freed_bytes_per_step=r["freed_bytes"] / n)
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["self_ms_per_step"], r["name"], str(r[key])))


def _per_step(a: Any) -> list[dict]:
    rows = []
    for i, step in enumerate(a.steps.ids):
        row: dict[str, Any] = {"step": step, "step_ms": float(a.step_wall[i]) / US_PER_MS,
                               "device_busy_ms": float(a.busy[i]) / US_PER_MS if a.has_device else None,
                               "kernels": int(a.kernels[i]) if a.has_device else 0}
        if a.has_device:
            row["categories"] = {c: float(v) / US_PER_MS for c, v in zip(CATEGORIES, a.cat_us[i].tolist()) if v}
        row["phases"] = {p: float(a.phase_wall[i, k]) / US_PER_MS for k, p in enumerate(a.phase_names)}
        rows.append(row)
    return rows


def _devices(a: Any) -> list[dict]:
    """Per device: busy ms per step (its own union) and utilisation over the analysed window."""
    n = max(a.n_steps, 1)
    return [{"device": d["device"], "busy_ms_per_step": d["busy_us"] / US_PER_MS / n, "util_pct": d["util_pct"]}
            for d in a.devices]


def build_sections(a: Any, steps_hint: int | None = None) -> dict[str, Any]:
    warnings = list(a.warnings)
    if steps_hint is not None and steps_hint != a.n_steps and not a.steps.whole_trace:
        warnings.append(f"expected {steps_hint} profiled step(s), the trace has {a.n_steps}")
    window = float(a.steps.end[-1] - a.steps.start[0]) / US_PER_MS if a.n_steps else 0.0
    return {
        "metrics": _metrics(a),
        "phases": _phases(a),
        "categories": _categories(a),
        "kernels": _kernels(a),
        "ops": _ops(a, a.op_rows, "phase"),
        "ops_by_shape": _ops(a, a.op_shape_rows, "input_shapes"),
        "trace": {"file": a.source, "steps_analyzed": a.n_steps, "window_ms": max(window, 0.0),
                  "step_ids": list(a.steps.ids), "whole_trace": a.steps.whole_trace,
                  "per_step": _per_step(a), "memory": a.memory, "devices": _devices(a),
                  "device_window_ms": a.window_us / US_PER_MS if a.has_device else None,
                  "overview_na": _overview_na(a)},
        "warnings": warnings,
        "memory": a.memory,
    }
