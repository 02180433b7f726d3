"""yoloprof.metrics.stats against scipy computed here on the same samples, a hand-worked Holm
example, known-truth synthetic data and a false-positive simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from yoloprof.metrics.stats import (NEEDS_TRIALS, adjust_pvalues, compare_batch, compare_samples,
                                    outlier_indices, slow_first_trial)


def _lognormal(seed: int, median: float, sigma: float, n: int) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(median), sigma, n)


def test_welch_ci_and_mannwhitney_match_scipy_on_logs() -> None:
    before, after = _lognormal(1, 10.0, 0.03, 6), _lognormal(2, 9.5, 0.04, 7)
    r = compare_samples(before, after, better="lower")
    t = sps.ttest_ind(np.log(after), np.log(before), equal_var=False)
    ci = t.confidence_interval(0.95)
    assert r["p_welch"] == pytest.approx(t.pvalue, rel=1e-9)
    # lower is better: the oriented ratio is before/after, so the CI flips and inverts
    assert r["ci_low"] == pytest.approx(math.exp(-ci.high), rel=1e-9)
    assert r["ci_high"] == pytest.approx(math.exp(-ci.low), rel=1e-9)
    assert r["ratio"] == pytest.approx(sps.gmean(before) / sps.gmean(after), rel=1e-9)
    mw = sps.mannwhitneyu(after, before, alternative="two-sided", method="exact")
    assert r["p_mannwhitney"] == pytest.approx(mw.pvalue, rel=1e-9)
    assert r["cv_before"] == pytest.approx(np.std(before, ddof=1) / np.mean(before))
    assert (r["n_before"], r["n_after"]) == (6, 7)


def test_higher_is_better_keeps_after_over_before() -> None:
    before, after = _lognormal(3, 100.0, 0.02, 8), _lognormal(4, 120.0, 0.02, 8)
    r = compare_samples(before, after, better="higher")
    ci = sps.ttest_ind(np.log(after), np.log(before), equal_var=False).confidence_interval(0.95)
    assert r["ci_low"] == pytest.approx(math.exp(ci.low)) and r["ci_high"] == pytest.approx(math.exp(ci.high))
    assert r["verdict_code"] == "improved" and r["ratio"] > 1.1
    assert compare_samples(after, before, better="higher")["verdict_code"] == "regressed"
    assert compare_samples(before, after, better=None)["verdict"] == "increased"


def test_known_truth_ten_percent_faster_and_identical() -> None:
    base = _lognormal(10, 20.0, 0.02, 10)
    faster = _lognormal(11, 20.0 / 1.10, 0.02, 10)
    same = _lognormal(12, 20.0, 0.02, 10)
    assert compare_samples(base, faster, better="lower")["verdict_code"] == "improved"
    assert compare_samples(base, same, better="lower")["verdict_code"] in ("equivalent", "inconclusive")


def test_inconclusive_reports_detectable_change_and_trials_needed() -> None:
    r = compare_samples(_lognormal(5, 10, 0.08, 3), _lognormal(6, 10, 0.08, 3), better="lower")
    assert r["verdict_code"] == "inconclusive"
    assert r["mde_pct"] > 2 and r["trials_needed"] > 3
    # the trials reported really reach 80% power for a 2% change (noncentral t, computed here)
    s = math.sqrt((np.var(np.log(_lognormal(5, 10, 0.08, 3)), ddof=1)
                   + np.var(np.log(_lognormal(6, 10, 0.08, 3)), ddof=1)) / 2)

    def power(n: int) -> float:
        df, nc = 2 * n - 2, math.log(1.02) / (s * math.sqrt(2 / n))
        tc = sps.t.ppf(0.975, df)
        return sps.nct.sf(tc, df, nc) + sps.nct.cdf(-tc, df, nc)

    n = r["trials_needed"]
    assert power(n) >= 0.8 > power(n - 1)


def test_one_trial_gives_point_ratio_only() -> None:
    r = compare_samples([10.0], [9.0, 9.5, 9.7], better="lower")
    assert r["verdict"] == NEEDS_TRIALS and r["verdict_code"] == "insufficient"
    assert r["p_welch"] is None and r["ci_low"] is None
    assert r["ratio"] == pytest.approx(10 / sps.gmean([9, 9.5, 9.7]))


def test_two_trials_get_ratio_interval_and_p_labelled_low_power() -> None:
    """Against scipy directly: Welch's t on the log values, CI of the difference of log means."""
    b, a = [10.0, 11.0], [9.0, 9.4]
    r = compare_samples(b, a, better="lower")
    ref = sps.ttest_ind(np.log(a), np.log(b), equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert r["p_welch"] == pytest.approx(ref.pvalue)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((math.exp(-ci.high), math.exp(-ci.low)))
    assert r["ratio"] == pytest.approx(sps.gmean(b) / sps.gmean(a))
    assert r["low_power"] and "low power" in r["verdict"]
    assert any("low power" in w for w in r["warnings"])
    assert not compare_samples([10, 11, 12], [9, 9.4, 9.1])["low_power"]


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_two_trials_keep_false_positives_at_or_below_alpha(better) -> None:
    """Many seeds of identical (log-normal, CV 5%) samples, 2 trials per side: the share of
    improved/regressed verdicts, and of p < alpha, stays at or below alpha (Monte-Carlo margin
    3 standard errors)."""
    rng = np.random.default_rng(20261130)
    n, alpha = 4000, 0.05
    pairs = [(rng.lognormal(3.0, 0.05, 2), rng.lognormal(3.0, 0.05, 2), better) for _ in range(n)]
    results = compare_batch(pairs, alpha=alpha, noise=0.0)
    wrong = sum(r["verdict_code"] in ("improved", "regressed") for r in results) / n
    rejected = sum(r["p_welch"] < alpha for r in results) / n
    margin = 3 * math.sqrt(alpha * (1 - alpha) / n)
    assert wrong <= alpha + margin and rejected <= alpha + margin
    assert all(r["low_power"] for r in results)


def test_constant_samples_give_exact_ratio() -> None:
    assert compare_samples([5, 5, 5], [5, 5, 5])["verdict_code"] == "equivalent"
    r = compare_samples([100, 100, 100], [120, 120, 120], better="lower")
    assert r["verdict_code"] == "regressed" and r["ci_low"] == pytest.approx(100 / 120)


def test_instability_warnings_flag_but_never_drop() -> None:
    vals = [14.0, 10.0, 10.1, 9.9, 10.05, 10.0, 9.95]
    assert outlier_indices(vals) == [0]
    assert slow_first_trial(vals, "lower") and not slow_first_trial(vals[1:], "lower")
    assert slow_first_trial([70, 100, 101, 99], "higher")
    r = compare_samples(vals, [10.0, 10.1, 9.9, 10.0, 10.05], better="lower")
    joined = " ".join(r["warnings"])
    assert "outlier" in joined and "slow first trial" in joined and r["n_before"] == 7
    noisy = compare_samples([10, 13, 8, 12, 9], [10, 10, 10.1, 9.9, 10])
    assert any("CV" in w for w in noisy["warnings"])


def test_batch_equals_single_calls() -> None:
    pairs = [(_lognormal(i, 10, 0.05, 3 + i % 4), _lognormal(100 + i, 10.5, 0.05, 5), b)
             for i, b in zip(range(12), ["lower", "higher", None] * 4)]
    batch = compare_batch(pairs)
    for (b, a, better), r in zip(pairs, batch):
        single = compare_samples(b, a, better=better)
        assert r["verdict"] == single["verdict"] and r["p_welch"] == pytest.approx(single["p_welch"])


def test_holm_hand_worked_example() -> None:
    # m=4; sorted p: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> raised to 0.06 (monotone)
    assert adjust_pvalues([0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1, and untested entries stay None outside the family (m=2 here)
    assert adjust_pvalues([0.6, None, 0.2], "holm") == [pytest.approx(0.6), None, pytest.approx(0.4)]


def test_bh_is_scipy_and_none_is_identity() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    assert adjust_pvalues(p, "bh") == pytest.approx(list(sps.false_discovery_control(p, method="bh")))
    assert adjust_pvalues(p, "none") == pytest.approx(p)
    with pytest.raises(ValueError):
        adjust_pvalues(p, "bonferroni")


def test_false_positive_rate_at_most_alpha() -> None:
    """400 seeds of identical lognormal samples (n=5): 'improved'/'regressed' at most alpha, with a
    binomial tolerance; the raw Welch test itself rejects at about alpha."""
    seeds, alpha = 400, 0.05
    pairs = [(_lognormal(2 * s, 10, 0.03, 5), _lognormal(2 * s + 1, 10, 0.03, 5), "lower") for s in range(seeds)]
    res = compare_batch(pairs, alpha=alpha)
    limit = sps.binom.ppf(0.999, seeds, alpha)
    decided = sum(r["verdict_code"] in ("improved", "regressed") for r in res)
    rejected = sum(r["p_welch"] < alpha for r in res)
    assert decided <= limit
    assert rejected <= limit


@pytest.mark.parametrize("lo, hi, p, code", [
    (1.03, 1.08, 0.001, "improved"),
    (0.90, 0.97, 0.001, "regressed"),
    (0.99, 1.015, 0.40, "equivalent"),
    (0.99, 1.015, 0.01, "equivalent"),      # inside the band wins over significance
    (1.005, 1.04, 0.01, "within_noise"),    # significant, overlaps the band
    (0.95, 1.06, 0.50, "inconclusive"),
])
def test_classify_rules(lo: float, hi: float, p: float, code: str) -> None:
    from yoloprof.metrics.stats import classify

    assert classify(lo, hi, p, alpha=0.05, noise=0.02) == code


def test_small_real_change_is_changed_within_noise() -> None:
    base = np.array([100.0, 100.4, 99.6, 100.2, 99.8, 100.1, 99.9, 100.3])
    after = base / 1.02  # exactly 2% faster, on the band's edge: significant but not beyond d
    r = compare_samples(base, after[::-1], better="lower")
    assert r["verdict_code"] == "within_noise"
    assert r["verdict"] == "likely better (+2.0%, CI +1.7% to +2.3%): not decisive, the CI crosses the 2% band edge"
    assert r["ci_low"] < 1.02 < r["ci_high"] and r["p_welch"] < 0.05
