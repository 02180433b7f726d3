"""Per-step sums and grouped rows: the counting the engine does over millions of events.

Why bincount everywhere: a sum per step (or per step and label, or per name and phase) is one
`np.bincount` over the events in event order, so every figure is the same float whichever
process computes it and however the events were selected, as long as the same values come in
the same order (`in_steps` keeps that order and skips copies when nothing is left out).
"""

from __future__ import annotations

import numpy as np


def in_steps(step: np.ndarray, *columns: np.ndarray | None) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """`step` and `columns` where step >= 0; as they are when every one is (no copies): the
    same values in the same order, so the same sums."""
    ok = step >= 0
    if bool(ok.all()):
        return step, list(columns)
    return step[ok], [None if c is None else c[ok] for c in columns]


def per_step(step: np.ndarray, n_steps: int, weights: np.ndarray | None = None) -> np.ndarray:
    step, (w,) = in_steps(step, weights)
    return np.bincount(step, weights=w, minlength=n_steps)[:n_steps].astype(np.float64)


def per_step_label(step: np.ndarray, label: np.ndarray, n_steps: int, n_labels: int,
                    weights: np.ndarray | None = None) -> np.ndarray:
    step, (lab, w) = in_steps(step, label, weights)
    key = step * n_labels + lab
    flat = np.bincount(key, weights=w, minlength=n_steps * n_labels)[:n_steps * n_labels]
    return flat.reshape(n_steps, n_labels).astype(np.float64)


def grouped_rows(names: np.ndarray, phases: np.ndarray, n_phases: int, sums: dict[str, np.ndarray]
                 ) -> list[tuple[int, int, dict[str, float], int]]:
    """Group events by (name, phase): [(name_code, phase, {column: sum}, count)]."""
    if len(names) == 0:
        return []
    key = names.astype(np.int64) * n_phases + phases
    top = int(key.max())
    if top < max(DENSE_KEYS_PER_ROW * len(key), DENSE_KEYS) and int(key.min()) >= 0:
        # One count table instead of `np.unique`'s sort: each key's sum adds the same values in
        # the same (row) order as a bincount over unique's inverse does, so the same floats.
        every = np.bincount(key, minlength=top + 1)
        uniq = np.flatnonzero(every)
        counts = every[uniq]
        totals = {col: np.bincount(key, weights=w, minlength=top + 1)[uniq].tolist() for col, w in sums.items()}
    else:
        uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
        totals = {col: np.bincount(inv, weights=w, minlength=len(uniq)).tolist() for col, w in sums.items()}
    return [(k // n_phases, k % n_phases, {c: t[i] for c, t in totals.items()}, count)
            for i, (k, count) in enumerate(zip(uniq.tolist(), counts.tolist()))]


# `grouped_rows` counts keys in a table of (largest key + 1) slots when that is below
# DENSE_KEYS_PER_ROW slots per row or below DENSE_KEYS: names x phases always are; names x input
# shapes of a trace with very many distinct shapes may not (then `np.unique` sorts the keys).
DENSE_KEYS_PER_ROW = 4
DENSE_KEYS = 1 << 16


def distinct(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(codes, return_inverse=True)`: for integer codes spanning fewer than
    DENSE_KEYS values (device ids, device codes) by a count table instead of a sort, the same
    sorted values and the same inverse."""
    if not len(codes) or codes.dtype.kind not in "iu":
        return np.unique(codes, return_inverse=True)
    lo, hi = int(codes.min()), int(codes.max())
    if hi - lo >= DENSE_KEYS:
        return np.unique(codes, return_inverse=True)
    shifted = codes.astype(np.int64) - lo
    present = np.bincount(shifted) > 0
    values = (np.flatnonzero(present) + lo).astype(codes.dtype)
    return values, (np.cumsum(present) - 1)[shifted]
