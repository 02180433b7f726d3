"""What `yoloprof history` says when it finds no change point (issue 36, items 5f and 9): too few
captures for the permutation test to reach its level, else the smallest step it could have found
and the captures per commit that would find the asked size. References: the exact permutation
distribution enumerated by brute force, and a simulation of the search itself."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from yoloprof.analysis.history import HistoryQuery, compute_history
from yoloprof.metrics.changepoints import _q, detectable, find_splits, min_attainable_p
from yoloprof.profiles import store
from yoloprof.render.history_report import render_history


def _store(tmp_path, values) -> None:
    for v in values:  # one capture per point, ordered by capture time
        store.append(tmp_path, {"status": "ok", "config_key": "k", "step_ms": float(v), "cpu_model": "c",
                                "device_name": "c", "threads": 1, "git_commit": None, "started_at": None})


def test_the_smallest_attainable_p_is_the_exact_permutation_p_of_two_clusters():
    """Seven values in two far-apart clusters (3 low, 4 high): every one of the 7! orders
    enumerated, the maximum over the allowed cuts compared with the observed one."""
    y = np.array([0.0, 0.0, 0.0, 9.0, 9.0, 9.0, 9.0]) + np.arange(7) * 1e-3
    cuts = np.arange(2, 6)
    observed = _q((y - y.mean())[None, :], cuts).max()
    perms = np.array(list(itertools.permutations(y)))
    exact = float((_q(perms - perms.mean(axis=1, keepdims=True), cuts).max(axis=1) >= observed * (1 - 1e-9)).mean())
    assert min_attainable_p(np.arange(7)) == pytest.approx(exact) == pytest.approx(2 / 35)
    assert min_attainable_p(np.arange(10)) < 0.01 < min_attainable_p(np.arange(9))


def test_seven_captures_with_a_clear_step_say_too_few_captures(tmp_path, capsys):
    rng = np.random.default_rng(3)
    _store(tmp_path, 10 * np.exp(rng.normal(0, 0.01, 7)) * np.r_[np.ones(3), np.full(4, 1.3)])
    result = compute_history(HistoryQuery(tmp_path, repo=tmp_path))
    (s,) = result["machines"][0]["series"]
    assert s["change_points"] == [] and s["detectable"]["too_few"]
    render_history(result)
    out = capsys.readouterr().out
    assert "too few captures for the change-point test: 7, need at least 10" in out
    assert "no change points" not in out


def test_twenty_commits_with_an_8_percent_step_name_what_could_have_been_seen(tmp_path, capsys):
    """One capture per commit, 8% slower from commit 11, 6% run-to-run noise (a loaded machine):
    no change point is found, and the output names the smallest step it could have found and the
    captures per commit that would find a 2% one."""
    rng = np.random.default_rng(12)
    y = rng.normal(0, 0.06, 20) + np.r_[np.zeros(10), np.full(10, math.log(1.08))]
    _store(tmp_path, 10 * np.exp(y))
    result = compute_history(HistoryQuery(tmp_path, repo=tmp_path))
    (s,) = result["machines"][0]["series"]
    d = s["detectable"]
    assert s["change_points"] == [] and not d["too_few"]
    assert d["step_pct"] > 8 and d["per_commit"] > 1
    render_history(result)
    out = " ".join(capsys.readouterr().out.split())
    assert f"could detect a step >= {d['step_pct']:.1f}%" in out
    assert f"about {d['per_commit']} captures per commit would detect 2%" in out


@pytest.mark.parametrize("n", [20, 40])
def test_the_search_finds_a_step_of_the_detectable_size_about_80_percent_of_the_time(n):
    """400 simulated series of n single captures, 5% noise, a step of the named size at the
    middle: the search itself (permutation test, 199 shuffles) finds it in 80% of them, within
    the simulation's spread (SE 2%) and the conservative approximation's margin."""
    d = detectable(np.arange(n), 0.05, 0.02)
    step = math.log1p(d["step_pct"] / 100)
    rng = np.random.default_rng(n)
    found = 0
    for _ in range(400):
        y = rng.normal(0, 0.05, n)
        y[n // 2:] += step
        found += bool(find_splits(y))
    assert 0.74 <= found / 400 <= 0.92


def test_an_inconclusive_gate_names_what_it_could_detect_and_the_captures_that_would():
    """Reference: the power of the pooled t test computed here from scipy's noncentral t, and a
    simulation of the gate's own judgement at the named change."""
    from scipy import stats as sps

    from yoloprof.analysis.gate import judge

    rng = np.random.default_rng(4)
    base = 10 * np.exp(rng.normal(0, 0.05, 8))
    j = judge(base, np.array([10.2]), "lower", 0.05, 0.02)
    assert j["verdict_code"] == "inconclusive"
    sp, m = float(np.log(base).std(ddof=1)), 8
    delta, se, df = math.log1p(j["mde_pct"] / 100), sp * math.sqrt(1 / m + 1), m - 1
    tc = sps.t.ppf(0.975, df)
    assert sps.nct.sf(tc, df, delta / se) + sps.nct.cdf(-tc, df, delta / se) == pytest.approx(0.8, abs=1e-4)
    # a 2% change is out of reach with 8 baseline captures of 5% noise, however many new ones
    assert j["new_needed"] is None and "longer baseline" in j["detectable"]
    # simulated: the judgement's own p at the named change, fresh baselines of the same noise
    sims = rng.normal(0, sp, (4000, m))
    new = rng.normal(delta, sp, 4000)
    t = (new - sims.mean(axis=1)) / (sims.std(axis=1, ddof=1) * math.sqrt(1 / m + 1))
    assert float((np.abs(t) > tc).mean()) == pytest.approx(0.8, abs=0.03)
    assert f"could detect >= {j['mde_pct']:.1f}%" in j["detectable"]


def test_an_inconclusive_gate_with_a_long_quiet_baseline_names_the_new_captures_that_would_decide():
    from scipy import stats as sps

    from yoloprof.analysis.gate import judge

    base = 10 * np.exp(np.random.default_rng(4).normal(0, 0.01, 30))
    j = judge(base, np.array([10.1]), "lower", 0.05, 0.02)
    sp, m = float(np.log(base).std(ddof=1)), 30

    def power(k: int) -> float:  # the pooled t with k new captures (their spread taken as the baseline's)
        df, nc = m + k - 2, math.log(1.02) / (sp * math.sqrt(1 / m + 1 / k))
        tc = sps.t.ppf(0.975, df)
        return sps.nct.sf(tc, df, nc) + sps.nct.cdf(-tc, df, nc)

    k = j["new_needed"]
    assert j["verdict_code"] == "inconclusive" and power(k) >= 0.8 > power(k - 1)
    assert f"about {k} new captures of this commit would detect 2%" in j["detectable"]


def test_history_detect_asks_about_another_size_and_refuses_a_bad_one(tmp_path):
    from helpers.paths import run_main

    rng = np.random.default_rng(12)
    _store(tmp_path, 10 * np.exp(rng.normal(0, 0.06, 20)))
    r = run_main("history", tmp_path, "--repo", tmp_path, "--detect", "0.08", "--json")
    (s,) = json.loads(r.stdout)["machines"][0]["series"]
    assert r.returncode == 0 and s["detectable"]["size"] == 0.08 and "would detect 8%" in s["detectable"]["words"]
    r = run_main("history", tmp_path, "--detect", "-1")
    assert r.returncode == 2 and "--detect -1" in r.stderr and "Traceback" not in r.stderr
