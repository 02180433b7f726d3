"""The op tree without a per-op Python loop (traces/op_table.py) against the stack walk it replaced.

The reference below is the plain-Python algorithm torch's `_populate_cpu_children` and
`_remove_dup_nodes` use (a stack per thread; one sequential pass of same-name merging), kept here
verbatim as the independent check: every fixture trace and random nestings with overrunning
children, equal starts and same-name chains must give the same parents and kept masks.
"""

from __future__ import annotations

import gzip
from types import SimpleNamespace

import numpy as np
import pytest

from helpers.paths import TRACES
from yoloprof.traces.op_table import _merge_duplicates, _tree, tree_events
from yoloprof.traces.parse import parse_trace_bytes


def _stack_tree(ts, dur, thread):
    """torch's `_populate_cpu_children` loop: pop while the event starts at/after the top's end
    or ends after it (a partial overlap is no nesting), else the top is the parent."""
    order = np.lexsort((-dur, ts, thread))
    parent = np.full(len(ts), -1, np.int64)
    ts_l, end_l, thr_l = ts.tolist(), (ts + dur).tolist(), thread.tolist()
    stack, current = [], None
    for i in order.tolist():
        if thr_l[i] != current:
            stack.clear()
            current = thr_l[i]
        while stack and (ts_l[i] >= stack[-1][0] or end_l[i] > stack[-1][0]):
            stack.pop()
        if stack:
            parent[i] = stack[-1][1]
        stack.append((end_l[i], i))
    return parent, order


def _sequential_merge(names, parent, order):
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


def _check(ts, dur, thread, names):
    ev = SimpleNamespace(ts=ts, dur=dur, thread=thread)
    idx = np.arange(len(ts))
    parent, order = _tree(ev, idx)
    ref_parent, ref_order = _stack_tree(ts, dur, thread)
    assert np.array_equal(order, ref_order)
    assert np.array_equal(parent, ref_parent)
    kept = _merge_duplicates(names, parent, order)
    ref_kept = _sequential_merge(names, ref_parent, ref_order)
    assert np.array_equal(kept, ref_kept)
    assert np.array_equal(parent, ref_parent)


@pytest.mark.parametrize("seed", range(8))
def test_random_nestings_match_the_stack_walk(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    # Coarse integer times: many equal starts, equal ends, zero durations and overrunning children.
    ts = rng.integers(0, 60, n).astype(np.float64)
    dur = rng.integers(0, 25, n).astype(np.float64)
    thread = rng.integers(0, 3, n).astype(np.int32)
    names = rng.integers(0, 3, n).astype(np.int32)  # few names: many same-name chains
    _check(ts, dur, thread, names)


def test_same_name_chain_collapses_into_its_top():
    ts = np.array([0.0, 1.0, 2.0, 3.0, 3.5])
    dur = np.array([10.0, 8.0, 6.0, 1.0, 0.5])
    names = np.array([7, 7, 7, 8, 8])
    _check(ts, dur, np.zeros(5, np.int32), names)


def test_overrunning_child_is_no_child():
    # [0,10] holds [2,4]; [3,12] overruns both, so it nests in neither (torch pops them), and
    # [5,6] then nests in [3,12].
    ts = np.array([0.0, 2.0, 3.0, 5.0])
    dur = np.array([10.0, 2.0, 9.0, 1.0])
    parent, _ = _tree(SimpleNamespace(ts=ts, dur=dur, thread=np.zeros(4, np.int32)), np.arange(4))
    assert parent.tolist() == [-1, 0, -1, 2]
    _check(ts, dur, np.zeros(4, np.int32), np.arange(4))


def test_empty_and_single():
    for n in (0, 1):
        _check(np.zeros(n), np.ones(n), np.zeros(n, np.int32), np.zeros(n, np.int32))


@pytest.mark.parametrize("name", sorted(p.name for p in TRACES.glob("*.json.gz")) if TRACES.is_dir() else [])
def test_fixture_traces_match_the_stack_walk(name):
    ev = parse_trace_bytes(gzip.decompress((TRACES / name).read_bytes()))
    idx = tree_events(ev)
    _check(ev.ts[idx], ev.dur[idx], ev.thread[idx], ev.name[idx])


@pytest.mark.parametrize("seed", range(4))
def test_lean_range_maxima_match_the_stack_walk(seed, monkeypatch):
    """A large tree keeps only the even levels of its range maxima (ops.LEAN_TREE_EVENTS): forced
    here on small random nestings, the parents are still the stack walk's."""
    import yoloprof.traces.op_table as ops

    monkeypatch.setattr(ops, "LEAN_TREE_EVENTS", 0)
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 600))
    ts = rng.integers(0, 80, n).astype(np.float64)
    dur = rng.integers(0, 30, n).astype(np.float64)
    thread = rng.integers(0, 2, n).astype(np.int32)
    _check(ts, dur, thread, rng.integers(0, 3, n).astype(np.int32))


def _nested(rng, n):
    """Random properly nested events (a random preorder forest on a few threads): children inside
    their parent, siblings apart, with equal starts, equal ends and empty events."""
    ts, dur, thread = [], [], []
    for t in range(int(rng.integers(1, 4))):
        def fill(lo, hi, depth, t=t):
            at = lo
            while at < hi and len(ts) < n:
                width = float(rng.integers(0, max(1, int(hi - at)) + 1))
                ts.append(at), dur.append(width), thread.append(t)
                if width > 1 and depth < 6:
                    fill(at + float(rng.integers(0, 2)), at + width, depth + 1, t)
                at += width + float(rng.integers(0, 3))
        fill(0.0, 400.0, 0)
    return np.array(ts), np.array(dur), np.array(thread, np.int32)


@pytest.mark.parametrize("seed", range(6))
def test_nested_events_take_the_linear_path_and_match_the_stack_walk(seed):
    from yoloprof.traces import op_table as ops

    rng = np.random.default_rng(200 + seed)
    ts, dur, thread = _nested(rng, int(rng.integers(5, 500)))
    order = np.lexsort((-dur, ts, thread))
    end = (ts + dur)[order]
    thresh = np.where(dur[order] > 0, np.nextafter(end, -np.inf), ts[order])
    assert ops._nested_parents(ts[order], end, thresh, thread[order]) is not None
    _check(ts, dur, thread, rng.integers(0, 3, len(ts)).astype(np.int32))


def test_an_overrun_is_refused_by_the_linear_path():
    from yoloprof.traces import op_table as ops

    ts, dur = np.array([0.0, 2.0, 3.0, 5.0]), np.array([10.0, 2.0, 9.0, 1.0])
    end = ts + dur
    thresh = np.nextafter(end, -np.inf)
    assert ops._nested_parents(ts, end, thresh, np.zeros(4, np.int32)) is None


@pytest.mark.parametrize("name", ["nccl_data.json.gz", "rank0.json.gz"] if TRACES.is_dir() else [])
def test_fixture_traces_binary_lifting_alone_matches(name, monkeypatch):
    """The general path on its own (the linear one refused) gives the stack walk's parents too."""
    from yoloprof.traces import op_table as ops

    monkeypatch.setattr(ops, "_nested_parents", lambda *a: None)
    ev = parse_trace_bytes(gzip.decompress((TRACES / name).read_bytes()))
    idx = tree_events(ev)
    _check(ev.ts[idx], ev.dur[idx], ev.thread[idx], ev.name[idx])
