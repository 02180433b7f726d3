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
    ranks = np.unique(group, return_inverse=True)[1].astype(np.float64)
    s = start - lo + ranks * span * 2.0
    e = end - lo + ranks * span * 2.0
    order = np.lexsort((s, ranks))
    s_sorted, e_sorted = s[order], e[order]
    reach = np.maximum.accumulate(e_sorted)
    prev = np.concatenate(([-np.inf], reach[:-1]))
    out[order] = np.maximum(0.0, e_sorted - np.maximum(s_sorted, prev))
    return out


def union_length(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of intervals."""
    return float(exclusive_contributions(start, end, np.zeros(len(start), np.int64)).sum())


def locate(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the interval (sorted by start, not overlapping) that contains each t, else -1."""
    t = np.asarray(t, np.float64)
    if len(starts) == 0:
        return np.full(len(t), -1, np.int64)
    idx = np.searchsorted(starts, t, side="right") - 1
    ok = (idx >= 0) & (t < ends[np.clip(idx, 0, None)])
    return np.where(ok, idx, -1)


def overlap_by_label(seg_start: np.ndarray, seg_end: np.ndarray, seg_label: np.ndarray,
                     lo: float, hi: float, n_labels: int) -> np.ndarray:
    """Time of [lo, hi) covered by each label's segments (segments must not overlap)."""
    covered = np.clip(np.minimum(seg_end, hi) - np.maximum(seg_start, lo), 0.0, None)
    return np.bincount(seg_label, weights=covered, minlength=n_labels)[:n_labels]
