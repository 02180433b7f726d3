"""Axes and baselines that never lie (issue 9, analysis side): only keys the user swept are axes,
baselines never cross modes, and any swept key (a model `_target_` or its kwargs included) can be
varied, named in a baseline and shown with a short label."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.sweeps import BASE_CONFIG, batch_truth, write_job
from yoloprof.analysis.collect import collect
from yoloprof.analysis.run import analyze_collected
from yoloprof.errors import UsageError


def _analyze(sweep: Path, **kw):
    return analyze_collected(collect(sweep, load_profiles=False), metrics=["step_ms"], **kw)


def _mode_of(label: str) -> str:
    return label.split("mode=")[1].split(",")[0]


def test_only_swept_keys_are_axes_and_baselines_stay_in_their_mode(modes_sweep: Path) -> None:
    res = _analyze(modes_sweep)
    assert res.varying == ["mode", "batch"]  # not steps, runs or data
    cmp = res.comparisons
    assert len(cmp) == 2
    for r in cmp.itertuples():
        assert _mode_of(r.config) == _mode_of(r.baseline_config)
    assert set(cmp["baseline_config"]) == {"mode=train, batch=4", "mode=infer, batch=4"}
    assert res.baseline.startswith("within each mode:")
    vary = _analyze(modes_sweep, vary="batch").comparisons
    assert {(r.config, r.baseline_config) for r in vary.itertuples()} == {
        ("mode=train, batch=8", "mode=train, batch=4"), ("mode=infer, batch=8", "mode=infer, batch=4")}
    with pytest.raises(UsageError, match="modes are compared only within themselves"):
        _analyze(modes_sweep, vary="mode")
    with pytest.raises(UsageError, match="modes are never compared"):
        _analyze(modes_sweep, baseline=["mode=train"])


def test_rows_without_overrides_still_drop_mode_derived_fields(modes_sweep: Path, tmp_path: Path) -> None:
    c = collect(modes_sweep, load_profiles=False)
    c.ok["overrides"] = None
    res = analyze_collected(c, metrics=["step_ms"])
    assert res.varying == ["mode", "batch"]


def test_model_targets_and_kwargs_are_axes_with_short_labels(models_sweep: Path) -> None:
    res = _analyze(models_sweep, vary="model")
    assert res.varying == ["model", "model.width"]
    assert {(r.config, r.baseline_config) for r in res.comparisons.itertuples()} == {
        ("model=NetB, model.width=16", "model=NetA, model.width=16"),
        ("model=NetB, model.width=32", "model=NetA, model.width=32")}
    assert (res.comparisons["verdict_code"] == "regressed").all()  # NetB is 2x slower, by construction
    same = _analyze(models_sweep, vary="model._target_").comparisons
    pd.testing.assert_frame_equal(same, res.comparisons)
    base_b = _analyze(models_sweep, baseline=["model=NetB"]).comparisons
    assert set(base_b["baseline_config"]) == {"model=NetB, model.width=16", "model=NetB, model.width=32"}
    full = _analyze(models_sweep, baseline=["model._target_=pkg.nets.NetB"]).comparisons
    pd.testing.assert_frame_equal(full, base_b)
    width = _analyze(models_sweep, baseline=["model.width=32"]).comparisons
    assert set(width["baseline_config"]) == {"model=NetA, model.width=32", "model=NetB, model.width=32"}
    assert (width["verdict_code"] == "improved").all()  # width 16 is 2x faster
    with pytest.raises(UsageError, match="unknown axis 'colour'"):
        _analyze(models_sweep, baseline=["colour=red"])
    assert json.loads(json.dumps(res.to_json(), default=str))["varying_axes"] == ["model", "model.width"]


# ---- differences between compared sides besides the swept axes ---------------------------------

def _env_sweep(root: Path, *, threads_b: int = 2, device_b: str = "cpu", hours_apart: float = 0.0,
               interleave: bool = True) -> Path:
    """batch=4 vs batch=8, 3 trials each (batch 8 is 10% faster per image by construction); the
    batch=8 jobs may run with another thread count, device model, or hours after batch=4."""
    import datetime as dt

    import numpy as np

    sweep = root / "sweeps" / "env" / "20240101-000000-envd"
    rng = np.random.default_rng(0)
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    order = [(t, b) for t in range(3) for b in (4, 8)] if interleave else [(t, b) for b in (4, 8) for t in range(3)]
    for job, (t, b) in enumerate(order):
        cfg = {**BASE_CONFIG, "batch": b}
        start = t0 + dt.timedelta(minutes=job) + (dt.timedelta(hours=hours_apart) if b == 8 else dt.timedelta())
        extra = {"started_at": start, **({"threads": threads_b} if b == 8 else {})}
        write_job(sweep, job, cfg, batch_truth(cfg, rng), trial=t, profile=False, extra=extra,
                  env={"device_name": device_b if b == 8 else "cpu"})
    return sweep


def test_sides_that_differ_only_in_the_swept_axis_are_not_flagged(tmp_path: Path) -> None:
    res = analyze_collected(collect(_env_sweep(tmp_path), load_profiles=False), metrics=["img_per_s"])
    (row,) = res.comparisons.to_dict("records")
    assert row["verdict_code"] == "improved" and row["flagged"] == ""
    assert row["env_diff"] == "batch 4 vs 8 (swept)"
    (d,) = res.to_json()["env_differences"]
    assert (d["field"], d["before"], d["after"], d["big"], d["expected"]) == ("batch", "4", "8", True, True)


def test_thread_count_and_device_differences_flag_the_verdict(tmp_path: Path) -> None:
    res = analyze_collected(collect(_env_sweep(tmp_path, threads_b=1, device_b="other-cpu"), load_profiles=False),
                            metrics=["img_per_s", "step_ms"])
    cmp = res.comparisons.set_index("metric")
    assert set(cmp["verdict_code"]) == {"flagged"}
    assert res.regressions().empty  # step_ms is a "regression" by construction, but flagged
    text = cmp.loc["img_per_s", "env_diff"]
    assert "device model cpu vs other-cpu" in text and "thread count 2 vs 1" in text and "batch 4 vs 8 (swept)" in text
    assert cmp.loc["img_per_s", "verdict"].startswith("flagged: improved across ")
    fields = {d["field"]: d for d in res.to_json()["env_differences"]}
    assert fields["threads"]["big"] and not fields["threads"]["expected"]
    assert any("differ in more than the swept axes" in w for w in res.warnings)


def test_capture_time_gap_between_blocks_flags_and_interleaving_does_not(tmp_path: Path) -> None:
    apart = analyze_collected(collect(_env_sweep(tmp_path / "a", hours_apart=3, interleave=False),
                                      load_profiles=False), metrics=["img_per_s"])
    (row,) = apart.comparisons.to_dict("records")
    assert row["verdict_code"] == "flagged" and "capture time" in row["env_diff"]
    gap = {d["field"]: d for d in apart.to_json()["env_differences"]}["captured_at"]
    # the windows' nearest ends: batch=4's last start (job 2, +2 min) and batch=8's first (+3 h 3 min)
    assert (gap["before"], gap["after"]) == ("2024-01-01T00:02:00+00:00", "2024-01-01T03:03:00+00:00")
    close = analyze_collected(collect(_env_sweep(tmp_path / "b"), load_profiles=False), metrics=["img_per_s"])
    assert "capture time" not in close.comparisons.iloc[0]["env_diff"]
