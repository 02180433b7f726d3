"""Vectorised interval arithmetic shared by the engine (unions, exclusive shares, lookups).

Why "exclusive contributions" instead of a plain union length: sorting intervals by start and
crediting each one only with the time it adds beyond everything that started before it splits a
union exactly among its intervals. Summing those credits by any label (phase, category, step)
gives parts that add up to the union, so concurrent streams are never counted twice and the
per-phase device times add up to the device busy time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from yoloprof.traces.grouping import distinct


def exclusive_contributions(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For each interval, the time it adds to the union of its group (same order as the input).

    Groups are made disjoint in time by offsetting each one past the previous, so one
    `maximum.accumulate` handles all groups at once."""
    if len(start) == 0:
        return np.zeros(0)
    return SortedUnion(*_sorted_shifted(start, end, group)).contributions()


@dataclass
class SortedUnion:
    """The sorted, shifted intervals of `exclusive_contributions` (`sorted_union`), kept so
    that a caller asking for more than the contributions sorts them once."""

    order: np.ndarray
    s_sorted: np.ndarray
    e_sorted: np.ndarray

    def contributions(self) -> np.ndarray:
        out = np.zeros(len(self.order))
        out[self.order] = _credits(self.s_sorted, self.e_sorted)
        return out


def sorted_union(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> SortedUnion | None:
    """The intervals sorted as `exclusive_contributions` sorts them; None when there are none."""
    return SortedUnion(*_sorted_shifted(start, end, group)) if len(start) else None


def _sorted_shifted(start: np.ndarray, end: np.ndarray, group: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, shifted starts, shifted ends in that order) of `exclusive_contributions`: each
    group offset past the previous (start - lo + rank * span * 2), sorted by (group, start),
    ties in input order. The arithmetic is done in place, in the same operations and order."""
    start = np.asarray(start, np.float64)
    e = np.maximum(np.asarray(end, np.float64), start)
    lo = float(start.min())
    span = float(e.max()) - lo + 1.0
    codes, n_groups = _dense_ranks(np.asarray(group))
    off = codes.astype(np.float64)
    off *= span
    off *= 2.0
    s = start - lo
    s += off
    e -= lo
    e += off
    del off
    # One group: lexsort's primary key is constant, so its order is the stable sort by start.
    order = np.argsort(s, kind="stable") if n_groups == 1 else np.lexsort((s, codes))
    return order, s[order], e[order]


def _credits(s_sorted: np.ndarray, e_sorted: np.ndarray) -> np.ndarray:
    """Each sorted interval's time beyond the reach of every interval before it:
    max(0, e - max(s, reach of the earlier ones)), computed in place."""
    out = np.empty_like(e_sorted)
    if not len(out):
        return out
    out[0] = -np.inf
    np.maximum.accumulate(e_sorted[:-1], out=out[1:])
    np.maximum(s_sorted, out, out=out)
    np.subtract(e_sorted, out, out=out)
    return np.maximum(0.0, out, out=out)


def union_without_each(start: np.ndarray, end: np.ndarray, group: np.ndarray, label: np.ndarray,
                       labels: list[int], prepared: SortedUnion | None = None) -> dict[int, float]:
    """For each label l of `labels`: `exclusive_contributions(start[rest], end[rest],
    group[rest]).sum()` with rest = (label != l), bit for bit, mostly without recomputing it.

    Why this is the same: the shifted times of `exclusive_contributions` depend on the set only
    through its earliest start, its latest end and its groups. When the rest keeps all three
    (it holds another interval at that start, another at that end, one of every group), its
    shifted times are the whole set's, its stable sort by (group, start) is the whole set's
    order with the label's intervals left out, so only the running reach and the credits are
    recomputed over the kept sorted intervals; they are put back in the rest's own order before
    summing (numpy's pairwise sum depends on the order). Otherwise (a label holding the earliest
    start, say) the rest is computed in full, as before. `prepared`: `sorted_union` of the same
    intervals, when the caller has it already."""
    label = np.asarray(label)
    out: dict[int, float] = {}
    if len(start) == 0:
        return {lab: 0.0 for lab in labels}
    start = np.asarray(start, np.float64)
    clipped = np.maximum(np.asarray(end, np.float64), start)
    prepared = prepared or SortedUnion(*_sorted_shifted(start, end, group))
    order, s_sorted, e_sorted = prepared.order, prepared.s_sorted, prepared.e_sorted
    label_sorted = label[order]
    at_lo = set(np.unique(label[start == start.min()], return_counts=True)[0].tolist())  # counts: no numpy.ma
    at_hi = set(np.unique(label[clipped == clipped.max()], return_counts=True)[0].tolist())
    codes, n_groups = _dense_ranks(np.asarray(group))
    n_labels = int(label.max()) + 1 if label.dtype.kind in "iu" and int(label.min()) >= 0 else 0
    # pair[g, l]: intervals of group g with label l (a label's rest keeps g when others remain)
    pair = np.bincount(codes * n_labels + label, minlength=n_groups * n_labels).reshape(
        n_groups, n_labels) if n_labels else np.zeros((n_groups, 0), np.int64)
    per_group = pair.sum(axis=1)
    for lab in labels:
        rest = label != lab
        keeps_groups = 0 <= lab < n_labels and bool((per_group - pair[:, lab] > 0).all())
        if not (at_lo - {lab} and at_hi - {lab} and keeps_groups):
            out[lab] = float(exclusive_contributions(start[rest], end[rest], np.asarray(group)[rest]).sum())
            continue
        kept = label_sorted != lab
        placed = np.zeros(len(start))
        placed[order[kept]] = _credits(s_sorted[kept], e_sorted[kept])
        out[lab] = float(placed[rest].sum())
    return out


def _dense_ranks(group: np.ndarray) -> tuple[np.ndarray, int]:
    """(`np.unique(group, return_inverse=True)[1]`, number of distinct values): `grouping.distinct`."""
    values, inverse = distinct(group)
    return inverse, len(values)


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
