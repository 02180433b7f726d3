"""Drift detection (issue 18): a trend with job order that could explain a verdict is reported as
drift, never as a regression; checked against an independent least-squares fit (numpy lstsq on a
design matrix with one dummy per configuration) and the t distribution from scipy."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from helpers.sweeps import BASE_CONFIG, write_job
from yoloprof.analysis.collect import collect
from yoloprof.analysis.drift import _fit
from yoloprof.analysis.run import analyze_collected


def _blocked_sweep(root: Path, n: int, *, drift_mb: float, mem_ratio: float = 1.0, interleave: bool = False,
                   seed: int = 0) -> Path:
    """Two labels doing the same work (two labels on one arithmetic, as the old amp_dtype axis with amp off gave),
    n jobs each; peak memory climbs `drift_mb` per job through the sweep; step time is flat."""
    rng = np.random.default_rng(seed)
    sweep = root / "sweeps" / "drift" / "20240101-000000-drft"
    order = [(t, d) for t in range(n) for d in ("float16", "bfloat16")] if interleave else \
        [(t, d) for d in ("float16", "bfloat16") for t in range(n)]
    for job, (t, dtype) in enumerate(order):
        mem = 430.0 * (mem_ratio if dtype == "bfloat16" else 1.0) + drift_mb * job + rng.normal(0, 0.5)
        step = float(rng.lognormal(math.log(20.0), 0.02))
        write_job(sweep, job, {**BASE_CONFIG, "precision": dtype},
                  {"step_ms": [step], "img_per_s": [4000 / step], "peak_mem_mb": [mem]}, trial=t, profile=False)
    return sweep


def _analyze(sweep: Path):
    return analyze_collected(collect(sweep, load_profiles=False), vary="precision")


def test_injected_drift_is_reported_as_drift_not_regression(tmp_path: Path) -> None:
    res = _analyze(_blocked_sweep(tmp_path, 40, drift_mb=0.3))
    cmp = res.comparisons.set_index("metric")
    mem = cmp.loc["peak_mem_mb"]
    assert mem["verdict_code"] == "drift" and "drift explains this verdict" in mem["warnings"]
    assert "regressed" in mem["verdict"]  # says what it would have been
    assert mem["ratio"] < 0.98  # raw: the later label looks >2% worse
    assert mem["drift_adj_ratio"] == pytest.approx(1.0, abs=0.005)
    assert not set(res.comparisons["verdict_code"]) & {"improved", "regressed"}
    assert res.regressions().empty
    drift = res.drift.set_index(["config", "metric"])
    assert drift.loc[("precision=float16", "peak_mem_mb"), "significant"]
    assert not drift.xs("step_ms", level="metric")["significant"].any()
    assert any(w.startswith("drift: precision=bfloat16 / peak_mem_mb") for w in res.warnings)
    doc = res.to_json()
    assert {d["metric"] for d in doc["drift"] if d["significant"]} == {"peak_mem_mb"}


def test_identical_work_without_drift_has_no_decisive_verdict_and_no_flag(tmp_path: Path) -> None:
    res = _analyze(_blocked_sweep(tmp_path, 40, drift_mb=0.0))
    assert not set(res.comparisons["verdict_code"]) & {"improved", "regressed", "drift"}
    assert not res.drift["significant"].any()


def test_real_difference_in_blocks_without_drift_stays_a_verdict(tmp_path: Path) -> None:
    res = _analyze(_blocked_sweep(tmp_path, 20, drift_mb=0.0, mem_ratio=1.10))
    mem = res.comparisons.set_index("metric").loc["peak_mem_mb"]
    assert mem["verdict_code"] == "regressed" and mem["drift_p"] > 0.025


def test_interleaved_sweep_with_drift_keeps_its_verdict(tmp_path: Path) -> None:
    # interleaving gives both sides the same mean position: the trend adds no bias
    res = _analyze(_blocked_sweep(tmp_path, 20, drift_mb=0.145, mem_ratio=1.10, interleave=True))
    mem = res.comparisons.set_index("metric").loc["peak_mem_mb"]
    assert mem["verdict_code"] == "regressed" and abs(mem["drift_pct"]) < 0.1


def test_common_slope_fit_matches_lstsq_and_scipy_t() -> None:
    rng = np.random.default_rng(3)
    g = np.repeat([0, 1, 2], 7)
    x = rng.permutation(len(g)).astype(float)
    y = np.array([0.0, 0.3, -0.2])[g] + 0.01 * x + rng.normal(0, 0.02, len(g))
    b, p = _fit(x, y, g)
    design = np.column_stack([(g == k).astype(float) for k in range(3)] + [x])
    coef, rss, *_ = np.linalg.lstsq(design, y, rcond=None)
    df = len(y) - design.shape[1]
    se = math.sqrt(rss[0] / df * np.linalg.inv(design.T @ design)[-1, -1])
    assert b == pytest.approx(coef[-1], rel=1e-9)
    assert p == pytest.approx(2 * sps.t.sf(abs(coef[-1] / se), df), rel=1e-6)


def _mem_sweep(root: Path, device: str, growth: bool) -> Path:
    """Two labels of the same work; the process RSS peak (peak_mem_mb) of the second label is 8%
    higher because earlier jobs left memory behind, the job's own growth is the same."""
    rng = np.random.default_rng(1)
    sweep = root / "sweeps" / "mem" / "20240101-000000-memo"
    job = 0
    for t in range(4):
        for dtype in ("float16", "bfloat16"):
            start = 400.0 if dtype == "float16" else 432.0
            own = 50.0 + rng.normal(0, 0.2)
            m = {"step_ms": [20.0 + rng.normal(0, 0.1)], "peak_mem_mb": [start + own]}
            if growth:
                m["peak_mem_growth_mib"] = [own]
            write_job(sweep, job, {**BASE_CONFIG, "device": device, "precision": dtype}, m, trial=t)
            job += 1
    return sweep


