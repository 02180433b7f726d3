"""Vectorised interval arithmetic shared by the engine (unions, exclusive shares, lookups).

Why "exclusive contributions" instead of a plain union length: sorting intervals by start and
crediting each one only with the time it adds beyond everything that started before it splits a
union exactly among its intervals. Summing those credits by any label (phase, category, step)
gives parts that add up to the union, so concurrent streams are never counted twice and the
per-phase device times add up to the device busy time.
"""

from __future__ import annotations

import numpy as np


def exclusive_contributions(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For each interval, the time it adds to the union of its group (same order as the input).

    Groups are made disjoint in time by offsetting each one past the previous, so one
    `maximum.accumulate` handles all groups at once."""
    n = len(start)
    out = np.zeros(n)
    if n == 0:
        return out
    start = np.asarray(start, np.float64)
    end = np.maximum(np.asarray(end, np.float64), start)
    lo = float(start.min())
    span = float(end.max()) - lo + 1.0
    codes, n_groups = _dense_ranks(np.asarray(group))
    ranks = codes.astype(np.float64)
    s = start - lo + ranks * span * 2.0
    e = end - lo + ranks * span * 2.0
    # One group: lexsort's primary key is constant, so its order is the stable sort by start.
    order = np.argsort(s, kind="stable") if n_groups == 1 else np.lexsort((s, ranks))
    s_sorted, e_sorted = s[order], e[order]
    reach = np.maximum.accumulate(e_sorted)
    prev = np.concatenate(([-np.inf], reach[:-1]))
    out[order] = np.maximum(0.0, e_sorted - np.maximum(s_sorted, prev))
    return out


def _dense_ranks(group: np.ndarray) -> tuple[np.ndarray, int]:
    """(`np.unique(group, return_inverse=True)[1]`, number of distinct values): by a count table
    for small non-negative integer codes (device codes: no sort), else by `np.unique`."""
    if group.dtype.kind in "iu" and int(group.min()) >= 0 and int(group.max()) < 1 << 16:
        present = np.bincount(group) > 0
        lut = np.cumsum(present) - 1
        return lut[group], int(present.sum())
    uniq, inv = np.unique(group, return_inverse=True)
    return inv, len(uniq)


def union_length(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of intervals."""
    return float(exclusive_contributions(start, end, np.zeros(len(start), np.int64)).sum())


def locate(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the interval (sorted by start, not overlapping) that contains each t, else -1."""
    return lookup(t, starts, ends, np.arange(len(starts)), -1)


def lookup(t: np.ndarray, starts: np.ndarray, ends: np.ndarray, values: np.ndarray,
           default: int) -> np.ndarray:
    """`values[i]` for each t in interval i ([start, end), sorted by start), else `default`: the
    same as `np.where(locate(t) >= 0, values[locate(t)], default)`, in int64.

    Why interleaved bounds: when the intervals are disjoint (start0 <= end0 <= start1 <= ...),
    the number k of bounds <= t says it all (k odd: inside interval k // 2; even: in a gap), so
    one binary search and one table lookup per t replace the search, the end test and the
    masks (a large trace looks up millions of times). Intervals that overlap a little (steps
    overlapping by up to 1 µs are kept, `profiler_steps.find_steps`) take the general path:
    the last start <= t, kept when t is before its end."""
    t = np.asarray(t, np.float64)
    n = len(starts)
    values = np.asarray(values, np.int64)
    if n == 0:
        return np.full(len(t), default, np.int64)
    bounds = np.empty(2 * n)
    bounds[0::2], bounds[1::2] = starts, ends
    if bool((bounds[1:] >= bounds[:-1]).all()):  # False with a NaN bound: the general path
        table = np.full(2 * n + 1, default, np.int64)
        table[1::2] = values
        return table[np.searchsorted(bounds, t, side="right")]
    idx = np.searchsorted(starts, t, side="right") - 1
    ok = (idx >= 0) & (t < ends[np.clip(idx, 0, None)])
    return np.where(ok, values[np.clip(idx, 0, None)], default)


def overlap_by_label(seg_start: np.ndarray, seg_end: np.ndarray, seg_label: np.ndarray,
                     lo: float, hi: float, n_labels: int) -> np.ndarray:
    """Time of [lo, hi) covered by each label's segments (segments must not overlap)."""
    covered = np.clip(np.minimum(seg_end, hi) - np.maximum(seg_start, lo), 0.0, None)
    return np.bincount(seg_label, weights=covered, minlength=n_labels)[:n_labels]
