"""Est. SM efficiency, est. achieved occupancy and GPU utilisation of a raw Kineto trace, overall
(torch-tb-profiler's definitions, `traces.gpu_utilisation`), per step and per kernel.

Why from the trace and not the profile: the per-step and per-kernel figures need every kernel's
`blocks per SM` and occupancy args, which a profile does not keep (it keeps only the overview
over the analysed steps, `sm_efficiency_pct` and `achieved_occupancy_pct`, which `summary`'s
headline shows: the engine's second pass, `traces.analyze.with_overview`).
Percentages: SM efficiency and utilisation are fractions x 100, occupancy is CUPTI's own percent.
"""

from __future__ import annotations

import os
from typing import Any

from yoloprof.traces.gpu_utilisation import (
    device_metrics, gpu_ids, per_kernel, plugin_counters, plugin_steps,
)
from yoloprof.traces.kernel_args import read_kernel_args
from yoloprof.traces.parse import US_PER_MS, parse_trace_bytes
from yoloprof.traces.profiler_steps import find_steps


def _pct(row: dict[str, Any]) -> dict[str, Any]:
    util, sm = row["gpu_util"], row["sm_efficiency"]
    return {"device": row["device"],
            "gpu_util_pct": None if util is None else 100.0 * util,
            "sm_efficiency_pct": None if sm is None else 100.0 * sm,
            "occupancy_pct": row["occupancy_pct"],
            "sm_efficiency_na": row["sm_efficiency_na"], "occupancy_na": row["occupancy_na"]}


def compute_gpu_metrics(data: bytes, *, top: int = 20, counters: bool = False) -> dict[str, Any]:
    """`overall` per device over the plugin's step span; `steps` per device over each
    `ProfilerStep#N` span (yoloprof's steps); `kernels`: per kernel name, duration-weighted mean
    blocks per SM and occupancy (an absent value counts as 0, as in the plugin), by total time."""
    ev = parse_trace_bytes(data)
    return gpu_metrics_of(ev, read_kernel_args(data, ev), top=top, counters=counters)


def gpu_metrics_of(ev: Any, ka: Any, *, top: int = 20, counters: bool = False) -> dict[str, Any]:
    psteps = plugin_steps(ev, ka)
    lo, hi = psteps.span
    devices = gpu_ids(ev)
    steps = find_steps(ev)
    out: dict[str, Any] = {
        "overall": [_pct(device_metrics(ev, ka, lo, hi, d)) for d in devices],
        "span_ms": (hi - lo) / US_PER_MS, "plugin_steps": psteps.names,
        "device_adjusted_steps": psteps.device_adjusted,
        "steps": [{"step": sid, "start_ms": float(s0) / US_PER_MS, "step_ms": float(s1 - s0) / US_PER_MS,
                   "devices": [_pct(device_metrics(ev, ka, float(s0), float(s1), d)) for d in devices]}
                  for sid, s0, s1 in zip(steps.ids, steps.start.tolist(), steps.end.tolist())],
        "kernels": _kernel_rows(ev, ka, top),
        "notes": [] if devices else ["no kernels in the trace: no GPU figures (CPU-only capture?)"],
    }
    if counters:
        out["counters"] = plugin_counters(ev, ka)
    return out


def _kernel_rows(ev: Any, ka: Any, top: int) -> list[dict[str, Any]]:
    import numpy as np

    from yoloprof.traces.parse import CAT_CODE

    k = np.flatnonzero(ev.cat == CAT_CODE["kernel"])
    means = per_kernel(ev, ka)
    totals = np.bincount(ev.name[k], weights=ev.dur[k], minlength=len(ev.strings))
    counts = np.bincount(ev.name[k], minlength=len(ev.strings))
    rows = [{"name": ev.strings[c], "calls": int(counts[c]), "total_ms": float(totals[c]) / US_PER_MS,
             "mean_blocks_per_sm": b, "mean_occupancy_pct": o} for c, (b, o) in means.items()]
    rows.sort(key=lambda r: (-r["total_ms"], r["name"]))
    return rows if top <= 0 else rows[:top]


def read_gpu_metrics(path: str | os.PathLike, **kw: Any) -> dict[str, Any]:
    from yoloprof.profiles.io import read_bytes

    return compute_gpu_metrics(read_bytes(path), **kw)
