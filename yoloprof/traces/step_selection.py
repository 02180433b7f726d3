"""Which steps of a trace are analysed: ProfilerStep numbers and a window in time.

Why at the steps: every figure is a mean over the analysed steps (`traces.analyze`), so choosing
steps chooses the figures' sample; the events outside are still read (a step's op may have
children past its end, a kernel launched in a step may run after it), only never counted.
Definitions (docs/readers.md "Selections"):
- steps (lo, hi): the ProfilerStep#N spans with lo <= N <= hi;
- window (lo_ms, hi_ms), milliseconds from the trace's first event: the steps that START in
  [lo_ms, hi_ms); a trace without ProfilerSteps (one step, the whole trace) is clipped to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from yoloprof.errors import UsageError
from yoloprof.traces.parse import US_PER_MS
from yoloprof.traces.profiler_steps import Steps


@dataclass(frozen=True)
class StepSelection:
    steps: tuple[int, int] | None = None
    window_ms: tuple[float, float] | None = None

    def __bool__(self) -> bool:
        return self.steps is not None or self.window_ms is not None

    def apply(self, steps: Steps) -> Steps:
        """The selected steps; UsageError naming the flag when none is left."""
        keep = np.ones(len(steps), bool)
        if self.steps is not None:
            if steps.whole_trace:
                raise UsageError("--steps: the trace has no ProfilerStep#N spans to choose from")
            ids = np.array([-1 if i is None else i for i in steps.ids])
            keep &= (ids >= self.steps[0]) & (ids <= self.steps[1])
            if not keep.any():
                raise UsageError(f"--steps {self.steps[0]}-{self.steps[1]}: the trace has steps "
                                 f"{min(ids)}-{max(ids)}")
        start, end = steps.start.copy(), steps.end.copy()
        if self.window_ms is not None:
            lo, hi = (v * US_PER_MS for v in self.window_ms)
            if steps.whole_trace:
                start, end = np.maximum(start, lo), np.minimum(end, hi)
                keep &= end > start
            else:
                keep &= (start >= lo) & (start < hi)
            if not keep.any():
                raise UsageError(f"--window {self.window_ms[0]:g}:{self.window_ms[1]:g}: no step starts "
                                 "in it (times are ms from the trace's first event)")
        picked = keep.tolist()
        return Steps([i for i, k in zip(steps.ids, picked) if k], start[keep], end[keep],
                     list(steps.warnings), whole_trace=steps.whole_trace)


def steady_steps(steps: Steps) -> Steps:
    """The default steps of a trace read without a selection: its leading warm-up steps left out
    by the steady-state rule (`metrics.steady.leading_warmup`, docs/steady-state.md "Traces"),
    with a warning naming them. Why: warm-up steps averaged into the step time misstate the
    steady state (rank-0.Apr: 35 and 72 ms steps beside 95.7 ms ones gave a 78.8 ms "step")."""
    from yoloprof.metrics.steady import leading_warmup, median

    if steps.whole_trace:
        return steps
    walls = (steps.wall / US_PER_MS).tolist()
    drop = leading_warmup(walls) or 0
    if not drop:
        return steps
    ids = [str(i) for i in steps.ids]
    level = median(walls[drop:])
    note = (f"step(s) {', '.join(ids[:drop])} left out as warm-up: "
            f"{', '.join(f'{w:.1f}' for w in walls[:drop])} ms against a steady {level:.1f} ms "
            f"(steady-state rule, docs/steady-state.md); --steps {ids[0]}-{ids[-1]} analyses every step")
    return Steps(steps.ids[drop:], steps.start[drop:].copy(), steps.end[drop:].copy(),
                 [*steps.warnings, note], whole_trace=False)
