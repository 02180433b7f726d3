"""What a comparison could have seen, and what would decide it (docs/analysis.md "What could have
been seen"): one home for the power figures of every verdict that is not a decision -- compare's
and analyze's `inconclusive`, the adaptive sweep's undecided comparisons, gate's inconclusive
judgement -- and the words of `changed, within noise`. Kept apart from `stats` so `nested`,
`stats`, `sequential` and the history's change points share them.

The test they are about is the two-sample t on log(metric) with the process as the unit
(DESIGN.md section 7): `sd` is the SD of one unit's log value (a process mean), `n` the units per
side. Power is exact, from the noncentral t (`scipy.stats.nct`), two-sided:

    power(nc) = P(T' > t_c) + P(T' < -t_c),   T' ~ nct(df, nc),   t_c = t[1 - alpha/2, df]

- the **minimum detectable effect** (MDE) with n per side is the change exp(delta) - 1 with
  delta = nc80 * se, nc80 the noncentrality at which power(nc) = 80%, se = sd * sqrt(2/n) and
  df = 2n - 2 (or the test's own df, e.g. Welch's);
- the **units per side to detect a size** s is the smallest n with power(log(1+s) / (sd sqrt(2/n)))
  >= 80% at df = 2n - 2 (the normal approximation 2 ((z[1-a/2] + z[0.8]) sd / log(1+s))^2 gives
  the start of the search).

The *asked size* is the noise band d (`--noise`, `analysis.noise`, default 2%): the smallest change
the verdicts call a change at all. With the units that detect d (80% power), identical work gets a
confidence interval about 0.7 d wide on each side (t[1-a/2] / (t[1-a/2] + t[0.8])), inside the band,
so that is also roughly what it takes to call no change `equivalent`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

MIN_TRIALS = 2  # fewest values per side that get a test
POWER = 0.8     # the power every "needed" figure is for
MAX_UNITS = 10_000  # beyond this many per side, "what would decide" is reported as out of reach
_SCAN = 66          # n values tried beyond the normal approximation's start


def nc_for_power(tcrit: Any, df: Any, power: float = POWER) -> np.ndarray:
    """The noncentrality at which the two-sided t test with critical value `tcrit` (|T| > tcrit)
    at `df` has `power`; element-wise (bisection: power rises with nc)."""
    tcrit, df = np.broadcast_arrays(np.asarray(tcrit, float), np.asarray(df, float))
    lo, hi = np.zeros(tcrit.shape), tcrit + 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        pw = sps.nct.sf(tcrit, df, mid) + sps.nct.cdf(-tcrit, df, mid)
        up = pw < power
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return (lo + hi) / 2


def power_of(delta: float, se: Any, df: Any, alpha: float) -> np.ndarray:
    """Exact two-sided power of the t test for a true difference of mean logs `delta` with
    standard error `se` at `df`; element-wise."""
    se, df = np.broadcast_arrays(np.asarray(se, float), np.asarray(df, float))
    tcrit = sps.t.ppf(1 - alpha / 2, df)
    nc = abs(delta) / se
    return sps.nct.sf(tcrit, df, nc) + sps.nct.cdf(-tcrit, df, nc)


def mde_log(se: Any, df: Any, alpha: float, power: float = POWER) -> np.ndarray:
    """The smallest difference of mean logs detectable with standard error `se` at `df`
    (two-sided level alpha, `power`)."""
    df = np.asarray(df, float)
    return nc_for_power(sps.t.ppf(1 - alpha / 2, df), df, power) * np.asarray(se, float)


def mde_pct(sd: float, n: float, alpha: float, df: float | None = None, power: float = POWER) -> float | None:
    """The MDE in % with n units per side of log-SD `sd` (df 2n - 2 unless given: one unit per side
    judged against a noise floor has the floor's); None when sd is not a positive number or there
    is no df (n < 2 without one)."""
    if not (sd > 0 and math.isfinite(sd)) or n < 1 or (df is None and n < MIN_TRIALS):
        return None
    d = float(mde_log(sd * math.sqrt(2 / n), 2 * n - 2 if df is None else df, alpha, power))
    return _finite(math.expm1(d) * 100)


def units_to_detect(sd: Any, size: float, alpha: float, power: float = POWER) -> np.ndarray:
    """Units per side to detect a change of `size` (a fraction, 0.02 = 2%) with `power`, for each
    log-SD in `sd`: exact noncentral-t power at df 2n - 2. NaN where sd <= 0 or size <= 0, inf
    beyond MAX_UNITS."""
    s = np.atleast_1d(np.asarray(sd, float))
    out = np.full(s.shape, np.nan)
    live = (s > 0) & np.isfinite(s)
    if size <= 0 or not live.any():
        return out
    delta = math.log1p(size)
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    n0 = np.maximum(MIN_TRIALS, (2 * (z * s[live] / delta) ** 2).astype(int) - 2)
    far = n0 > MAX_UNITS
    ns = np.minimum(n0, MAX_UNITS)[:, None] + np.arange(_SCAN)[None, :]
    dfs = 2 * ns - 2
    tcrit = sps.t.ppf(1 - alpha / 2, dfs)
    nc = delta / (s[live][:, None] * np.sqrt(2 / ns))
    ok = sps.nct.sf(tcrit, dfs, nc) + sps.nct.cdf(-tcrit, dfs, nc) >= power
    first = np.where(ok.any(axis=1), ok.argmax(axis=1), _SCAN - 1)
    out[live] = np.where(far, np.inf, ns[np.arange(ns.shape[0]), first])
    return out


def units_to_decide(sd: float, log_ratio: float, noise: float, alpha: float, k: int, df: float,
                    code: str) -> tuple[int | None, float | None]:
    """(units per side needed, MDE in % at k per side with the test's df), units being trials or
    processes with `sd` the SD of one unit on the log scale. For `inconclusive`, the units to
    detect a change of the noise band (the asked size, module doc); for `within_noise`, the units
    that would shrink the CI enough to clear the band edge it now straddles if the true change is
    the one observed (so it would read improved/regressed, or equivalent when the observed change
    is inside the band). None when out of reach."""
    mde = mde_pct(sd, k, alpha, df)
    band = math.log1p(noise)
    gap = band if code == "inconclusive" else abs(abs(log_ratio) - band)
    if sd <= 0 or gap <= 0:
        return None, mde
    need = float(units_to_detect(sd, math.expm1(gap), alpha)[0])
    return (int(need) if math.isfinite(need) else None), mde


def detect_words(mde: float | None, n: int, unit: str, alpha: float, need: float | None, size: float,
                 power: float = POWER) -> str:
    """'could detect >= 11.3% (alpha 0.05, 80% power) with 12 processes per side; about 40 per side
    would detect 2%': what an undecided comparison could have seen and what would see the asked
    size. `unit` is singular ("process", "capture"); n/a with the reason when it is unknown."""
    units = f"{n} {_plural(unit, n)} per side"
    seen = (f"could detect >= {mde:.1f}% (alpha {alpha:.3g}, {power:.0%} power) with {units}" if mde is not None
            else f"smallest detectable change n/a with {units} (no spread to measure)")
    if need is None or not math.isfinite(need):
        return f"{seen}; a change of {size:.0%} is out of reach (more than {MAX_UNITS} per side)"
    if need <= n:
        return f"{seen}, enough for a change of {size:.0%}"
    return f"{seen}; about {int(need)} per side would detect {size:.0%}"


def _plural(unit: str, n: int) -> str:
    if n == 1:
        return unit
    return unit + ("es" if unit.endswith("s") else "s")


def within_noise_words(ratio: float, lo: float, hi: float, noise: float, better: str | None) -> str:
    """`changed, within noise` said in full: the direction, the interval, and why it is not
    decisive (a CI that straddles an edge of the +-noise band cannot be called a change beyond
    noise, nor no change). `ratio`, `lo`, `hi` are oriented > 1 = better."""
    up, down = ("better", "worse") if better is not None else ("higher", "lower")
    word = up if ratio >= 1 else down
    pct = lambda x: f"{(x - 1) * 100:+.1f}%"  # noqa: E731
    return (f"likely {word} ({pct(ratio)}, CI {pct(lo)} to {pct(hi)}): not decisive, the CI crosses the "
            f"{noise:.0%} band edge")


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