def test_cpu_memory_compared_as_the_jobs_own_growth(tmp_path: Path) -> None:
    res = analyze_collected(collect(_mem_sweep(tmp_path / "a", "cpu", growth=True)))
    assert "peak_mem_growth_mib" in res.metrics_compared and "peak_mem_mb" not in res.metrics_compared
    growth = res.comparisons.set_index("metric").loc["peak_mem_growth_mib"]
    assert growth["verdict_code"] == "equivalent"
    assert any("peak_mem_growth_mib (each job's peak over its own starting footprint)" in n for n in res.notes)
    # asked for explicitly, the absolute peak still shows the inherited difference
    rss = analyze_collected(collect(_mem_sweep(tmp_path / "b", "cpu", growth=True)), metrics=["peak_mem_mb"])
    assert rss.comparisons["verdict_code"].tolist() == ["regressed"]


def test_gpu_memory_is_the_allocator_peak_and_missing_growth_is_said(tmp_path: Path) -> None:
    gpu = analyze_collected(collect(_mem_sweep(tmp_path / "g", "cuda", growth=True)))
    assert "peak_mem_mb" in gpu.metrics_compared and "peak_mem_growth_mib" not in gpu.metrics_compared
    old = analyze_collected(collect(_mem_sweep(tmp_path / "o", "cpu", growth=False)))
    assert "peak_mem_mb" in old.metrics_compared
    assert any("without peak_mem_growth_mib" in n for n in old.notes)


def test_docs_state_the_thresholds_of_the_code() -> None:
    from yoloprof.analysis.inventory import STATES
    from yoloprof.analysis.settings import MAX_NAME
    from yoloprof.analysis import drift
    from yoloprof.metrics.sides import CAPTURE_GAP_FLAG_S

    doc = (Path(__file__).resolve().parents[1] / "docs" / "analysis.md").read_text()
    assert f"`MIN_JOBS = {drift.MIN_JOBS}`" in doc and "`p < alpha/2`" in doc
    assert "`|adjusted| <= log(1 + noise)`" in doc
    assert f"`CAPTURE_GAP_FLAG_S` = {CAPTURE_GAP_FLAG_S:.0f} s" in doc
    assert f"longer than {MAX_NAME}" in doc
    assert all(f"`{s}`" in doc for s in STATES)


def test_jobs_a_moment_apart_give_no_per_hour_rate_instead_of_an_overflow():
    """Six in-process jobs 0.1 s apart whose step time grows 5% a job: the per-hour slope is about
    e^(0.05 x 36000), which no float holds; the rate is n/a (NaN), the per-100-jobs one is the fit's."""
    import pandas as pd

    from yoloprof.analysis.drift import drift_table

    order = np.arange(6, dtype=float)
    jobs = pd.DataFrame({"group_hash": "g", "metric": "step_ms", "order": order,
                         "hours": order * 0.1 / 3600, "y": np.log(10.0) + 0.05 * order})
    row = drift_table(jobs, {"g": "batch=1"}, alpha=0.05).iloc[0]
    assert math.isnan(row["pct_per_hour"])
    assert row["pct_per_100_jobs"] == pytest.approx(100 * math.expm1(100 * 0.05))


def test_a_significant_trend_of_jobs_seconds_apart_is_described_without_an_overflow():
    """The comparison's drift note of the same kind of sweep: six jobs of two configurations, 0.5 s
    apart, step time growing with start time (not with order: the jobs' start times are uneven).
    The per-hour slope is thousands of e-folds; the note says so in words and the table keeps the
    trend's share of the comparison, a finite %, instead of the whole analysis failing."""
    import pandas as pd

    from yoloprof.analysis.drift import apply_drift

    seconds = np.array([0.0, 0.4, 1.5, 1.6, 3.1, 3.2])
    group = np.array(["a", "b", "b", "a", "a", "b"])
    jobs = pd.DataFrame({"group_hash": group, "metric": "step_ms", "order": np.arange(6.0),
                         "hours": seconds / 3600, "y": np.log(10.0) + 0.25 * seconds})
    cmp = pd.DataFrame([{"metric": "step_ms", "verdict_code": "same", "verdict": "same",
                         "baseline_hash": "a", "group_hash": "b", "better": "lower", "warnings": ""}])
    out = apply_drift(cmp, jobs, alpha=0.05, noise=0.0).iloc[0]
    share = 0.25 * (seconds[group == "b"].mean() - seconds[group == "a"].mean())  # 900 e-folds an hour
    assert out["drift_pct"] == pytest.approx(100 * math.expm1(share))
    assert out["drift_p"] < 0.05
    assert "more than a float holds per hour" in out["warnings"] and "nan" not in out["warnings"]
