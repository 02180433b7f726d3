"""torch-tb-profiler's step time breakdown and its communication/computation overlap, per step.

The plugin's definition (0.4.3 `overall_parser.py`), kept apart from yoloprof's own (device busy
= union of kernels, memcpy and memset over a window that takes in the device tail): each instant
of a step goes to the first role covering it in the order kernel, memcpy, memset, communication,
runtime, DataLoader, CPU exec; what no role covers is "other". Communication = kernels launched
by a `nccl:`/`gloo:` cpu op and the spans of those ops and annotations, the GPU-side mirror
(`gpu_user_annotation`, which spans the collective's kernels) included; runtime = the runtime
calls the plugin recognises (2021 traces only, `gpu_metrics.plugin_steps`); DataLoader =
`enumerate(DataLoader)#...__next__` ops; CPU exec = every other host op. The steps are the
plugin's (`plugin_steps`). Overlap per step: computation = kernel time (union), communication =
the communication role's time, overlap = their intersection (how much collective time compute
hides), other = the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yoloprof.traces.correlate import Join
from yoloprof.traces.gpu_utilisation import PluginSteps, covered, union
from yoloprof.traces.kernel_args import KernelArgs
from yoloprof.traces.launches import COMM_NAMES
from yoloprof.traces.parse import CAT_CODE, US_PER_MS, Events
from yoloprof.traces.profiler_steps import STEP_NAME

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")


def _is_loader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) \
        or name.startswith("enumerate(DataPipe)#")


def role_unions(ev: Events, ka: KernelArgs, j: Join, op_of: np.ndarray) -> list[np.ndarray]:
    """Per role (ROLES order), the union of its intervals over the whole trace."""
    comm_name = np.array([s in COMM_NAMES for s in ev.strings] or [False])
    loader = np.array([_is_loader(s) for s in ev.strings] or [False])
    step = ev.names_matching(STEP_NAME)
    is_k = ev.cat[j.device_idx] == CAT_CODE["kernel"]
    kern, op = j.device_idx[is_k], op_of[is_k]
    comm_k = (op >= 0) & comm_name[ev.name[np.clip(op, 0, None)]]
    host_op = (ev.cat == CAT_CODE["cpu_op"]) & ~step
    comm_host = ev.is_cat("cpu_op", "user_annotation", "gpu_user_annotation") & comm_name[ev.name]
    picks = [kern[~comm_k], np.flatnonzero(ev.cat == CAT_CODE["gpu_memcpy"]),
             np.flatnonzero(ev.cat == CAT_CODE["gpu_memset"]),
             np.concatenate([kern[comm_k], np.flatnonzero(comm_host)]),
             np.flatnonzero(ev.cat == CAT_CODE["cuda_runtime"]) if ka.legacy_runtime else np.zeros(0, np.int64),
             np.flatnonzero(host_op & loader[ev.name]),
             np.flatnonzero(host_op & ~loader[ev.name] & ~comm_name[ev.name])]
    return [union(ev.ts[p], ev.ts[p] + ev.dur[p]) for p in picks]


def _exclusive(unions: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(steps x roles+1) µs: each elementary segment to the first role covering it; last = other."""
    cuts = np.unique(np.concatenate([u.ravel() for u in unions] + [lo, hi]))
    mid = (cuts[:-1] + cuts[1:]) / 2
    owner = np.full(len(mid), len(unions))
    for r in range(len(unions) - 1, -1, -1):
        u = unions[r]
        if len(u):
            pos = np.searchsorted(u[:, 0], mid, side="right") - 1
            inside = (pos >= 0) & (mid < u[np.clip(pos, 0, None), 1])
            owner[inside] = r
    out = np.zeros((len(lo), len(unions) + 1))
    for i, (a, b) in enumerate(zip(lo.tolist(), hi.tolist())):
        seg = np.clip(np.minimum(cuts[1:], b) - np.maximum(cuts[:-1], a), 0.0, None)
        out[i] = np.bincount(owner, weights=seg, minlength=len(unions) + 1)
    return out


def plugin_breakdown(ev: Events, ka: KernelArgs, j: Join, op_of: np.ndarray,
                     steps: PluginSteps) -> dict[str, Any]:
    """Per plugin step, ms per role, the step's total, and the communication overlap."""
    unions = role_unions(ev, ka, j, op_of)
    lo, hi = steps.start, steps.end
    table = _exclusive(unions, lo, hi) / US_PER_MS
    compute = unions[0] if len(unions[0]) else unions[6]
    both = _intersect(compute, unions[3])
    rows = []
    for i, name in enumerate(steps.names):
        a, b = float(lo[i]), float(hi[i])
        comp, comm = (float(covered(u, a, b)[0]) / US_PER_MS for u in (compute, unions[3]))
        over = float(covered(both, a, b)[0]) / US_PER_MS
        total = (b - a) / US_PER_MS
        rows.append({"step": name, "total_ms": total,
                     **{f"{r}_ms": float(v) for r, v in zip(ROLES + ("other",), table[i].tolist())},
                     "overlap": {"computation_ms": comp, "communication_ms": comm, "overlap_ms": over,
                                 "other_ms": total + over - comp - comm,
                                 "hidden_pct": 100.0 * over / comm if comm > 0 else None}})
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k.endswith("_ms")} if rows else {}
    return {"steps": rows, "mean": mean, "roles": list(ROLES) + ["other"],
            "device_adjusted": steps.device_adjusted}


def _intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection of two disjoint sorted interval lists."""
    if not len(a) or not len(b):
        return np.zeros((0, 2))
    lo = np.maximum(a[:, None, 0], b[None, :, 0]) if len(a) * len(b) <= 4_000_000 else None
    if lo is None:  # large: pairwise by sweep
        out, i, k = [], 0, 0
        while i < len(a) and k < len(b):
            s, e = max(a[i, 0], b[k, 0]), min(a[i, 1], b[k, 1])
            if s < e:
                out.append((s, e))
            if a[i, 1] < b[k, 1]:
                i += 1
            else:
                k += 1
        return np.array(out).reshape(-1, 2)
    hi = np.minimum(a[:, None, 1], b[None, :, 1])
    keep = lo < hi
    return np.column_stack([lo[keep], hi[keep]])
