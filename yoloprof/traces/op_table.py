"""CPU operators as torch's `key_averages()` counts them: calls, self and inclusive time, memory.

Why a nesting tree per thread: inclusive durations of nested ops (`aten::linear` > `aten::addmm`
> ...) summed as if they were disjoint count the same microsecond several times. Self time = own
duration minus the durations of its direct children on the same thread.

Which events are nodes (torch's `EventList._populate_cpu_children` over every synchronous CPU-side
event): ops, user annotations, Python functions and the runtime/driver API calls the profiler
records on the host (`cudaLaunchKernel`, `cudaMalloc`, `hipLaunchKernel`, `cuLaunchKernel`...;
category `cuda_runtime`/`cuda_driver`, `Runtime` in 2021 traces). A runtime call made inside an op
is that op's child, so its time is not the op's self time; the calls are rows of their own
(`ROW_CATS`), as in `key_averages()`. Names torch drops before building the tree
(`profiler_util._filter_name`) are no nodes at all (`UNRECORDED`).

Who is whose child (torch's stack walk): events of a thread sorted by (start, longest first); an
event is a child of the nearest earlier one that CONTAINS it (start < parent end, end <= parent
end). An event that overruns an open one (timestamp rounding in old traces) is not its child.

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

# Categories whose events are nodes of the tree, and those listed as rows (ops + API calls);
# user annotations and Python functions only nest (they are regions, not operators).
TREE_CATS = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")
ROW_CATS = ("cpu_op", "cuda_runtime", "cuda_driver")
ROW_KIND = {"cpu_op": "op", "cuda_runtime": "runtime", "cuda_driver": "driver"}
# torch.autograd.profiler_util._filter_name: dropped from the event list before the tree is built.
UNRECORDED = frozenset({"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
                        "profiler::_record_function_enter_new", "profiler::_record_function_exit",
                        "aten::is_leaf", "aten::output_nr", "aten::_version"})


@dataclass
class OpTable:
    """Per op event of `idx` (same order): kept (not a merged duplicate), self time, memory."""

    kept: np.ndarray
    self_us: np.ndarray
    self_alloc: np.ndarray | None = None  # bytes allocated by the op itself (not its children)
    self_freed: np.ndarray | None = None  # bytes freed, as a positive number

    def take(self, mask: np.ndarray) -> "OpTable":
        """The rows where `mask` holds (same order)."""
        pick = lambda a: None if a is None else a[mask]  # noqa: E731
        return OpTable(self.kept[mask], self.self_us[mask], pick(self.self_alloc), pick(self.self_freed))


def _tree(ev: Events, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent position or -1, processing order): the parents that torch's `_populate_cpu_children`
    finds with a stack per thread over events sorted by (thread, start, longest first).

    Why no stack: torch pops the top while the new event i starts at/after its end or ends after
    it, so the parent of i is the LAST earlier event r of the thread with end(r) >= end(i) and
    end(r) > start(i): r is never popped before i (an event that popped it would itself qualify
    and be later), and everything above r fails the test for i. That is "last earlier position
    with end > t(i)", t(i) = the float just below end(i) (start(i) for an empty event). Properly
    nested events (every real trace seen) get it in a few linear passes (`_nested_parents`,
    checked); otherwise by binary lifting over range maxima of the ends (`_lifted_parents`, log2(n)
    vectorised steps). tests/test_traces_ops_tree.py checks both against torch's stack walk."""
    ts, dur, thread = ev.ts[idx], ev.dur[idx], ev.thread[idx]
    order = _sorted_order(ts, dur, thread)
    # Sorted copies, each unsorted one freed at once (a large trace's tree is the engine's
    # largest working set: every array here is 8 bytes per host event).
    ts_s, dur_s, thread_s = ts[order], dur[order], thread[order]
    del ts, dur, thread
    end_s = ts_s + dur_s
    thresh = np.where(dur_s > 0, np.nextafter(end_s, -np.inf), ts_s)  # threshold t(i)
    del dur_s
    pos = _nested_parents(ts_s, end_s, thresh, thread_s)
    del ts_s
    if pos is None:
        pos = _lifted_parents(end_s, thresh, thread_s)
    del end_s, thresh, thread_s
    found = pos >= 0
    parent = np.full(len(order), -1, np.int64)
    parent[order[found]] = order[pos[found]]
    return parent, order


