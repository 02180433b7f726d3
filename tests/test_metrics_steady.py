"""The steady-state detector (metrics/steady.py) on hand-made step-time series whose true warm-up
is known: a step down, an exponential decay, a flat series, a noisy flat one, a ramp that never
settles, and the profile record's reading (config/steady_thresholds.py)."""

from __future__ import annotations

import math
import random

import pytest

from yoloprof.config import steady_thresholds as conf
from yoloprof.metrics.steady import SteadyTracker, detect, first_is_outlier, window_steady


def test_window_test_by_hand():
    # halves [10, 10, 10, 10, 10] and [5, 5, 5, 5, 5]: medians 10 vs 5, spread 0 -> not steady
    assert not window_steady([10.0] * 5 + [5.0] * 5)
    # medians 5.05 vs 5.0: 1% apart, inside the 2% tolerance; first value not above the others
    assert window_steady([5.05, 5.1, 5.0, 5.05, 5.1, 5.0, 5.0, 5.0, 5.0, 5.0])
    # one descheduled step in each half moves neither median
    assert window_steady([5.0, 9.0, 5.0, 5.0, 5.0, 5.0, 5.0, 9.0, 5.0, 5.0])
    # a slow first step (20 ms before a 5 ms steady state) says the slow phase is not over
    assert first_is_outlier(20.0, [5.0] * 5, 5.0) and not window_steady([20.0] + [5.0] * 9)
    # three slow steps left at the start: the older half's median is the steady one, but the first
    # step is judged against the newer half only, whose fence the slow steps do not widen
    assert not window_steady([20.0, 20.0, 20.0] + [5.0, 5.1, 4.9] * 3)
    with pytest.raises(ValueError):
        window_steady([1.0, 2.0, 3.0])


def test_a_period_2_pattern_is_steady():
    """A loaded 2-core machine gave a 3 ms busy-wait model steps of 3.0, 4.9, 3.0, 4.9 ... ms (the
    scheduler's time slices against the step period): stationary. Halves of odd length had medians
    3.0 and 4.9 and a spread of 0 about them, and the trial ran to its cap; even halves do not."""
    alternating = [3.02, 4.89] * 6
    assert window_steady(alternating) and window_steady(alternating[1:] + [3.02])
    assert window_steady(alternating + [3.02])  # an odd last step is left out
    assert detect([33.0] * 6 + alternating * 3, minimum=1, cap=21, measured=12).start == 6


def test_noise_widens_the_tolerance():
    # 10% jitter around 5 ms: halves' medians 5.25 vs 4.75 (0.5 apart, 10%) are within 2.5
    # standard errors of their difference (pooled absolute deviations 0, 0, 0.25 x 6, 0.75, 0.75:
    # MAD 0.25 -> sigma 0.371, se 1.2533 x 0.371 x sqrt(2/5) = 0.294, 2.5 se = 0.735)
    noisy = [5.5, 4.5, 5.25, 5.0, 5.5, 4.5, 5.0, 4.75, 4.5, 5.5]
    assert window_steady(noisy)
    # the same 10% gap between perfectly quiet halves is a level shift
    assert not window_steady([5.25] * 5 + [4.75] * 5)


@pytest.mark.parametrize("minimum", [0, 1, 3, 5])
def test_a_step_down_ends_where_the_slow_steps_end(minimum):
    """Slow first 6 steps (30 ms extra on 3 ms), then flat: the warm-up is exactly 6 steps, or the
    user's minimum if that is longer; never a slow step among the measured ones."""
    times = [33.0] * 6 + [3.0] * 40
    t = detect(times, minimum=minimum, cap=minimum + 20, measured=20)
    assert t.steady is True and t.start == max(6, minimum)
    assert max(times[t.measured_slice()]) == 3.0


def test_a_flat_series_takes_exactly_the_minimum():
    t = detect([4.0] * 40, minimum=2, cap=30, measured=20)
    assert (t.start, t.steady, t.decided, t.done) == (2, True, True, True)
    assert len(t.times) == 22  # no step beyond warm-up + measured: the window is the measured steps


