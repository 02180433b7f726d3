"""Which op launched each kernel, the kernel table grouped by launch, and Tensor Core eligibility.

Why by time on the launching thread: the `External id` that torch-tb-profiler uses to tie a
kernel to its op names the innermost cpu op open on the thread when the runtime call was made,
which is the op found here from the launch call's start; it needs no extra args decoded. A
kernel without a launch call in the trace (an orphan) has no op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yoloprof.metrics.categories import TC_ELIGIBLE_OPS, is_tensorcore
from yoloprof.traces.correlate import Join
from yoloprof.traces.kernel_args import KernelArgs
from yoloprof.traces.parse import CAT_CODE, US_PER_MS, Events
from yoloprof.traces.profiler_steps import STEP_NAME

NO_OP = "(no op)"
COMM_NAMES = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                       for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"))


def op_events(ev: Events) -> np.ndarray:
    """The ops a launch can name: cpu ops, not the ProfilerStep spans. Kineto gives a runtime
    call the `External id` of the innermost *cpu op* open on its thread, not of a
    `user_annotation` (a `nccl:all_reduce` annotation inside `record_param_comms` is skipped)."""
    return np.flatnonzero((ev.cat == CAT_CODE["cpu_op"]) & ~ev.names_matching(STEP_NAME))


def innermost(ev: Events, ops: np.ndarray, thread: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per query (thread, time): the innermost op of `ops` open on that thread at that time
    (-1 for none). One sweep per thread with a stack of open ops."""
    out = np.full(len(t), -1, np.int64)
    for th in np.unique(thread).tolist():
        q = np.flatnonzero(thread == th)
        o = ops[ev.thread[ops] == th]
        o = o[np.lexsort((-ev.dur[o], ev.ts[o]))]  # start, then the longer (outer) first
        starts, ends = ev.ts[o].tolist(), (ev.ts[o] + ev.dur[o]).tolist()
        qs = q[np.argsort(t[q], kind="stable")]
        stack: list[int] = []
        j = 0
        for qi, tq in zip(qs.tolist(), t[qs].tolist()):
            while j < len(o) and starts[j] <= tq:
                while stack and ends[stack[-1]] < starts[j]:
                    stack.pop()
                stack.append(j)
                j += 1
            while stack and ends[stack[-1]] < tq:
                stack.pop()
            out[qi] = int(o[stack[-1]]) if stack else -1
    return out


def calling_ops(ev: Events, j: Join) -> np.ndarray:
    """Per device event of the join (`j.device_idx` order): the event index of its launching
    op, -1 for orphans and launches outside every op."""
    ops = op_events(ev)
    has = j.host_idx >= 0
    out = np.full(len(j.device_idx), -1, np.int64)
    host = j.host_idx[has]
    out[has] = innermost(ev, ops, ev.thread[host], ev.ts[host])
    return out


def launch_table(ev: Events, ka: KernelArgs, j: Join, op_of: np.ndarray, n_steps: int,
                 top: int = 50) -> list[dict[str, Any]]:
    """Kernels grouped by (name, calling op, grid | block, registers per thread, shared memory):
    calls, total and mean time, duration-weighted mean blocks per SM and occupancy (absent = n/a
    here, not 0: a launch group shares one configuration)."""
    kern = j.device_idx[ev.cat[j.device_idx] == CAT_CODE["kernel"]]
    op = op_of[ev.cat[j.device_idx] == CAT_CODE["kernel"]]
    op_name = np.where(op >= 0, ev.name[np.clip(op, 0, None)], -1)
    regs = np.nan_to_num(ka.registers[kern], nan=-1).astype(np.int64)
    smem = np.nan_to_num(ka.shared_memory[kern], nan=-1).astype(np.int64)
    keys = np.column_stack([ev.name[kern], op_name, ka.launch[kern], regs, smem])
    if not len(keys):
        return []
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.ravel()
    dur = ev.dur[kern]
    tot = np.bincount(inv, weights=dur, minlength=len(uniq))
    rows = []
    for g in np.argsort(-tot, kind="stable")[: top if top > 0 else None].tolist():
        sel = inv == g
        name, opn, launch, r, s = uniq[g].tolist()
        rows.append({"name": ev.strings[name], "op": ev.strings[opn] if opn >= 0 else NO_OP,
                     "launch": ka.launches[launch] if launch >= 0 else None,
                     "grid": ka.launches[launch].split(" | ")[0] if launch >= 0 else None,
                     "block": ka.launches[launch].split(" | ")[1] if launch >= 0 else None,
                     "registers_per_thread": r if r >= 0 else None, "shared_memory": s if s >= 0 else None,
                     "calls": int(sel.sum()), "total_ms": float(tot[g]) / US_PER_MS,
                     "ms_per_step": float(tot[g]) / US_PER_MS / max(n_steps, 1),
                     "mean_us": float(tot[g]) / max(int(sel.sum()), 1),
                     "mean_blocks_per_sm": _weighted(ka.blocks_per_sm[kern][sel], dur[sel]),
                     "mean_occupancy_pct": _weighted(ka.occupancy[kern][sel], dur[sel])})
    return rows


def _weighted(values: np.ndarray, w: np.ndarray) -> float | None:
    ok = np.isfinite(values)
    if not ok.any() or w[ok].sum() <= 0:
        return None
    return float((values[ok] * w[ok]).sum() / w[ok].sum())


def tensor_cores(ev: Events, j: Join, op_of: np.ndarray) -> dict[str, Any]:
    """Kernel time launched by Tensor-Core-eligible ops (torch-tb-profiler's op list, and any op
    that launched a Tensor Core kernel) as a share of the kernel time launched by ops, and how
    much of that eligible time ran in Tensor Core kernels (names, `metrics.categories`)."""
    is_k = ev.cat[j.device_idx] == CAT_CODE["kernel"]
    kern, op = j.device_idx[is_k], op_of[is_k]
    dur = ev.dur[kern]
    tc = np.array([is_tensorcore(s) for s in ev.strings] or [False])[ev.name[kern]]
    with_op = op >= 0
    eligible_name = np.array([s in TC_ELIGIBLE_OPS for s in ev.strings] or [False])
    launched_tc = np.zeros(len(ev), bool)
    launched_tc[op[with_op & tc]] = True
    elig = with_op & (eligible_name[ev.name[np.clip(op, 0, None)]] | launched_tc[np.clip(op, 0, None)])
    op_time, elig_time = float(dur[with_op].sum()), float(dur[elig].sum())
    return {"kernel_ms": float(dur.sum()) / US_PER_MS, "kernel_ms_in_ops": op_time / US_PER_MS,
            "eligible_ms": elig_time / US_PER_MS,
            "eligible_pct": 100.0 * elig_time / op_time if op_time > 0 else None,
            "eligible_tc_pct": 100.0 * float(dur[elig & tc].sum()) / elig_time if elig_time > 0 else None,
            "tensorcore_pct": 100.0 * float(dur[tc].sum()) / float(dur.sum()) if dur.sum() > 0 else None,
            "eligible_ops": sorted({ev.strings[ev.name[o]] for o in op[elig].tolist()})[:20]}
