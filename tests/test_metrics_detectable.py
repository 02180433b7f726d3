"""The one home of "what could have been seen" (metrics/decide.py): the minimum detectable effect
and the units per side to detect a size, against independent references (a Monte-Carlo of the
t-test itself, and the published sample sizes of the two-sample t-test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from yoloprof.metrics.decide import detect_words, mde_pct, units_to_detect


@pytest.mark.parametrize("n,sd", [(4, 0.05), (12, 0.08)])
def test_power_at_the_mde_is_80_percent_in_simulation(n: int, sd: float) -> None:
    """20,000 simulated pairs of n log-normal processes per side, the true change at the MDE:
    Student's two-sample t on the logs rejects at alpha 0.05 in 80% of them (SE 0.3%)."""
    mde = mde_pct(sd, n, 0.05)
    assert mde is not None
    rng = np.random.default_rng(7)
    b = rng.normal(0.0, sd, (20_000, n))
    a = rng.normal(math.log1p(mde / 100), sd, (20_000, n))
    power = float((sps.ttest_ind(a, b, axis=1).pvalue < 0.05).mean())
    assert power == pytest.approx(0.80, abs=0.02)


@pytest.mark.parametrize("d,n", [(0.2, 394), (0.5, 64), (0.8, 26), (1.0, 17)])
def test_units_to_detect_match_the_published_sample_sizes(d: float, n: int) -> None:
    """Cohen's effect size d (difference / SD) at alpha 0.05 two-sided, 80% power: n per group
    from G*Power's exact t-test table (394, 64, 26, 17). On the log scale SD 1 and size e^d - 1."""
    assert units_to_detect(1.0, math.expm1(d), 0.05)[0] == n


def test_the_words_name_the_mde_and_the_cost() -> None:
    words = detect_words(11.26, 12, "process", 0.05, 40, 0.02)
    assert words == ("could detect >= 11.3% (alpha 0.05, 80% power) with 12 processes per side; "
                     "about 40 per side would detect 2%")
    assert "enough for a change of 2%" in detect_words(1.5, 50, "capture", 0.05, 30, 0.02)
    assert "n/a" in detect_words(None, 1, "capture", 0.05, None, 0.02)
    assert mde_pct(0.0, 5, 0.05) is None and mde_pct(0.05, 1, 0.05) is None


def test_the_max_trials_of_a_floor_give_the_sequential_design_80_percent_power():
    """Simulated group-sequential sweeps (20,000; looks at 3..n per side, O'Brien-Fleming
    boundaries, process means of log-SD 3%) with a true change of the noise band (2%): the design
    at max_trials_for's n rejects in at least 80% (the figure is conservative: it ignores the
    earlier looks) and not far more (below 90%)."""
    from yoloprof.metrics import sequential

    sd, size = 0.03, 0.02
    n = sequential.max_trials_for(sd, size, 3)
    assert n is not None
    plan = sequential.look_plan(3, n)
    c = np.array(sequential.boundaries([k / n for k in plan]))
    rng = np.random.default_rng(5)
    diff = rng.normal(math.log1p(size), sd * math.sqrt(2), (20_000, n))  # candidate - baseline per round
    sums = np.cumsum(diff, axis=1)[:, np.array(plan) - 1]
    z = sums / (sd * np.sqrt(2 * np.array(plan)))
    power = float((np.abs(z) >= c).any(axis=1).mean())
    assert 0.80 <= power < 0.90


def test_one_process_per_side_against_a_floor_names_its_detectable_change():
    """One process per side judged against a stored floor (process-mean SD 3%, 5 processes: df 4):
    the MDE reaches 80% power at the floor's df with se = sd sqrt(2), by scipy's noncentral t."""
    from yoloprof.metrics.nested import compare_nested

    floor = {"sd": 0.03, "df": 4, "within_sd": 0.0, "trials": 3, "processes": 5}
    r = compare_nested([[10.0, 10.0, 10.0]], [[10.3, 10.3, 10.3]], floor=floor)
    assert r["verdict_code"] == "inconclusive" and r["method"] == "noise floor"
    tc, nc = sps.t.ppf(0.975, 4), math.log1p(r["mde_pct"] / 100) / (0.03 * math.sqrt(2))
    assert sps.nct.sf(tc, 4, nc) + sps.nct.cdf(-tc, 4, nc) == pytest.approx(0.8, abs=1e-4)
    assert r["note"].startswith(f"could detect >= {r['mde_pct']:.1f}% (alpha 0.05, 80% power) with 1 process per side")
