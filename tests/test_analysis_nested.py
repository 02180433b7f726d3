"""The sweep analysis with the job (one process) as the unit of replication: against an
independent computation from the rows, and one job per configuration judged by a noise floor."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from helpers.sweeps import BASE_CONFIG, make_sweep, write_job
from yoloprof.analysis.collect import collect
from yoloprof.analysis.run import analyze_collected
from yoloprof.metrics import noise_floor as noise
from yoloprof.metrics.nested import NO_FLOOR_WORDS


def _nested_sweep(root: Path, seed: int = 3) -> tuple[Path, dict[int, list[list[float]]]]:
    """3 jobs of 4 trials per configuration (batch 4 and 8), interleaved; batch 8 is 15% slower
    per step; 4% between jobs, 1% within."""
    rng = np.random.default_rng(seed)
    sweep = root / "sweeps" / "test" / "20240101-000000-abcd"
    truth: dict[int, list[list[float]]] = {4: [], 8: []}
    job = 0
    for t in range(3):
        for batch, step in ((4, 40.0), (8, 46.0)):
            vals = list(step * np.exp(rng.normal(0, 0.04) + rng.normal(0, 0.01, 4)))
            truth[batch].append(vals)
            write_job(sweep, job, {**BASE_CONFIG, "batch": batch, "repeat": 4},
                      {"step_ms": vals, "img_per_s": [batch * 1000 / v for v in vals]}, trial=t)
            job += 1
    return sweep, truth


def test_verdict_is_welch_on_job_means_not_pooled_trials(tmp_path: Path) -> None:
    sweep, truth = _nested_sweep(tmp_path)
    res = analyze_collected(collect(sweep), metrics=["step_ms"], correction="none")
    (row,) = res.comparisons.itertuples()
    mb = [statistics.fmean(map(math.log, g)) for g in truth[4]]
    ma = [statistics.fmean(map(math.log, g)) for g in truth[8]]
    vb, va = statistics.variance(mb) / 3, statistics.variance(ma) / 3
    df = (vb + va) ** 2 / (vb ** 2 / 2 + va ** 2 / 2)
    d = statistics.fmean(ma) - statistics.fmean(mb)
    assert row.p == pytest.approx(2 * sps.t.sf(abs(d) / math.sqrt(vb + va), df), rel=1e-9)
    assert row.ratio == pytest.approx(math.exp(-d), rel=1e-9)
    assert (row.n, row.n_baseline, row.k, row.k_baseline) == (12, 12, 3, 3)
    from yoloprof.render.csvout import comparison_csv

    csv = comparison_csv(res.comparisons).splitlines()
    assert "verdict_code,k_baseline,k,processes_needed" in csv[0] and ",3,3," in csv[1]
    pooled = sps.ttest_ind(np.log(sum(truth[8], [])), np.log(sum(truth[4], [])), equal_var=False)
    assert pooled.pvalue < row.p  # pooling 12 trials as independent overstates the evidence


def test_one_job_per_configuration_uses_a_stored_floor(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(noise.NOISE_FILE_ENV, str(tmp_path / "floors.json"))
    cfgs = [{"batch": 4}, {"batch": 8}]
    truth = lambda c, r: {"step_ms": [40.0 * (c["batch"] / 4) * 1.3 * x for x in (1.0, 1.01, 0.99)]}  # noqa: E731
    sweep = make_sweep(tmp_path / "s", cfgs, truth, trials=3, repeat_samples=True)
    (row,) = analyze_collected(collect(sweep), metrics=["step_ms"]).comparisons.itertuples()
    assert row.verdict == NO_FLOOR_WORDS and row.k == 1
    c = collect(sweep)
    base = next(p for p in c.profiles.values() if p["config"]["batch"] == 4)
    key = noise.store_key(*noise.profile_keys(base))
    noise.save_floor(key, {"metrics": {"step_ms": {"sd": 0.03, "df": 4, "within_sd": 0.01, "trials": 3,
                                                   "processes": 5, "between_sd": 0.029}},
                           "source": "test", "measured_at": "now", "workload": "w", "processes": 5})
    (row,) = analyze_collected(collect(sweep), metrics=["step_ms"]).comparisons.itertuples()
    assert row.verdict_code == "regressed" and "noise floor" in row.warnings
