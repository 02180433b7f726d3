"""CPU operators: self (exclusive) time per op, computed per thread with a nesting stack.

Why: inclusive durations of nested ops (`aten::linear` > `aten::addmm` > ...) summed as if they
were disjoint count the same microsecond several times. Self time = own duration minus the part
of it covered by direct children on the same thread; children that overrun their parent
(timestamp rounding) are clipped to the parent's end.
"""

from __future__ import annotations

import numpy as np

from yoloprof.traces.parse import Events


def self_times(ev: Events, idx: np.ndarray) -> np.ndarray:
    """Self time (µs) of each event in `idx` (same order), nesting taken among `idx` only."""
    if len(idx) == 0:
        return np.zeros(0)
    ts, dur, thread = ev.ts[idx], ev.dur[idx], ev.thread[idx]
    order = np.lexsort((-dur, ts, thread))
    self_t = dur.copy()
    ts_l, end_l, thr_l = ts.tolist(), (ts + dur).tolist(), thread.tolist()
    stack: list[tuple[float, int]] = []  # (end, position) of open ancestors
    current = None
    for i in order.tolist():
        if thr_l[i] != current:
            stack.clear()
            current = thr_l[i]
        s, e = ts_l[i], end_l[i]
        while stack and stack[-1][0] <= s:
            stack.pop()
        if stack:
            parent_end, parent = stack[-1]
            self_t[parent] -= min(e, parent_end) - s
        stack.append((e, i))
    return np.maximum(self_t, 0.0)
