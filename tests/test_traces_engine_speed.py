"""The engine's faster paths against the plain computations they replace, bit for bit.

Why exact equality: every figure must stay the same float after a speed-up (issue 30), so each
fast path is compared with `==` against the straightforward code it stands for (the one the
engine ran before), on cases that take both its fast path and its fallback.
"""

from __future__ import annotations

import numpy as np
import pytest

from yoloprof.traces.intervals import exclusive_contributions, locate, lookup, union_without_each
from yoloprof.traces.op_table import _merge_duplicates


def _plain_locate(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The last start <= t, kept when t is before its end (the engine's former lookup)."""
    idx = np.searchsorted(starts, t, side="right") - 1
    ok = (idx >= 0) & (t < ends[np.clip(idx, 0, None)])
    return np.where(ok, idx, -1)


def test_lookup_equals_the_plain_search_for_touching_empty_and_overlapping_intervals() -> None:
    rng = np.random.default_rng(3)
    cases = [  # (starts, ends): touching, empty, apart; then overlapping by a little (general path)
        (np.array([0.0, 5.0, 5.0, 9.0]), np.array([5.0, 5.0, 9.0, 12.0])),
        (np.array([1.0, 3.0]), np.array([2.0, 4.0])),
        (np.array([0.0, 4.5, 9.0]), np.array([5.0, 10.0, 12.0])),
    ]
    t = np.concatenate((np.arange(-1.0, 14.0, 0.5), rng.uniform(-1, 14, 200), [np.nan]))
    for starts, ends in cases:
        assert np.array_equal(locate(t, starts, ends), _plain_locate(t, starts, ends))
        labels = np.arange(len(starts)) * 10 + 7
        plain = _plain_locate(t, starts, ends)
        want = np.where(plain >= 0, labels[np.clip(plain, 0, None)], 99)
        got = lookup(t, starts, ends, labels, 99)
        assert got.dtype == np.int64 and np.array_equal(got, want)
    assert np.array_equal(locate(t, np.zeros(0), np.zeros(0)), np.full(len(t), -1))


def test_union_without_each_label_equals_recomputing_the_rest() -> None:
    rng = np.random.default_rng(7)
    for trial in range(30):
        n = int(rng.integers(1, 300))
        # integer-ish times: many equal starts and ends, so ties and shared extremes happen
        start = np.round(rng.uniform(0, 50, n)) * (0.5 if trial % 2 else 1.0)
        end = start + np.round(rng.uniform(-1, 8, n))  # some end before their start (clipped)
        group = rng.integers(0, 1 + trial % 3, n)
        label = rng.integers(0, 1 + trial % 5, n)
        if trial % 4 == 0:
            label[np.argmin(start)] = 9  # a label alone holding the earliest start: fallback
        if trial % 6 == 1:
            label[group == 0] = 8  # a label holding a whole group: fallback
        labels = sorted(set(label.tolist()))
        got = union_without_each(start, end, group, label, labels)
        for lab in labels:
            rest = label != lab
            want = float(exclusive_contributions(start[rest], end[rest], group[rest]).sum())
            assert got[lab] == want, (trial, lab)


def _plain_merge(names: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Pointer jumping over every node (the former loop)."""
    has = parent >= 0
    n_children = np.bincount(parent[has], minlength=len(parent))
    kept = np.ones(len(parent), bool)
    child = np.flatnonzero(has)
    par = parent[child]
    kept[child] = ~((names[child] == names[par]) & (n_children[par] == 1))
    rep = np.arange(len(parent))
    rep[~kept] = parent[~kept]
    while True:
        nxt = rep[rep]
        if np.array_equal(nxt, rep):
            break
        rep = nxt
    parent[child] = rep[par]
    return kept


def test_merging_duplicates_moves_only_the_dropped_nodes_to_the_same_ancestors() -> None:
    # a chain of same-name only children (0 > 1 > 2 > 3), a pair (4 > 5), siblings (6 > 7, 8)
    names = np.array([1, 1, 1, 1, 2, 2, 3, 3, 3, 4])
    parent = np.array([-1, 0, 1, 2, -1, 4, -1, 6, 6, 3])
    mine, plain = parent.copy(), parent.copy()
    kept = _merge_duplicates(names, mine, np.arange(len(names)))
    assert np.array_equal(kept, _plain_merge(names, plain)) and np.array_equal(mine, plain)
    assert kept.tolist() == [True, False, False, False, True, False, True, True, True, True]
    assert mine[9] == 0  # lifted past the three merged duplicates


def _nested_events(rng: np.random.Generator, depth: int) -> tuple[np.ndarray, ...]:
    """Sorted (thread, start, longest first) columns of properly nested events on two threads,
    in preorder: each span holds a few children one after another (some empty, some as long as
    their parent), at most `depth` deep."""
    ts: list[float] = []
    end: list[float] = []
    thread: list[int] = []

    def spans(lo: float, hi: float, level: int, th: int) -> None:
        t = lo
        while level < depth and t < hi and len(ts) < 3000 and rng.random() < 0.9:
            start = t + float(rng.integers(0, 3))
            stop = min(hi, start + float(rng.integers(0, max(2, int(hi - start) // 2 + 2))))
            if start > stop:
                break
            ts.append(start)
            end.append(stop)
            thread.append(th)
            spans(start, stop, level + 1, th)
            t = stop
    for th in (0, 1):
        spans(0.0, 5000.0, 0, th)
    for i in range(depth):  # and a chain `depth` deep on a third thread
        ts.append(float(i))
        end.append(100.0 - i)
        thread.append(2)
    ts_s, end_s = np.array(ts), np.array(end)
    thresh = np.where(end_s > ts_s, np.nextafter(end_s, -np.inf), ts_s)
    return ts_s, end_s, thresh, np.array(thread)


def test_parents_level_by_level_equal_the_sorted_search(monkeypatch) -> None:
    import yoloprof.traces.op_table as ot

    rng = np.random.default_rng(11)
    for depth in (1, 3, 6, 20):
        cols = _nested_events(rng, depth)
        shallow = ot._nested_parents(*cols)
        monkeypatch.setattr(ot, "SHALLOW_DEPTH", 0)  # every tree through the sort and search
        searched = ot._nested_parents(*cols)
        monkeypatch.undo()
        assert searched is not None and shallow is not None and np.array_equal(shallow, searched), depth
        ts_s, end_s, thresh, thread = cols
        children = np.flatnonzero(shallow >= 0)
        if not len(children):
            continue
        bad = end_s.copy()
        child = int(children[0])
        bad[child] = end_s[shallow[child]] + 5.0  # a child overrunning its parent: no nesting
        assert ot._nested_parents(ts_s, bad, np.where(bad > ts_s, np.nextafter(bad, -np.inf), ts_s),
                                  thread) is None


@pytest.mark.parametrize("seed", range(3))
def test_distinct_codes_equal_numpys_unique(seed) -> None:
    """`grouping.distinct` (a count table for a narrow span of integers) against `np.unique`:
    the same sorted values and inverse, for device ids with negatives, a wide span (the sort
    path), unsigned codes and an empty column."""
    from yoloprof.traces.grouping import distinct

    rng = np.random.default_rng(seed)
    cases = [rng.integers(-3, 9, 500).astype(np.int32), rng.integers(0, 1 << 20, 300),
             rng.integers(0, 5, 200).astype(np.uint8), np.zeros(0, np.int64)]
    for codes in cases:
        values, inverse = distinct(codes)
        want_values, want_inverse = np.unique(codes, return_inverse=True)
        assert values.dtype == want_values.dtype
        assert np.array_equal(values, want_values) and np.array_equal(inverse, want_inverse)
