"""Per-step figures: step time, device busy, kernels and phases of each step, the slowest marked.

From the profile's `trace.per_step` (the engine's rows: a step is a `ProfilerStep#N` span on the
host; device busy is the union of the device work its launches started). With the trace at hand
(`readers.detail`), each step also gets its est. SM efficiency and occupancy per device.
"""

from __future__ import annotations

from typing import Any

from yoloprof.readers._common import finite, per_step


def compute_steps(profile: dict, gpu_steps: list[dict] | None = None) -> dict[str, Any]:
    """{"steps": rows, "slowest": step id or None, "mean_step_ms": ...}; rows gain `slowest`
    (True for the one longest step) and, given `gpu_steps` (readers.gpu_metrics' `steps`, in
    the same order), `devices`."""
    rows = [dict(r) for r in per_step(profile)]
    times = [finite(r.get("step_ms")) for r in rows]
    slowest = max(range(len(rows)), key=lambda i: times[i] or -1.0) if rows else None
    for i, r in enumerate(rows):
        r["slowest"] = i == slowest and len(rows) > 1
        if gpu_steps is not None and i < len(gpu_steps) and gpu_steps[i].get("step") == r.get("step"):
            r["devices"] = gpu_steps[i]["devices"]
    known = [t for t in times if t is not None]
    return {"steps": rows, "slowest": rows[slowest]["step"] if slowest is not None and len(rows) > 1 else None,
            "mean_step_ms": sum(known) / len(known) if known else None}
