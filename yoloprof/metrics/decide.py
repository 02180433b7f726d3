"""What would decide a comparison, and how an undecided one is said (docs/analysis.md
"Statistics"): the units (trials or processes) per side a decision needs, and the words of
`changed, within noise`. Kept apart from `stats` so `nested` and `stats` share them."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

MIN_TRIALS = 2  # fewest values per side that get a test
POWER = 0.8     # the power every "needed" figure is for
MAX_UNITS = 10_000  # beyond this many per side, "what would decide" is reported as out of reach


def units_to_decide(sd: float, log_ratio: float, noise: float, alpha: float, k: int, df: float,
                    code: str) -> tuple[int | None, float | None]:
    """(units per side needed, smallest detectable change in % at k per side), units being trials
    or processes with `sd` the SD of one unit on the log scale. For `inconclusive`, the units to
    detect a change of the noise band with 80% power (two-sample t, exact noncentral-t power);
    for `within_noise`, the units that would shrink the CI enough to clear the band edge it now
    straddles if the true change is the one observed (so it would read improved/regressed, or
    equivalent when the observed change is inside the band). None when out of reach."""
    mde = (math.exp((sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(POWER, df)) * sd * math.sqrt(2 / k)) - 1) * 100
    band = math.log1p(noise)
    gap = band if code == "inconclusive" else abs(abs(log_ratio) - band)
    if sd <= 0 or gap <= 0:
        return None, _finite(mde)
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(POWER)
    n0 = max(MIN_TRIALS, int(2 * (z * sd / gap) ** 2) - 2)
    if n0 > MAX_UNITS:
        return None, _finite(mde)
    ns = np.arange(n0, n0 + 66)
    dfs = 2 * ns - 2
    tcrit = sps.t.ppf(1 - alpha / 2, dfs)
    nc = gap / (sd * np.sqrt(2 / ns))
    pw = sps.nct.sf(tcrit, dfs, nc) + sps.nct.cdf(-tcrit, dfs, nc)
    n = int(ns[int(np.argmax(pw >= POWER))] if (pw >= POWER).any() else ns[-1])
    return n, _finite(mde)


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
