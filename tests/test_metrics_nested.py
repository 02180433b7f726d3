"""The nested comparison (process = unit of replication) against an independent computation and a
simulation with realistic process-level noise; the noise-floor store."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from yoloprof.errors import UsageError
from yoloprof.metrics import noise_floor as noise
from yoloprof.metrics.nested import NO_FLOOR_WORDS, compare_nested
from yoloprof.metrics.stats import compare_batch, compare_samples


def _sim(rng, k, m, shift=0.0, between=0.04, within=0.01, base=50.0):
    return [list(base * np.exp(shift + rng.normal(0, between) + rng.normal(0, within, m))) for _ in range(k)]


def test_matches_hand_computed_welch_on_process_means() -> None:
    before = [[10.0, 10.2, 10.1], [11.0, 10.8], [10.5, 10.4, 10.6, 10.5]]
    after = [[9.0, 9.1], [9.6, 9.5, 9.4], [9.2, 9.3, 9.1]]
    mb = [statistics.fmean(math.log(v) for v in g) for g in before]
    ma = [statistics.fmean(math.log(v) for v in g) for g in after]
    vb, va = statistics.variance(mb) / 3, statistics.variance(ma) / 3
    se = math.sqrt(vb + va)
    df = (vb + va) ** 2 / (vb ** 2 / 2 + va ** 2 / 2)  # Welch-Satterthwaite, 3 per side
    d = statistics.fmean(ma) - statistics.fmean(mb)
    t = sps.t.ppf(0.975, df)
    r = compare_nested(before, after, better="lower")
    assert r["method"] == "process means, Welch"
    assert r["p_welch"] == pytest.approx(2 * sps.t.sf(abs(d) / se, df), rel=1e-9)
    assert r["ratio"] == pytest.approx(math.exp(-d), rel=1e-12)  # lower is better: before/after
    assert r["ci_low"] == pytest.approx(math.exp(-(d + t * se)), rel=1e-9)
    assert r["ci_high"] == pytest.approx(math.exp(-(d - t * se)), rel=1e-9)
    assert (r["processes_before"], r["n_before"]) == (3, 9)
    within = math.sqrt(sum(sum((math.log(v) - m) ** 2 for v in g) for g, m in zip(before, mb)) / (9 - 3))
    assert r["within_sd_before"] == pytest.approx(within, rel=1e-9)


def test_false_positive_rate_of_identical_work_is_at_most_alpha_and_pooled_is_not() -> None:
    """Between-process CV 4%, within 1%, 3 processes x 5 trials per side, identical work: the
    nested test calls at most alpha of pairs different; pooling the 15 trials as independent
    (the old test) calls far more."""
    rng = np.random.default_rng(23)
    reps, alpha = 400, 0.05
    nested = pooled = 0
    pairs = []
    for _ in range(reps):
        b, a = _sim(rng, 3, 5), _sim(rng, 3, 5)
        nested += compare_nested(b, a, alpha=alpha, noise=0.0)["p_welch"] < alpha
        pairs.append((sum(b, []), sum(a, []), "lower"))
    pooled = sum(r["p_welch"] < alpha for r in compare_batch(pairs, alpha=alpha, noise=0.0))
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert nested / reps <= alpha + 2.5 * se
    assert pooled / reps > 0.4  # the flaw the issue measured (23% of pairs at its noise split)


def test_a_real_change_is_found_from_process_means() -> None:
    rng = np.random.default_rng(5)
    r = compare_nested(_sim(rng, 6, 5), _sim(rng, 6, 5, shift=math.log(1.25)), better="lower")
    assert r["verdict_code"] == "regressed" and r["ci_high"] < 0.98


def test_one_process_per_side_without_floor_is_inconclusive_and_says_why() -> None:
    r = compare_nested([[10.0, 10.1, 9.9]], [[12.0, 12.1, 11.9]], better="lower")
    assert r["verdict_code"] == "inconclusive" and r["verdict"] == NO_FLOOR_WORDS
    assert r["ci_low"] is None and r["p_welch"] is None and r["ratio"] == pytest.approx(10.0 / 12.0, rel=1e-3)
    # the old trial-level test would have called this regressed from 3 trials that share a process
    assert compare_samples([10.0, 10.1, 9.9], [12.0, 12.1, 11.9])["verdict_code"] == "regressed"


def test_one_process_per_side_with_floor_uses_the_floor() -> None:
    floor = {"sd": 0.02, "df": 7, "within_sd": 0.005, "trials": 5, "processes": 8}
    big = compare_nested([[10.0, 10.1, 9.9]], [[13.0, 13.1, 12.9]], floor=floor)
    assert big["method"] == "noise floor" and big["verdict_code"] == "regressed" and big["floor"] == floor
    assert any("noise floor" in w for w in big["warnings"])
    # hand: between^2 = sd^2 - within^2/trials; var of each mean = between^2 + own within^2 / 3
    b2 = 0.02 ** 2 - 0.005 ** 2 / 5
    wb = statistics.stdev(math.log(v) for v in (10.0, 10.1, 9.9))
    wa = statistics.stdev(math.log(v) for v in (13.0, 13.1, 12.9))
    se = math.sqrt(b2 + wb ** 2 / 3 + b2 + wa ** 2 / 3)
    d = (statistics.fmean(math.log(v) for v in (13.0, 13.1, 12.9))
         - statistics.fmean(math.log(v) for v in (10.0, 10.1, 9.9)))
    assert big["p_welch"] == pytest.approx(2 * sps.t.sf(d / se, 7), rel=1e-9)
    small = compare_nested([[10.0, 10.1, 9.9]], [[10.1, 10.2, 10.0]], floor=floor)
    assert small["verdict_code"] not in ("improved", "regressed")


def test_within_noise_words_say_direction_interval_and_what_decides() -> None:
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(40):
        r = compare_nested(_sim(rng, 8, 3, between=0.02), _sim(rng, 8, 3, shift=-0.03, between=0.02))
        if r["verdict_code"] == "within_noise":
            hits += 1
            assert r["verdict"].startswith("likely better (+") and "CI +" in r["verdict"]
            assert "not decisive" in r["verdict"] and "2% band edge" in r["verdict"]
            assert r["processes_needed"] and "processes per side would decide" in r["note"]
    assert hits


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        compare_nested([[1.0]], [[1.0]], better="up")
    assert compare_nested([], [[1.0]])["verdict_code"] == "insufficient"
    r = compare_nested([[1.0, -1.0, None], [1.1]], [[1.0], [float("nan"), 1.2]])
    assert r["processes_before"] == 2 and any("ignored 2" in w for w in r["warnings"])


def test_noise_floor_estimate_and_store(tmp_path, monkeypatch) -> None:
    groups = [[10.0, 10.2], [11.0, 11.2], [10.4, 10.6], [10.8, 10.6]]
    est = noise.estimate_floor(groups)
    means = [statistics.fmean(math.log(v) for v in g) for g in groups]
    assert est["sd"] == pytest.approx(statistics.stdev(means), rel=1e-12) and est["df"] == 3
    assert noise.estimate_floor(groups[:2]) is None
    profiles = [{"kind": "infer", "env": {"hostname": "h"}, "config": {"batch": 1},
                 "metrics": {"step_ms": {"samples": g}}} for g in groups]
    key, rec = noise.floor_record(profiles, "calibrate", "2026-01-01T00:00:00Z")
    monkeypatch.setenv(noise.NOISE_FILE_ENV, str(tmp_path / "floors.json"))
    noise.save_floor(key, rec)
    found = noise.find_floor(profiles[0], "step_ms")
    assert found["sd"] == pytest.approx(est["sd"]) and found["source"] == "calibrate"
    other = {**profiles[0], "config": {"batch": 2}}
    assert noise.find_floor(other, "step_ms") is None
    with pytest.raises(UsageError, match="identical"):
        noise.floor_record([profiles[0], other, profiles[1]], "x", "y")
    (tmp_path / "floors.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(UsageError, match="floors.json"):
        noise.find_floor(profiles[0], "step_ms")


def test_a_floor_of_zero_noise_still_decides() -> None:
    """Peak memory identical in every calibration process: a floor of SD 0 is a floor, not none."""
    floor = {"sd": 0.0, "df": 4, "within_sd": 0.0, "trials": 3, "processes": 5}
    same = compare_nested([[300.0, 300.0]], [[300.0, 300.0]], floor=floor)
    assert same["method"] == "noise floor" and same["verdict_code"] == "equivalent"
    more = compare_nested([[300.0, 300.0]], [[330.0, 330.0]], floor=floor)
    assert more["verdict_code"] == "regressed" and more["ci_low"] == more["ci_high"]


def test_one_process_against_several_borrows_their_spread() -> None:
    """3 processes against 1, no stored floor: the 3 give the run-to-run SD (df 2), a hand-computed
    prediction interval; one against one still has nothing to go on."""
    many = [[10.0, 10.1], [10.6, 10.5], [10.2, 10.3]]
    r = compare_nested(many, [[13.0, 13.1]], better="lower")
    assert r["method"] == "other side's processes" and any("vary alike" in w for w in r["warnings"])
    means = [statistics.fmean(map(math.log, g)) for g in many]
    within2 = sum(sum((math.log(v) - m) ** 2 for v in g) for g, m in zip(many, means)) / 3
    between2 = max(0.0, statistics.variance(means) - within2 / 2)
    w_one = statistics.variance([math.log(13.0), math.log(13.1)])
    se = math.sqrt((between2 + within2 / 2) / 3 + (between2 + w_one / 2))
    d = statistics.fmean(map(math.log, [13.0, 13.1])) - statistics.fmean(means)
    assert r["p_welch"] == pytest.approx(2 * sps.t.sf(d / se, 2), rel=1e-9)
    assert r["verdict_code"] == "regressed"
