"""Steps: the `ProfilerStep#N` spans that torch.profiler's `schedule` writes, or the whole trace.

Why only CPU-side spans: Kineto also mirrors `ProfilerStep#N` onto the GPU timeline
(`gpu_user_annotation`), which would double every step. Steps are matched to work by time alone
(not thread or pid): the autograd thread and containerised pids (a different pid for the same
process) still fall inside the main thread's step span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from yoloprof.traces.parse import CAT_CODE, GPU_SIDE_CATS, Events, cat_mask

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


def matched_group(pattern: re.Pattern[str], name: str) -> str:
    """Group 1 of an event name that `pattern` selected (Events.names_matching): the selection
    guarantees the match, and a name outside it is a fault of the caller, named as such."""
    match = pattern.match(name)
    if match is None:
        raise ValueError(f"event name {name!r} does not match {pattern.pattern!r}")
    return match.group(1)


@dataclass
class Steps:
    ids: list[int | None]
    start: np.ndarray
    end: np.ndarray
    warnings: list[str] = field(default_factory=list)
    whole_trace: bool = False

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def wall(self) -> np.ndarray:
        return self.end - self.start


def _trace_end(ev: Events, steps: np.ndarray) -> float:
    """End of the recorded window: the profiler's own span ("PyTorch Profiler (0)"), the last
    event or the last `[memory]` instant, whichever is latest; `steps` (the step events'
    indices) left out. Their ends are set to -inf instead of the others being copied out: a
    maximum is exact, whatever the order or the count of values it runs over."""
    ends = ev.ts + ev.dur
    ends[steps] = -np.inf
    end = float(ends.max(initial=-np.inf))
    return max(end, float(ev.memory.ts.max())) if len(ev.memory) else end


def find_steps(ev: Events) -> Steps:
    """Step spans sorted by start; a step running past the last recorded event is clipped there
    (the window ended mid-step) with a warning."""
    named = np.fromiter((bool(STEP_NAME.search(s)) for s in ev.strings), bool, len(ev.strings))
    idx = np.flatnonzero(named[ev.name]) if named.any() else np.zeros(0, np.int64)
    idx = idx[~cat_mask(*GPU_SIDE_CATS)[ev.cat[idx]]]  # CPU-side spans only (module doc)
    end_of_trace = _trace_end(ev, idx)
    if len(idx) == 0:
        keep = ev.cat != CAT_CODE["trace"]
        if not keep.any():
            keep = np.ones(len(ev), bool)
        lo = float(ev.ts[keep].min()) if len(ev) else 0.0
        hi = float((ev.ts[keep] + ev.dur[keep]).max()) if len(ev) else 0.0
        return Steps([None], np.array([lo]), np.array([hi]), whole_trace=True, warnings=[
            "no ProfilerStep#N spans in the trace: the whole trace is analysed as one step"])
    idx = idx[np.argsort(ev.ts[idx], kind="stable")]
    ids: list[int | None] = [int(matched_group(STEP_NAME, ev.strings[ev.name[i]])) for i in idx.tolist()]
    start = ev.ts[idx].copy()
    end = start + ev.dur[idx]
    warnings: list[str] = []
    late = end > end_of_trace + 1.0
    if late.any():
        end[late] = np.maximum(start[late], end_of_trace)
        warnings.append(f"{int(late.sum())} step(s) run past the end of the recorded window and were "
                        "cut at its end (incomplete step)")
    if len(set(ids)) < len(ids):
        warnings.append("some ProfilerStep numbers appear more than once")
    overlap = start[1:] < end[:-1] - 1.0
    if overlap.any():
        end[:-1][overlap] = start[1:][overlap]
        warnings.append(f"{int(overlap.sum())} step span(s) overlap the next one; cut at its start")
    return Steps(ids, start, end, warnings)


def step_of(t: np.ndarray, steps: Steps) -> np.ndarray:
    """Step index containing each time, -1 outside every step."""
    from yoloprof.traces.intervals import locate

    return locate(t, steps.start, steps.end)
