"""Memory over time from the `[memory]` events (profile_memory=True), and who reached the peak.

Each `[memory]` event carries the allocator's running totals (`Total Allocated`, `Total
Reserved`) for its device after the call: the timeline is those totals in time order, per device.
The peak is the event with the largest allocated total; it is attributed to the innermost op open
at that instant (the shortest cpu op whose span holds it) and the innermost `nn.Module: ...`
python span when the trace recorded them (with_stack / with_modules).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from yoloprof.defs.metrics import BYTES_PER_MIB
from yoloprof.traces.parse import CAT_CODE, US_PER_MS, Events
from yoloprof.traces.profiler_steps import matched_group

MAX_POINTS = 600  # points kept per device: the largest allocated total of each time bin
MODULE_SPAN = re.compile(r"^nn\.Module: (.+)$")


def _device_label(dtype: int, did: int) -> str:
    return "cpu" if dtype == 0 else f"cuda:{did}" if dtype == 1 else f"device{did}"


def _innermost_at(ev: Events, mask: np.ndarray, t: float) -> int:
    idx = np.flatnonzero(mask & (ev.ts <= t) & (ev.ts + ev.dur >= t))
    return int(idx[np.argmin(ev.dur[idx])]) if len(idx) else -1


def _thin(order: np.ndarray, ts: np.ndarray, alloc: np.ndarray, limit: int) -> np.ndarray:
    """At most `limit` of the points: per equal time bin, the one with the largest allocation,
    and the last point (the curve's end)."""
    if len(order) <= limit:
        return order
    t = ts[order]
    bins = np.minimum(((t - t[0]) / max(t[-1] - t[0], 1e-9) * (limit - 1)).astype(np.int64), limit - 2)
    best: dict[int, int] = {}
    for k, (b, a) in enumerate(zip(bins.tolist(), alloc[order].tolist())):
        if b not in best or a > alloc[order[best[b]]]:
            best[b] = k
    keep = sorted(set(best.values()) | {len(order) - 1})
    return order[keep]


def memory_timeline(ev: Events, limit: int = MAX_POINTS) -> list[dict[str, Any]]:
    """Per device with `[memory]` events: points [ms from the trace start, allocated MiB,
    reserved MiB] and the peak with its op and module (None where nothing encloses it)."""
    mem = ev.memory
    if not len(mem):
        return []
    dtypes = np.nan_to_num(mem.device_type, nan=-1).astype(np.int64)
    dids = np.nan_to_num(mem.device_id, nan=-1).astype(np.int64)
    ops = ev.cat == CAT_CODE["cpu_op"]
    modules = (ev.cat == CAT_CODE["python_function"]) & ev.names_matching(MODULE_SPAN)
    out = []
    for dtype, did in sorted(set(zip(dtypes.tolist(), dids.tolist()))):
        sel = np.flatnonzero((dtypes == dtype) & (dids == did) & np.isfinite(mem.allocated))
        if not len(sel):
            continue
        order = sel[np.argsort(mem.ts[sel], kind="stable")]
        peak = int(order[np.argmax(mem.allocated[order])])
        t = float(mem.ts[peak])
        op, module = _innermost_at(ev, ops, t), _innermost_at(ev, modules, t)
        kept = _thin(order, mem.ts, mem.allocated, limit)
        reserved = np.nan_to_num(mem.reserved, nan=0.0)
        out.append({
            "device": _device_label(dtype, did), "events": int(len(sel)),
            "points": [[float(mem.ts[i]) / US_PER_MS, float(mem.allocated[i]) / BYTES_PER_MIB,
                        float(reserved[i]) / BYTES_PER_MIB] for i in kept.tolist()],
            "peak": {"t_ms": t / US_PER_MS, "allocated_mib": float(mem.allocated[peak]) / BYTES_PER_MIB,
                     "reserved_mib": float(np.nanmax(mem.reserved[order], initial=0.0)) / BYTES_PER_MIB,
                     "op": ev.strings[ev.name[op]] if op >= 0 else None,
                     "module": matched_group(MODULE_SPAN, ev.strings[ev.name[module]]) if module >= 0 else None},
        })
    return out