def test_noisy_flat_series_rarely_extend_and_never_reach_the_cap():
    """500 seeded series of 10% Gaussian jitter (and 5% of steps descheduled, 3x slow): warm-up
    is the minimum plus well under one step on average."""
    rng = random.Random(7)
    extra, capped = [], 0
    for _ in range(500):
        times = [3.0 * (1 + rng.gauss(0, 0.10)) * (3.0 if rng.random() < 0.05 else 1.0) for _ in range(80)]
        t = detect(times, minimum=1, cap=41, measured=20)
        extra.append(t.start - 1)
        capped += t.steady is False
    assert capped == 0
    assert sum(extra) / len(extra) < 0.5 and max(extra) <= 8


@pytest.mark.parametrize("tau", [2.0, 5.0, 10.0])
def test_a_decay_is_waited_out(tau):
    """x_i = 3 (1 + e^(-i/tau)): warm-up grows with tau and the measured mean stays within 3% of
    the steady 3 ms (the residual a two-half test of 10 steps leaves, computed here from the
    series itself)."""
    times = [3.0 * (1.0 + math.exp(-i / tau)) for i in range(200)]
    t = detect(times, minimum=1, cap=60, measured=20)
    measured = times[t.measured_slice()]
    assert t.steady is True and t.start > tau
    assert sum(measured) / len(measured) / 3.0 - 1.0 < 0.03


def test_a_workload_that_never_settles_stops_at_the_cap():
    ramp = [3.0 + 0.1 * i for i in range(100)]  # 3% slower every step
    t = detect(ramp, minimum=2, cap=12, measured=10)
    assert (t.start, t.steady) == (12, False) and len(t.times) == 22 and t.record()["steady"] is False


def test_the_cap_equal_to_the_minimum_is_a_fixed_warmup_still_tested():
    t = detect([33.0] * 6 + [3.0] * 40, minimum=1, cap=1, measured=10)
    assert (t.start, t.steady) == (1, False) and len(t.times) == 11  # tested, never extended
    flat = detect([3.0] * 20, minimum=1, cap=1, measured=10)
    assert (flat.start, flat.steady) == (1, True)


def test_few_measured_steps_are_tested_on_a_minimal_window():
    """3 measured steps: the window is MIN_WINDOW (one more step, discarded) where the warm-up may
    extend; a fixed warm-up of 3 steps runs no extra step and is not tested."""
    slow = [33.0] * 3 + [3.0] * 10
    t = detect(slow, minimum=1, cap=21, measured=3)
    assert (t.start, t.steady, len(t.times)) == (3, True, 3 + conf.MIN_WINDOW)
    assert t.times[t.measured_slice()] == [3.0] * 3
    fixed = detect(slow, minimum=1, cap=1, measured=3)
    assert (fixed.start, fixed.steady, len(fixed.times)) == (1, None, 1 + 3)
    assert conf.trial_steps(21, 3) == 21 + conf.MIN_WINDOW and conf.trial_steps(21, 30) == 51


def test_the_online_tracker_asks_for_one_more_step_per_failed_start():
    t = SteadyTracker(minimum=0, cap=20, measured=4)
    for ms in [30.0, 30.0, 3.0, 3.0]:
        t.add(ms)
    assert not t.decided and t.left == 1  # start 0 failed at 4 steps; start 1 needs step 5
    t.add(3.0)
    assert not t.decided and t.start == 2  # [30, 3, 3, 3]: the first is an outlier
    t.add(3.0)
    assert t.done and t.start == 2 and t.record() == {"steps": 2, "steady": True}


def test_summarize_reads_a_profile_record():
    assert conf.summarize({"steps": [8, 1], "steady": [True, True]}) == (8, True)
    assert conf.summarize({"steps": [21, 3], "steady": [False, True]}) == (21, False)
    assert conf.summarize({"steps": [1], "steady": [None]}) == (1, None)
    assert conf.summarize({}) == (None, None)
    assert conf.warmup_cap(1, 12) == 1 + conf.CAP_EXTRA and conf.warmup_cap(5, 100) == 105
    assert conf.warmup_cap(5, 100, 5) == 5 and conf.warmup_cap(5, 100, 2) == 5