def _sorted_order(ts: np.ndarray, dur: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """`np.lexsort((-dur, ts, thread))`, faster: events come nearly in time order, so stable
    sorts by start then thread are quick; only runs of equal (thread, start) are then sorted by
    duration, longest first (stable: equal keys keep their order, as lexsort keeps them)."""
    order = np.argsort(ts, kind="stable")
    order = order[np.argsort(thread[order], kind="stable")]
    ts_s, thread_s = ts[order], thread[order]
    tie = (ts_s[1:] == ts_s[:-1]) & (thread_s[1:] == thread_s[:-1])
    if tie.any():
        run = np.cumsum(np.concatenate(([True], ~tie))) - 1
        sub = np.flatnonzero(np.bincount(run)[run] > 1)
        order[sub] = order[sub][np.lexsort((-dur[order[sub]], run[sub]))]
    return order


def _nested_parents(ts_s: np.ndarray, end_s: np.ndarray, thresh: np.ndarray, thread_s: np.ndarray
                    ) -> np.ndarray | None:
    """Sorted position of each sorted event's parent (-1 for none), or None when the events are
    not properly nested (an overrunning child: `_lifted_parents` then decides).

    Why this is torch's answer when the check passes: assuming nesting, the events open at i are
    those j < i whose end is after i's start, i.e. i lies before close(j), the first later start
    at or after end(j) (a binary search per thread); a running sum gives each event's depth, and
    the parent is the last earlier event one level up. That forest is a preorder, so everything
    between i and its candidate parent p lies in the subtrees of i's earlier siblings. The check:
    end(p) > t(i) for every parent (so a parent ends no earlier than its child), and end <= t of
    the next sibling for consecutive siblings (roots of a thread included). Then every event
    between p and i ends at or before t(i) while p ends after it: p is the last earlier event
    with end > t(i), the rule of `_tree`, whatever the candidates were."""
    n = len(ts_s)
    cuts = (np.flatnonzero(np.diff(thread_s)) + 1).tolist()
    close = np.empty(n, np.int64)
    for a, b in zip([0] + cuts, cuts + [n]):  # one binary search per thread
        close[a:b] = a + np.searchsorted(ts_s[a:b], end_s[a:b], side="left")
    np.maximum(close, np.arange(1, n + 1), out=close)  # an empty event closes at once
    step = np.bincount(close, minlength=n + 1)
    del close
    np.negative(step, out=step)
    step[1:] += 1
    depth = np.cumsum(step, out=step)[:n]  # >= 0: the events open at each position
    if n and int(depth.max()) < SHALLOW_DEPTH:
        return _shallow_parents(depth, end_s, thresh, thread_s)
    small = depth.astype(np.int16) if n and depth.max() < 2**15 else depth  # radix sort
    by_depth = np.argsort(small, kind="stable")  # grouped by depth, positions ascending
    del small
    level = depth[by_depth]
    del depth, step
    keys = level * n
    keys += by_depth
    up = np.searchsorted(keys, keys - n)  # ascending queries: one sweep through the keys
    del keys
    up -= 1
    np.maximum(up, 0, out=up)
    found = by_depth[up]
    del up
    found[level <= 0] = -1
    parent = np.empty(n, np.int64)
    parent[by_depth] = found
    del found
    has = parent >= 0
    if not np.all(end_s[parent[has]] > thresh[has]):
        return None
    del has
    sib, thread_d = parent[by_depth], thread_s[by_depth]
    same = (sib[1:] == sib[:-1]) & (level[1:] == level[:-1]) & (thread_d[1:] == thread_d[:-1])
    del sib, thread_d, level
    if not np.all(end_s[by_depth[:-1][same]] <= thresh[by_depth[1:][same]]):
        return None
    return parent


# Trees at most this deep find their parents level by level (`_shallow_parents`: a few passes
# per level) instead of by one sort and one binary search over every node.
SHALLOW_DEPTH = 16


def _shallow_parents(depth: np.ndarray, end_s: np.ndarray, thresh: np.ndarray, thread_s: np.ndarray
                     ) -> np.ndarray | None:
    """`_nested_parents`'s answer and checks, one depth level at a time: the parent of a node of
    depth d is the last earlier node of depth d - 1 (a running maximum of their positions; the
    depth rises by at most one per position, so there is always one), and the consecutive
    siblings checked are consecutive nodes of one level with the same parent and thread (the
    pairs `_nested_parents` takes from its sort by depth). Positions in int32 where they fit:
    half the memory traffic of the running maxima."""
    n = len(depth)
    parent = np.full(n, -1, np.int64)
    positions = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    last = None  # the last position of depth d - 1 at or before each position
    deepest = int(depth.max())
    for d in range(deepest + 1):
        at = depth == d
        here = np.flatnonzero(at)
        if last is not None:
            up = last[here]
            if not np.all(end_s[up] > thresh[here]):  # a parent ending before its child ends
                return None
            parent[here] = up
            del up
        if d < deepest:
            last = np.where(at, positions, -1)
            np.maximum.accumulate(last, out=last)
        del at
        a, b = here[:-1], here[1:]
        same = (parent[a] == parent[b]) & (thread_s[a] == thread_s[b])
        if not np.all(end_s[a[same]] <= thresh[b[same]]):  # a sibling overrunning the next
            return None
    return parent


def _lifted_parents(end_s: np.ndarray, thresh: np.ndarray, thread_s: np.ndarray) -> np.ndarray:
    """Sorted position of each sorted event's parent (-1 for none) for any events: the last
    earlier position of the thread with end > t(i), by binary lifting over range maxima."""
    n = len(end_s)
    # level k: [p] = max end over sorted positions [p - 2**k + 1, p]. For a large tree only the
    # even levels are kept (an odd one is two lookups into the level below, `_level_at`): half
    # the memory of a multi-GB trace's tree, the same maxima, 20% more time.
    levels, prev, top = {0: end_s}, end_s, 0
    while (1 << (top + 1)) <= n:
        half = 1 << top
        cur = prev.copy()
        np.maximum(prev[half:], prev[:-half], out=cur[half:])
        prev, top = cur, top + 1
        if top % 2 == 0 or n < LEAN_TREE_EVENTS:
            levels[top] = cur
    del prev
    pos = np.arange(-1, n - 1)  # candidate parent position, moved back while all ends <= t(i)
    for k in range(top, -1, -1):
        done = _level_at(levels, k, np.maximum(pos, 0)) <= thresh
        pos = np.where((pos >= 0) & done, np.maximum(pos - (1 << k), -1), pos)
    found = pos >= 0
    found[found] = thread_s[pos[found]] == thread_s[found]
    return np.where(found, pos, -1)


# Tree nodes from which `_tree` keeps only the even levels of its range maxima.
LEAN_TREE_EVENTS = 1 << 19


def _level_at(levels: dict[int, np.ndarray], k: int, q: np.ndarray) -> np.ndarray:
    """Level k of the range maxima at positions q: kept, or (an odd level of a large tree)
    max(level k-1 at q, at q - 2**(k-1)) where that position exists, as it was built."""
    if k in levels:
        return levels[k][q]
    below, back = levels[k - 1], q - (1 << (k - 1))
    return np.where(back >= 0, np.maximum(below[q], below[np.maximum(back, 0)]), below[q])


def _merge_duplicates(names: np.ndarray, parent: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Drop a child that has its parent's name and is its parent's only child (torch's rule); the
    dropped one's children are lifted to the nearest kept ancestor. Returns the kept mask;
    `parent` is updated in place.

    torch applies the rule until nothing changes; since a merged child hands its parent its own
    child count, a chain of same-name only children collapses into its top, which is the same as
    testing every child against its ORIGINAL parent's name and child count (tests check this
    against the one-pass sequential version). `order` is unused (kept for the callers' API)."""
    has = parent >= 0
    n_children = np.bincount(parent[has], minlength=len(parent))
    kept = np.ones(len(parent), bool)
    child = np.flatnonzero(has)
    par = parent[child]
    kept[child] = ~((names[child] == names[par]) & (n_children[par] == 1))
    rep = np.arange(len(parent))  # nearest kept ancestor-or-self (pointer jumping)
    # Only the dropped ones move (a kept node is its own representative): jumping over them
    # alone reaches the same fixed point as jumping over every node, at a fraction of the cost.
    drop = np.flatnonzero(~kept)
    up = parent[drop]
    rep[drop] = up
    while True:
        nxt = rep[up]
        if np.array_equal(nxt, up):
            break
        rep[drop] = up = nxt
    parent[child] = rep[par]
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
    alloc, freed = cum_alloc[hi], cum_freed[hi]
    alloc -= cum_alloc[lo]
    freed -= cum_freed[lo]
    return alloc, freed


@dataclass
class Nesting:
    """The tree's part of an `OpTable` (`op_nesting`): kept, self time, and each kept child's
    parent (`child[k]`'s parent is `par[k]`, positions in `idx`), for the memory's subtraction."""

    kept: np.ndarray
    self_us: np.ndarray
    child: np.ndarray
    par: np.ndarray


def op_nesting(ev: Events, idx: np.ndarray) -> Nesting:
    """Self time (µs) of each op event in `idx`, nesting among `idx` only: the tree's share of
    `op_table` (what a helper computes while the caller reads the memory, `memory_inclusive`)."""
    if len(idx) == 0:
        none = np.zeros(0, np.int64)
        return Nesting(np.zeros(0, bool), np.zeros(0), none, none)
    parent, order = _tree(ev, idx)
    kept = _merge_duplicates(ev.name[idx], parent, order)
    del order
    ts, dur = ev.ts[idx], ev.dur[idx]
    end = ts + dur
    child = np.flatnonzero(kept & (parent >= 0))
    par = parent[child]
    del parent
    # A child lies inside its parent (the tree's rule); the clip only guards float noise.
    covered = np.minimum(end[child], end[par])
    covered -= ts[child]
    np.maximum(covered, 0.0, out=covered)
    self_us = dur - np.bincount(par, weights=covered, minlength=len(idx))
    return Nesting(kept, np.maximum(self_us, 0.0, out=self_us), child, par)


def memory_inclusive(ev: Events, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(allocated, freed) bytes of the `[memory]` events inside each op of `idx` (inclusive, the
    tree not needed), None for a trace without memory events."""
    if not len(ev.memory):
        return None
    ts = ev.ts[idx]
    return _memory_in(ev, ts, ts + ev.dur[idx])


def with_memory(nest: Nesting, inclusive: tuple[np.ndarray, np.ndarray] | None) -> OpTable:
    """The OpTable of a nesting and its ops' inclusive memory: self memory is inclusive minus the
    kept children's inclusive."""
    out = OpTable(nest.kept, nest.self_us)
    if inclusive is not None:
        alloc, freed = inclusive
        n = len(nest.kept)
        alloc -= np.bincount(nest.par, weights=alloc[nest.child], minlength=n)
        freed -= np.bincount(nest.par, weights=freed[nest.child], minlength=n)
        out.self_alloc, out.self_freed = alloc, freed
    return out


def op_table(ev: Events, idx: np.ndarray) -> OpTable:
    """Self time (µs) and self memory of each op event in `idx`, nesting among `idx` only."""
    if len(idx) == 0:
        return OpTable(np.zeros(0, bool), np.zeros(0))
    return with_memory(op_nesting(ev, idx), memory_inclusive(ev, idx))


def tree_events(ev: Events) -> np.ndarray:
    """Indices of the events that are nodes of torch's tree (`TREE_CATS`, minus `UNRECORDED`)."""
    dropped = np.fromiter((s in UNRECORDED for s in ev.strings), bool, len(ev.strings))
    keep = ev.is_cat(*TREE_CATS)
    if len(ev.strings):
        keep &= ~dropped[ev.name]
    return np.flatnonzero(keep)


def self_times(ev: Events, idx: np.ndarray) -> np.ndarray:
    """Self time (µs) of each event in `idx` (same order); merged duplicates get 0."""
    table = op_table(ev, idx)
    return np.where(table.kept, table.self_us, 0.0)
