"""Drift detection (issue 18): a trend with job order that could explain a verdict is reported as
drift, never as a regression; checked against an independent least-squares fit (numpy lstsq on a
design matrix with one dummy per configuration) and the t distribution from scipy."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from test_analysis_helpers import BASE_CONFIG, write_job
from yoloprof.analysis.collect import collect
from yoloprof.analysis.drift import _fit
from yoloprof.analysis.run import analyze_collected


def _blocked_sweep(root: Path, n: int, *, drift_mb: float, mem_ratio: float = 1.0, interleave: bool = False,
                   seed: int = 0) -> Path:
    """Two labels doing the same work (amp_dtype float16 / bfloat16, amp off: issue 18's sweep),
    n jobs each; peak memory climbs `drift_mb` per job through the sweep; step time is flat."""
    rng = np.random.default_rng(seed)
    sweep = root / "sweeps" / "drift" / "20240101-000000-drft"
    order = [(t, d) for t in range(n) for d in ("float16", "bfloat16")] if interleave else \
        [(t, d) for d in ("float16", "bfloat16") for t in range(n)]
    for job, (t, dtype) in enumerate(order):
        mem = 430.0 * (mem_ratio if dtype == "bfloat16" else 1.0) + drift_mb * job + rng.normal(0, 0.5)
        step = float(rng.lognormal(math.log(20.0), 0.02))
        write_job(sweep, job, {**BASE_CONFIG, "amp_dtype": dtype},
                  {"step_ms": [step], "img_per_s": [4000 / step], "peak_mem_mb": [mem]}, trial=t, profile=False)
    return sweep


def _analyze(sweep: Path):
    return analyze_collected(collect(sweep, load_profiles=False), vary="amp_dtype")


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
    assert drift.loc[("amp_dtype=float16", "peak_mem_mb"), "significant"]
    assert not drift.xs("step_ms", level="metric")["significant"].any()
    assert any(w.startswith("drift: amp_dtype=bfloat16 / peak_mem_mb") for w in res.warnings)
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
