"""Phases of a step (dataload, to_device, forward, backward, optimizer; preprocess, forward,
postprocess) on the CPU timeline, from annotations.

Why the CPU side: a kernel belongs to the phase its *launch* happened in; in a compute-bound run
the GPU lags the CPU and GPU start times would smear forward kernels into backward. Why time
alone (not the thread): `loss.backward()` blocks the main thread inside `## backward ##` while
the autograd engine launches from another thread; those launches fall inside the span in time.
Nested spans: the innermost (latest-started still-open) span decides, so `Optimizer.step#...`
inside `yoloprof/optimizer` is optimizer and an `evaluate_function` is backward.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass

import numpy as np

from yoloprof.traces.parse import GPU_SIDE_CATS, HOST_API_CATS, Events

# (pattern, phase): phase None = the pattern's group 1 names it: yoloprof's own annotations
# (`yoloprof/<phase>`) and libreyolo's profilers' (`step/<phase>`: dataload, forward, backward,
# optimizer in training; preprocess, forward, postprocess in inference).
PHASE_RULES: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"^(?:yoloprof|step)/([A-Za-z_][\w-]*)$"), None),
    (re.compile(r"^## ?forward\b.*##$"), "forward"),
    (re.compile(r"^## ?backward\b.*##$"), "backward"),
    (re.compile(r"^## ?(optimizer|zero_grad)\b.*##$"), "optimizer"),
    (re.compile(r"^enumerate\(DataLoader\)#"), "dataload"),
    (re.compile(r"^Optimizer\.(step|zero_grad)#"), "optimizer"),
    (re.compile(r"^autograd::engine::evaluate_function: "), "backward"),
)
PHASE_ORDER = ("dataload", "to_device", "preprocess", "forward", "backward", "clip", "optimizer", "ema",
               "postprocess")
OTHER = "other"


@dataclass
class Timeline:
    """Non-overlapping CPU-time segments, each labelled with a phase index into `names`."""

    names: list[str]
    start: np.ndarray
    end: np.ndarray
    label: np.ndarray

    @property
    def other(self) -> int:
        return self.names.index(OTHER)

    def phase_at(self, t: np.ndarray) -> np.ndarray:
        """Phase index at each CPU time; `other` where no phase span is open."""
        from yoloprof.traces.intervals import lookup

        return lookup(t, self.start, self.end, self.label, self.other)


def _phase_of_names(strings: list[str]) -> list[str | None]:
    out: list[str | None] = []
    for s in strings:
        phase = None
        for pattern, fixed in PHASE_RULES:
            m = pattern.search(s)
            if m:
                phase = fixed or m.group(1).lower()
                break
        out.append(phase)
    return out


def _ordered(found: set[str]) -> list[str]:
    known = [p for p in PHASE_ORDER if p in found]
    return known + sorted(found - set(PHASE_ORDER) - {OTHER}) + [OTHER]


def build_timeline(ev: Events) -> Timeline:
    """Flatten possibly nested phase spans into labelled segments with one sweep (a heap of open
    spans keyed by start, latest first; ended spans are dropped lazily)."""
    per_name = _phase_of_names(ev.strings)
    cpu_side = ~ev.is_cat(*GPU_SIDE_CATS, *HOST_API_CATS)
    name_has = np.array([p is not None for p in per_name] or [False], bool)
    idx = np.flatnonzero(cpu_side & name_has[ev.name] & (ev.dur > 0)) if len(ev) else np.zeros(0, int)
    span_phase = [per_name[i] for i in ev.name[idx].tolist()]
    names = _ordered(set(span_phase))
    code = {n: k for k, n in enumerate(names)}
    starts_a = ev.ts[idx]
    order = np.argsort(starts_a, kind="stable").tolist()
    # Python floats for the sweep below (a numpy scalar per lookup costs several times more)
    starts, ends = starts_a.tolist(), (starts_a + ev.dur[idx]).tolist()
    labels = [code[p] for p in span_phase]
    # sorted, distinct (np.unique would import numpy.ma: 9 ms a reader does not need)
    bounds_a = np.sort(np.concatenate((starts_a, starts_a + ev.dur[idx])))
    bounds = bounds_a[np.concatenate(([True], bounds_a[1:] != bounds_a[:-1]))].tolist() if len(bounds_a) else []
    heap: list[tuple[float, int, float, int]] = []
    seg_s: list[float] = []
    seg_e: list[float] = []
    seg_l: list[int] = []
    k = 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        while k < len(order) and starts[order[k]] <= lo:
            j = order[k]
            heapq.heappush(heap, (-starts[j], j, ends[j], labels[j]))
            k += 1
        while heap and heap[0][2] <= lo:
            heapq.heappop(heap)
        if heap:
            lab = heap[0][3]
            if seg_l and seg_l[-1] == lab and seg_e[-1] == lo:
                seg_e[-1] = hi
            else:
                seg_s.append(lo)
                seg_e.append(hi)
                seg_l.append(lab)
    return Timeline(names, np.array(seg_s, np.float64), np.array(seg_e, np.float64),
                    np.array(seg_l, np.int64))
