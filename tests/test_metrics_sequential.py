"""The group-sequential rule of trial=auto (metrics/sequential.py) against independent references:
a Monte Carlo of the look statistics for the boundaries, scipy's Welch interval for a single look,
and the closed forms of the spending function. (The error rate and power under the sweep's own
stopping, for families of 2, 5 and 20 comparisons, are measured by bench/bench_adaptive.py.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from yoloprof.metrics import sequential as seq


def test_spending_is_lan_demets_obrien_fleming():
    z = stats.norm.isf(0.025)
    assert seq.spent(1.0, 0.05) == pytest.approx(0.05)
    assert seq.spent(0.25, 0.05) == pytest.approx(2 * stats.norm.sf(z / 0.5))
    assert seq.spent(0.0, 0.05) == 0.0
    assert seq.boundaries([1.0], 0.05) == pytest.approx((z,))  # one look: the fixed design


@pytest.mark.parametrize("fractions", [(0.5, 1.0), (0.2, 0.4, 0.6, 0.8, 1.0), (0.3, 0.45, 0.7, 1.0)])
def test_boundaries_spend_alpha_as_planned_on_simulated_look_statistics(fractions):
    """Z_k = S(t_k)/sqrt(t_k) of a Brownian motion S (the joint law of the look statistics):
    the share of paths first crossing at each look is the planned increment of alpha."""
    rng = np.random.default_rng(7)
    t = np.asarray(fractions)
    paths = np.cumsum(rng.standard_normal((400_000, len(t))) * np.sqrt(np.diff(t, prepend=0.0)), axis=1)
    z = np.abs(paths / np.sqrt(t))
    crossed = z >= np.asarray(seq.boundaries(fractions, 0.05))
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    planned = np.diff([0.0] + [seq.spent(x, 0.05) for x in fractions])
    observed = np.array([(first == k).mean() for k in range(len(t))])
    assert observed == pytest.approx(planned, abs=0.0012)  # 3.5 SE of 400,000 paths at 5%
    assert (first >= 0).mean() == pytest.approx(0.05, abs=0.0012)


def test_a_single_look_is_welchs_interval_on_the_logs():
    b = np.log([10.0, 10.4, 9.8, 10.1])
    a = np.log([10.9, 11.3, 10.7, 11.6])
    d = seq.decide(b, a, 1, (4,), better="lower", alpha=0.05, noise=0.0)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (math.log(d.low), math.log(d.high)) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert d.code == "regressed" and d.level == pytest.approx(0.05)


def test_looks_use_the_planned_size_and_say_undecided_until_the_last():
    plan = seq.look_plan(3, 6)
    assert plan == (3, 4, 5, 6)
    rng = np.random.default_rng(3)
    b, a = rng.normal(0, 0.03, 9), rng.normal(0, 0.03, 6)  # a baseline with more processes than needed
    first = seq.decide(b, a, 1, plan)
    assert (first.code, first.n_base) == (seq.UNDECIDED, 3)
    assert seq.decide(b[:3], a[:3], 1, plan) == first  # only the first 3 of each side count
    assert seq.decide(b, a, 4, plan).code in ("inconclusive", "within_noise", "equivalent")
    with pytest.raises(ValueError):
        seq.decide(b, a[:4], 3, plan)  # look 3 needs 5 per side


def test_identical_work_is_called_different_at_most_alpha_under_the_stopping():
    """600 sweeps of one comparison of identical work, looked at after every trial from 3 to 10:
    the share ever called improved or regressed (noise band 0: any difference counts) is at most
    alpha (0.05; 0.05 + 2.5 SE = 0.072 allowed for the sampling error of 600)."""
    rng = np.random.default_rng(11)
    plan = seq.look_plan(3, 10)
    called = 0
    for _ in range(600):
        b, a = rng.normal(0, 0.04, 10), rng.normal(0, 0.04, 10)
        for look in range(1, len(plan) + 1):
            d = seq.decide(b, a, look, plan, alpha=0.05, noise=0.0)
            if d.code != seq.UNDECIDED:
                called += d.code in ("improved", "regressed")
                break
    assert called / 600 <= 0.072
