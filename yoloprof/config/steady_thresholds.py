"""The steady-state warm-up's thresholds, one home (README "Capture: how the numbers are measured",
docs/steady-state.md). Used by the detector (metrics/steady.py), the timing pass
(capturing/passes/timing.py), the user loop (capturing/userloop/loop.py) and the settings' help; imports nothing.

A trial's warm-up ends at the first step k >= `--warmup` from which WINDOW step times (at most the
measured steps, at least MIN_WINDOW: `test_width`) pass the two-half test: the older and the newer
half agree (medians within REL_TOL of the newer one, or within NOISE_Z standard errors of their
difference, whichever is wider) and the first step of the window is not an outlier above the newer
half (Tukey's fence, OUTLIER_IQR interquartile ranges above its upper quartile). The window's steps
are the first measured steps, so a workload that is steady from `--warmup` on costs no extra step.
"""

WINDOW = 12  # step times tested at each candidate start: two halves of 6 (or the measured steps)
MIN_WINDOW = 4  # the smallest window (two halves of 2); a fixed warm-up with fewer steps is untested
REL_TOL = 0.02  # halves' medians may differ by 2% of the newer one...
NOISE_Z = 2.5  # ...or by 2.5 standard errors of the difference (a noisy but flat series)
MEDIAN_SE = 1.2533  # SE of a median = MEDIAN_SE * sigma / sqrt(n) (normal data, large n)
MAD_SIGMA = 1.4826  # sigma = MAD_SIGMA * median absolute deviation (normal data)
OUTLIER_IQR = 1.5  # the window's first step is an outlier above Q3 + 1.5 IQR of the newer half
CAP_EXTRA = 20  # auto cap: `--warmup` + max(measured steps, CAP_EXTRA) warm-up steps at most
AUTO = -1  # `--warmup-max -1`: the auto cap


def test_width(measured: int, extendable: bool = True) -> int:
    """Steps the two-half test looks at: WINDOW, at most the measured steps (so a steady workload
    costs no extra step), but at least MIN_WINDOW where the warm-up may extend (a trial of 2 or 3
    measured steps runs up to 2 more, discarded, so that its warm-up is tested too); even, for two
    equal halves. Below MIN_WINDOW (a fixed warm-up with few steps) nothing is tested."""
    width = min(WINDOW, int(measured))
    if extendable:
        width = max(width, MIN_WINDOW)
    return width - width % 2


def trial_steps(cap: int, measured: int) -> int:
    """The most steps a trial can run: the capped warm-up, then its test window or measured steps."""
    return int(cap) + max(int(measured), test_width(measured))


def warmup_cap(warmup: int, measured: int, warmup_max: int | None = AUTO) -> int:
    """The most warm-up steps a trial may take: `warmup_max` as given (never below `warmup`; equal
    = a fixed warm-up, as before steady-state detection), or the auto cap, which at most doubles
    a trial's timed steps (plus CAP_EXTRA for short trials) so a never-steady workload still ends."""
    if warmup_max is None or warmup_max == AUTO:
        return int(warmup) + max(int(measured), CAP_EXTRA)
    return max(int(warmup), int(warmup_max))


def summarize(section: dict) -> tuple[int | None, bool | None]:
    """A profile's `config.warmup_used` in two values, as the sweep row and `summary` show it:
    (the most warm-up steps of any trial, True when every trial reached steady state / False
    when any reached the cap without it / None otherwise: not tested or not recorded)."""
    steps = [n for n in section.get("steps") or [] if isinstance(n, int) and not isinstance(n, bool)]
    flags = list(section.get("steady") or [])
    steady = False if False in flags else (True if flags and all(f is True for f in flags) else None)
    return (max(steps) if steps else None), steady
