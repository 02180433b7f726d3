"""A search sweep (Hydra's Optuna sweeper): maximise img_per_s with peak memory under a cap."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

import yoloprof.capturing.builtin.capture_entry as capture_api
from helpers.fake_sweep import fake_capture
from yoloprof.sweep.app import main
from yoloprof.sweep.search import objective



def test_objective_is_the_metric_or_the_reason_the_point_is_infeasible():
    search = {"metric": "img_per_s", "max_peak_mem_mib": 500.0}
    assert objective({"status": "ok", "img_per_s": 80.0, "peak_mem_mb": 400.0}, search) == 80.0
    assert "above the cap" in objective({"status": "ok", "img_per_s": 90.0, "peak_mem_mb": 600.0}, search)
    assert "failed" in objective({"status": "failed", "error": "OOM"}, search)
    assert "no img_per_s" in objective({"status": "ok", "img_per_s": None, "peak_mem_mb": 1.0}, search)
    assert objective({"status": "ok", "img_per_s": 9.0, "peak_mem_mb": None}, {"metric": "img_per_s"}) == 9.0


def test_search_sweep_finds_the_best_point_under_the_memory_cap(tmp_path, monkeypatch):
    """The sweeper's best is the feasible maximum computed independently from the rows it ran, and
    the fastest point, over the cap, is never chosen. (A seeded random sampler: Hydra's Optuna
    sweeper cannot end a grid search on a failed trial - optuna's GridSampler stops the study from
    a place the plugin does not expect.)"""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    monkeypatch.setenv("FAKE_PEAK_MEM_PER_IMAGE", "100")
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    assert main(["+sweep=search_throughput", "hydra/sweeper/sampler=random", "hydra.sweeper.sampler.seed=2",
                 "hydra.sweeper.n_trials=8",
                 "hydra.sweeper.params.batch='choice(1,2,4,8)'", "hydra.sweeper.params.imgsz='choice(64)'",
                 "search.max_peak_mem_mib=450", "analysis.enabled=false", "launch.isolation=inprocess",
                 "device=cpu"]) == 0
    [sweep] = (tmp_path / "runs" / "profile" / "sweeps" / "search_throughput").iterdir()
    rows = pd.read_parquet(sweep / "results.parquet")
    assert set(rows["batch"]) == {1, 2, 4, 8} and set(rows["status"]) == {"ok"} and len(rows) == 8
    feasible = rows[rows["peak_mem_mb"] <= 450]
    best = feasible.loc[feasible["img_per_s"].idxmax()]
    fastest = rows.loc[rows["img_per_s"].idxmax()]
    assert fastest["peak_mem_mb"] > 450  # the cap matters: the unconstrained best is excluded
    result = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert result["best_params"]["batch"] == best["batch"]
    assert result["best_value"] == pytest.approx(best["img_per_s"])


def test_a_search_without_a_feasible_point_shows_the_rows_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    monkeypatch.setenv("FAKE_PEAK_MEM_PER_IMAGE", "100")
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    assert main(["+sweep=search_throughput", "hydra.sweeper.n_trials=2", "search.max_peak_mem_mib=50",
                 "analysis.enabled=false", "launch.isolation=inprocess", "device=cpu"]) == 1
    err = capsys.readouterr().err
    assert "no feasible point" in err and "Traceback" not in err
    [sweep] = (tmp_path / "runs" / "profile" / "sweeps" / "search_throughput").iterdir()
    assert len(pd.read_parquet(sweep / "results.parquet")) == 2
