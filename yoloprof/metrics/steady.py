"""Steady state: where a trial's warm-up ends, decided from its own step times.

Why: a fixed `--warmup` is a guess. A model that is slow on its first calls (lazy initialisation,
allocator and primitive caches, cuDNN autotuning, a JIT) stays slow for as many steps as it needs,
not as many as asked; with `--warmup 1` such a model was measured 41% slow. So the warm-up lasts
until the step times are stationary, `--warmup` being the minimum and a cap (`warmup_cap`) the
maximum, so that a workload that never settles still ends (and says so).

The test (thresholds in config/steady_thresholds.py) is pyperf's warm-up calibration reduced to the sizes a
capture can afford (pyperf compares two samples of 20 values after each candidate warm-up; see
its `_worker.py`, `test_calibrate_warmups`): at a candidate start k, the WINDOW steps from k are
split into an older and a newer half, and k is steady when
  1. the halves' medians differ by at most max(REL_TOL x the newer median, NOISE_Z standard
     errors of the difference); the standard error comes from the pooled median absolute
     deviation of each half about its own median, so a noisy but flat series passes and a trend
     or a level shift fails (medians: a descheduled step does not move them), and
  2. the window's first step is not an outlier above the newer half (Tukey's fence Q3 +
     OUTLIER_IQR x IQR, and above the newer median by more than REL_TOL), as pyperf checks the
     first value against the others: the steps before it were slow, so a slow first step says the
     slow phase is not over (the medians would overlook a minority of slow steps left at the start).
Otherwise k moves one step on. The window's steps are the first measured steps when k passes: a
trial that is steady from `--warmup` on costs no extra step (the test looks back, it does not wait).
Halves are of even length, so that a period-2 (or, with WINDOW 12, period-3) pattern that a busy
machine's scheduler can impose on short steps (3.0, 4.9, 3.0, 4.9 ms ...) gives both halves the
same median instead of looking like a level shift.
Why not a change-point method (PELT, CUSUM) on the whole series: it needs the whole series first
(the trial would have to run its measured steps before knowing where they start) and a penalty
that is as much a guess as `--warmup`; the two-half test decides online, one step at a time.

Pure functions of a list of step times (ms); tested on hand-made series (tests/test_metrics_steady.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from yoloprof.config import steady_thresholds as conf


def window_steady(times: Sequence[float]) -> bool:
    """The two-half test on one window of step times (oldest first), at least MIN_WINDOW long; an
    odd last step is left out, so that both halves see every phase of a period-2 pattern."""
    import statistics  # here, not at the top: a trace reader imports this module (`leading_warmup`)

    n = len(times) - len(times) % 2
    if n < conf.MIN_WINDOW:
        raise ValueError(f"a steady-state window needs at least {conf.MIN_WINDOW} step times (got {len(times)})")
    older, newer = list(times[: n // 2]), list(times[n // 2:n])
    m_old, m_new = statistics.median(older), statistics.median(newer)
    spread = [abs(t - m_old) for t in older] + [abs(t - m_new) for t in newer]
    sigma = conf.MAD_SIGMA * statistics.median(spread)
    se_diff = conf.MEDIAN_SE * sigma * math.sqrt(1.0 / len(older) + 1.0 / len(newer))
    if abs(m_old - m_new) > max(conf.REL_TOL * abs(m_new), conf.NOISE_Z * se_diff):
        return False
    return not first_is_outlier(times[0], newer, m_new)


def first_is_outlier(first: float, newer: Sequence[float], reference: float) -> bool:
    """The window's first step time is above Tukey's upper fence of the newer half (Q3 +
    OUTLIER_IQR x IQR) and practically above the reference (by more than REL_TOL: a quiet series
    has IQR 0, where any jitter would cross the fence). The newer half, not the whole rest of the
    window as pyperf has it: the older half may still hold more of the warm-up's slow steps, which
    would widen the fence. Only the first step: the candidate start moves one step at a time, so a
    warm-up's run of slow steps is met at its end, as the window's first step; testing every step
    would also hold back the random slow steps of the steady state (a descheduled step) and bias
    the measured ones fast."""
    import statistics
    q1, _, q3 = statistics.quantiles(newer, n=4, method="inclusive")
    fence = q3 + conf.OUTLIER_IQR * (q3 - q1)
    return first > fence and first > reference * (1.0 + conf.REL_TOL)


@dataclass
class SteadyTracker:
    """The online decision over one trial's step times, fed one step at a time (`add`).

    `minimum` = the user's warm-up, `cap` = the most warm-up steps (>= minimum), `measured` = the
    steps a trial measures. `start` is the candidate start of the measured steps (the warm-up
    length) until `decided`; `steady` is True when the test passed, False when the cap was reached
    without it passing, None when nothing was tested (a fixed warm-up, cap == minimum, with fewer
    than MIN_WINDOW measured steps). The window (config.steady.test_width) is at most the measured
    steps, so the detector runs no step beyond the measured ones other than the warm-up steps it
    adds, except that a trial of fewer than MIN_WINDOW measured steps whose warm-up may extend
    runs up to MIN_WINDOW, the extra ones discarded."""

    minimum: int
    cap: int
    measured: int
    times: list[float] = field(default_factory=list)
    start: int = -1
    steady: bool | None = None
    decided: bool = False

    def __post_init__(self) -> None:
        self.cap = max(self.minimum, self.cap)
        self.start = self.minimum

    def _width(self) -> int:
        return conf.test_width(self.measured, extendable=self.cap > self.minimum)

    def add(self, ms: float) -> None:
        self.times.append(float(ms))
        while not self.decided and len(self.times) >= self.start + self._width():
            width = self._width()
            if width < conf.MIN_WINDOW:
                self.decided, self.steady = True, None
            elif window_steady(self.times[self.start:self.start + width]):
                self.decided, self.steady = True, True
            elif self.start >= self.cap:
                self.decided, self.steady = True, False
            else:
                self.start += 1

    @property
    def needed(self) -> int:
        """Steps this trial must run, as far as is known now (grows while the warm-up extends)."""
        return self.start + (self.measured if self.decided else max(self.measured, self._width()))

    @property
    def done(self) -> bool:
        return self.decided and len(self.times) >= self.start + self.measured

    @property
    def left(self) -> int:
        return max(0, self.needed - len(self.times))

    def measured_slice(self) -> slice:
        """The measured steps among `times` (only the ones run, if the trial was cut short)."""
        return slice(self.start, self.start + self.measured)

    def record(self) -> dict[str, int | bool | None]:
        """What the profile keeps of this trial: warm-up steps used and whether steady was shown."""
        return {"steps": self.start, "steady": self.steady if self.decided else None}


def detect(times: Sequence[float], minimum: int, cap: int, measured: int) -> SteadyTracker:
    """The tracker after feeding it `times` (offline use: tests, bench, a recorded series)."""
    tracker = SteadyTracker(minimum=minimum, cap=cap, measured=measured)
    for ms in times:
        if tracker.done:
            break
        tracker.add(ms)
    return tracker



def leading_warmup(times: Sequence[float]) -> int | None:
    """How many leading steps of a recorded series (a foreign trace's ProfilerSteps, oldest
    first) are warm-up; None when the series is too short to tell (fewer than MIN_WINDOW steps).

    Why another form of the test: a trace is read after the fact, with few steps (often 5) and
    the whole series known, where the online two-half test needs a window of 4 beyond each
    candidate and so cannot even test the second step of 5. Each candidate step k, from the
    first, is compared with the steps after it: it is warm-up when it differs from their median
    by more than max(REL_TOL x that median, NOISE_Z x sigma), sigma = MAD_SIGMA x their median
    absolute deviation (the same tolerances as the two-half test: 2% of the level, or the noise
    the series itself shows). Two-sided, unlike the capture's outlier check: a trace's first
    steps can also be *fast* (a CPU running ahead of a lagging GPU fills its queue before it
    waits: rank-0.Apr's 35 and 72 ms against 95.7 ms). The first step within tolerance ends the
    warm-up; at most half the steps are dropped, so that the reference keeps more steps than it
    judges."""
    n = len(times)
    if n < conf.MIN_WINDOW:
        return None
    k = 0
    while k < n // 2:
        rest = [float(t) for t in times[k + 1:]]
        level = median(rest)
        sigma = conf.MAD_SIGMA * median([abs(t - level) for t in rest])
        if abs(times[k] - level) <= max(conf.REL_TOL * abs(level), conf.NOISE_Z * sigma):
            break
        k += 1
    return k


def median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count), as `statistics.median` has it;
    here so that a trace reader need not import `statistics` (its start-up, tests/test_cli_startup.py)."""
    s = sorted(values)
    if not s:
        raise ValueError("median of no values")
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0
