"""Quantile intervals from order statistics: a hand-worked median case, scipy's own
`quantile_test(...).confidence_interval()`, and the fewest calls for a tail percentile."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from yoloprof.metrics.quantiles import min_calls, quantile_interval, tail_note


def test_median_of_ten_by_hand():
    # B ~ Bin(10, 1/2): P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, so l = 2 and by
    # symmetry u = 9: [x(2), x(9)], coverage 1 - 2 * 11/1024 = 0.978515625.
    r = quantile_interval([float(v) for v in range(10, 0, -1)], 0.5)
    assert r["ranks"] == [2, 9] and (r["low"], r["high"]) == (2.0, 9.0)
    assert r["coverage"] == pytest.approx(1 - 22 / 1024)
    assert r["estimate"] == pytest.approx(5.5)


@pytest.mark.parametrize("n, q", [(30, 0.9), (100, 0.9), (400, 0.99), (50, 0.5), (1000, 0.99)])
def test_matches_scipy_quantile_test(n, q):
    x = np.random.default_rng(n).lognormal(0.0, 0.5, n)
    ref = stats.quantile_test(x, q=np.quantile(x, q), p=q).confidence_interval(0.95)
    r = quantile_interval(x.tolist(), q)
    nan = lambda v: float("nan") if v is None else v  # noqa: E731 (scipy: nan for a missing end)
    assert nan(r["low"]) == pytest.approx(ref.low, nan_ok=True)
    assert nan(r["high"]) == pytest.approx(ref.high, nan_ok=True)
    assert r["coverage"] >= 0.95 or None in (r["low"], r["high"])


def test_p99_of_thirty_calls_has_no_upper_end():
    r = quantile_interval(list(np.linspace(1.0, 2.0, 30)), 0.99)
    assert r["high"] is None and r["low"] is not None
    assert min_calls(0.99) == 368 and min_calls(0.9) == 36 and min_calls(0.5) == 6
    assert 0.99 ** 368 <= 0.025 < 0.99 ** 367  # the rule min_calls encodes, by hand
    assert "needs >= 368 calls" in tail_note("p99", 0.99, 30) and tail_note("p99", 0.99, 400) is None
