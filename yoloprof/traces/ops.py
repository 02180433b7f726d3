"""CPU operators as torch's `key_averages()` counts them: calls, self and inclusive time, memory.

Why a nesting tree per thread: inclusive durations of nested ops (`aten::linear` > `aten::addmm`
> ...) summed as if they were disjoint count the same microsecond several times. Self time = own
duration minus the part covered by direct children on the same thread (children that overrun
their parent, timestamp rounding, are clipped to the parent's end).

Why same-name merging: the profiler records some ops twice, nested (`aten::div` inside
`aten::div` from `x.mean(...).sum().backward()`). torch's `EventList._remove_dup_nodes` drops a
child that has its parent's name and is the parent's only child (its children move up), so
`key_averages()` counts one call. We apply the same rule, or calls and inclusive time double.

Memory (profile_memory=True): like torch, an op's inclusive memory is every `[memory]` event whose
time falls in [start, end] (any thread), and self memory is inclusive minus its children's
inclusive. Allocations (positive bytes) and frees (negative) are kept apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from yoloprof.traces.parse import Events


@dataclass
class OpTable:
    """Per op event of `idx` (same order): kept (not a merged duplicate), self time, memory."""

    kept: np.ndarray
    self_us: np.ndarray
    self_alloc: np.ndarray | None = None  # bytes allocated by the op itself (not its children)
    self_freed: np.ndarray | None = None  # bytes freed, as a positive number


def _tree(ev: Events, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent position or -1, processing order): parents found with a stack per thread over
    events sorted by (thread, start, longest first), as torch's `_populate_cpu_children` does."""
    ts, dur, thread = ev.ts[idx], ev.dur[idx], ev.thread[idx]
    order = np.lexsort((-dur, ts, thread))
    parent = np.full(len(idx), -1, np.int64)
    ts_l, end_l, thr_l = ts.tolist(), (ts + dur).tolist(), thread.tolist()
    stack: list[tuple[float, int]] = []
    current = None
    for i in order.tolist():
        if thr_l[i] != current:
            stack.clear()
            current = thr_l[i]
        while stack and stack[-1][0] <= ts_l[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1][1]
        stack.append((end_l[i], i))
    return parent, order


def _merge_duplicates(names: np.ndarray, parent: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Drop a child that has its parent's name and is its only child (torch's rule); the dropped
    one's children are lifted to the parent. Returns the kept mask; `parent` is updated in place.
    Parents come before children in `order`, so one pass reaches torch's fixpoint."""
    n_children = np.bincount(parent[parent >= 0], minlength=len(parent))
    alias = np.arange(len(parent))
    kept = np.ones(len(parent), bool)
    names_l = names.tolist()
    for i in order.tolist():
        p = parent[i]
        if p < 0:
            continue
        p = alias[p]
        parent[i] = p
        if names_l[p] == names_l[i] and n_children[p] == 1:
            kept[i] = False
            alias[i] = p
            n_children[p] = n_children[i]
    return kept


def _memory_in(ev: Events, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(allocated, freed) bytes of the `[memory]` events in each [start, end] (inclusive)."""
    mem = ev.memory
    t = mem.ts
    order = np.argsort(t, kind="stable")
    t, nbytes = t[order], np.nan_to_num(mem.nbytes[order])
    cum_alloc = np.concatenate(([0.0], np.cumsum(np.maximum(nbytes, 0.0))))
    cum_freed = np.concatenate(([0.0], np.cumsum(np.maximum(-nbytes, 0.0))))
    lo = np.searchsorted(t, start, side="left")
    hi = np.searchsorted(t, end, side="right")
    return cum_alloc[hi] - cum_alloc[lo], cum_freed[hi] - cum_freed[lo]


def op_table(ev: Events, idx: np.ndarray) -> OpTable:
    """Self time (µs) and self memory of each op event in `idx`, nesting among `idx` only."""
    if len(idx) == 0:
        return OpTable(np.zeros(0, bool), np.zeros(0))
    parent, order = _tree(ev, idx)
    kept = _merge_duplicates(ev.name[idx], parent, order)
    ts, dur = ev.ts[idx], ev.dur[idx]
    child = np.flatnonzero(kept & (parent >= 0))
    par = parent[child]
    # A child's time covered by its parent: clipped at the parent's end.
    covered = np.minimum(ts[child] + dur[child], ts[par] + dur[par]) - ts[child]
    self_us = dur - np.bincount(par, weights=np.maximum(covered, 0.0), minlength=len(idx))
    out = OpTable(kept, np.maximum(self_us, 0.0))
    if len(ev.memory):
        alloc, freed = _memory_in(ev, ts, ts + dur)
        out.self_alloc = alloc - np.bincount(par, weights=alloc[child], minlength=len(idx))
        out.self_freed = freed - np.bincount(par, weights=freed[child], minlength=len(idx))
    return out


def self_times(ev: Events, idx: np.ndarray) -> np.ndarray:
    """Self time (µs) of each event in `idx` (same order); merged duplicates get 0."""
    table = op_table(ev, idx)
    return np.where(table.kept, table.self_us, 0.0)
