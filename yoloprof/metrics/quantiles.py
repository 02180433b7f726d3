"""Distribution-free confidence intervals of a quantile from order statistics, and when calls are
too few for a tail percentile to mean anything.

Why: a p99 from 30 calls is the largest call or nearly (numpy interpolates between the two
largest); its uncertainty is not small, it is unbounded above. For sorted calls x(1) <= ... <=
x(n) and the number B of calls below the true q-quantile, B ~ Binomial(n, q), so
P(x(l) <= x_q <= x(u)) >= P(l <= B <= u - 1) = F(u - 1) - F(l - 1) whatever the distribution
(Conover, Practical Nonparametric Statistics, 3.2; scipy's `quantile_test(...).confidence_interval`
is the same construction). The interval takes the equal-tailed order statistics: l the largest
with P(B <= l - 1) <= alpha/2, u the smallest with P(B >= u) <= alpha/2; an end that no order
statistic reaches is None (for p99 the upper one until n >= 368 at 95%: `min_calls`). The point
estimate stays numpy's linear interpolation (what the latency table has always shown).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

CONFIDENCE = 0.95


def min_calls(q: float, confidence: float = CONFIDENCE) -> int:
    """Fewest calls for which both ends of the interval of the q-quantile exist:
    (1-q)^n <= alpha/2 and q^n <= alpha/2."""
    half = (1.0 - confidence) / 2.0
    return max(1, math.ceil(math.log(half) / math.log(max(q, 1.0 - q)) - 1e-12))


def quantile_interval(values: Sequence[float], q: float, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """{estimate, low, high, coverage, n, ranks}: the q-quantile (0 < q < 1) of `values` with its
    distribution-free interval; `coverage` is the exact binomial coverage of the chosen order
    statistics (>= confidence when both ends exist), `ranks` their 1-based positions."""
    from scipy import stats

    x = np.sort(np.asarray([v for v in values if v is not None and math.isfinite(v)], float))
    n = len(x)
    if n == 0 or not 0.0 < q < 1.0:
        return {"estimate": None, "low": None, "high": None, "coverage": None, "n": n, "ranks": [None, None]}
    half = (1.0 - confidence) / 2.0
    cdf = stats.binom.cdf(np.arange(n + 1), n, q)  # cdf[k] = P(B <= k)
    lows = np.flatnonzero(cdf[:n] <= half)  # lo - 1 for lo = 1..n
    highs = np.flatnonzero(1.0 - cdf[:n] <= half)  # u - 1 for u = 1..n
    lo = int(lows[-1]) + 1 if len(lows) else None
    u = int(highs[0]) + 1 if len(highs) else None
    coverage = (cdf[u - 1] if u else 1.0) - (cdf[lo - 1] if lo else 0.0)
    return {"estimate": float(np.percentile(x, 100.0 * q)), "low": float(x[lo - 1]) if lo else None,
            "high": float(x[u - 1]) if u else None, "coverage": float(coverage), "n": n, "ranks": [lo, u]}


def tail_note(label: str, q: float, n: int, confidence: float = CONFIDENCE) -> str | None:
    """A warning when n calls are too few for the q-quantile's interval to have both ends."""
    need = min_calls(q, confidence)
    if n >= need:
        return None
    return (f"{label} from {n} calls: too few for a {confidence:.0%} interval with both ends (needs >= {need} "
            f"calls); it is close to the {'largest' if q > 0.5 else 'smallest'} call and says little")
