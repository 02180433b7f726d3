"""Everything the one-capture views need from the raw trace (`yoloprof report`, `kernels
--by-launch`, `summary --per-step`): GPU metrics, the kernel table by launch, the plugin's step
breakdown and overlap, Tensor Cores, the memory timeline, and the timelines of utilisation, SM
efficiency (the time-weighted mean of the plugin's ranges per bucket) and occupancy (the
kernels' occupancy weighted by their time in the bucket), over the plugin's buckets.

Why a reader of its own: these need the trace itself (a profile keeps per-step means only), and
a second pass over it (`traces.kernel_args`) that `summary` must not pay. For a profile.json the
trace is the one the capture wrote beside it (`trace.file`, or `profile_trace.json[.gz]` in its
folder); when it is gone every view says so instead of guessing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from yoloprof.defs import files


def trace_for(path: str | os.PathLike, profile: dict) -> Path | None:
    """The raw trace behind `path`: itself for a trace (the engine names its source in
    `trace.file`), else the capture's trace file: as named, or beside the profile."""
    here = Path(path).parent
    named = (profile.get("trace") or {}).get("file")
    if named and Path(named) == Path(path):
        return Path(path)
    for cand in ([Path(named), here / Path(named).name] if named else []) + [
            here / files.TRACE, here / (files.TRACE + ".gz")]:
        if cand.is_file():
            return cand
    return None


def compute_detail(data: bytes, *, top: int = 50) -> dict[str, Any]:
    import numpy as np

    from yoloprof.readers.gpu_metrics import gpu_metrics_of
    from yoloprof.traces.breakdown import plugin_breakdown
    from yoloprof.traces.correlate import join
    from yoloprof.traces.gpu_utilisation import (
        buckets, covered, gpu_ids, occupancy_timeline, plugin_steps, sm_ranges, timeline_range, util_timeline,
    )
    from yoloprof.traces.kernel_args import read_kernel_args
    from yoloprof.traces.launches import calling_ops, launch_table, tensor_cores
    from yoloprof.traces.memline import memory_timeline
    from yoloprof.traces.parse import US_PER_MS, parse_trace_bytes
    from yoloprof.traces.profiler_steps import find_steps

    ev = parse_trace_bytes(data)
    ka = read_kernel_args(data, ev)
    j = join(ev)
    op_of = calling_ops(ev, j)
    n_steps = len(find_steps(ev))
    lo, hi = timeline_range(ev, ka)
    edges = buckets(lo, hi)
    timeline = []
    for d in gpu_ids(ev):
        if len(edges) < 2:
            break
        sm = sm_ranges(ev, ka, d)
        sm_share = covered(sm[:, :2], edges[:-1], edges[1:], sm[:, 2]) / np.diff(edges) if len(sm) else None
        occ = occupancy_timeline(ev, ka, d, edges)
        timeline.append({"device": d, "t_ms": (edges[:-1] / US_PER_MS).tolist(),
                         "util_pct": (100.0 * util_timeline(ev, d, edges)).tolist(),
                         "sm_efficiency_pct": None if sm_share is None else (100.0 * sm_share).tolist(),
                         "occupancy_pct": None if occ is None else [None if np.isnan(v) else float(v)
                                                                    for v in occ.tolist()]})
    return {
        "gpu": gpu_metrics_of(ev, ka, top=top),
        "launches": launch_table(ev, ka, j, op_of, n_steps, top=top),
        "tensor_cores": tensor_cores(ev, j, op_of) if len(j.device_idx) else None,
        "breakdown": plugin_breakdown(ev, ka, j, op_of, plugin_steps(ev, ka)),
        "memory": memory_timeline(ev),
        "timeline": timeline,
        "legacy_runtime": ka.legacy_runtime,
    }


def read_detail(path: str | os.PathLike, profile: dict, *, top: int = 50) -> dict[str, Any] | None:
    """The detail of the trace behind `path`, or None when there is none to read."""
    from yoloprof.profiles.io import read_bytes

    trace = trace_for(path, profile)
    return None if trace is None else compute_detail(read_bytes(trace), top=top)


NO_TRACE = ("the capture's trace file is not beside the profile: GPU metrics, launches, the "
            "memory and utilisation timelines need it")
