"""Axes and baselines that never lie (issue 9, analysis side): only keys the user swept are axes,
baselines never cross modes, and any swept key (a model `_target_` or its kwargs included) can be
varied, named in a baseline and shown with a short label."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from test_analysis_helpers import BASE_CONFIG, batch_truth, write_job
from yoloprof.analysis.collect import collect
from yoloprof.analysis.run import analyze_collected
from yoloprof.errors import UsageError


def _analyze(sweep: Path, **kw):
    return analyze_collected(collect(sweep, load_profiles=False), metrics=["step_ms"], **kw)


@pytest.fixture(scope="module")
def modes_sweep(tmp_path_factory) -> Path:
    """`mode=train,infer batch=4,8 trial=range(3)`: train has steps, infer has runs (derived)."""
    sweep = tmp_path_factory.mktemp("modes") / "sweeps" / "m" / "20240101-000000-mode"
    job = 0
    for t in range(3):
        for mode in ("train", "infer"):
            for batch in (4, 8):
                cfg = {**BASE_CONFIG, "mode": mode, "batch": batch, "steps": 5 if mode == "train" else None,
                       "runs": None if mode == "train" else 20, "data": "synthetic" if mode == "train" else None}
                m = batch_truth(cfg, __import__("numpy").random.default_rng(job))
                if mode == "infer":
                    m["step_ms"] = [x / 3 for x in m["step_ms"]]  # an inference call is much shorter
                write_job(sweep, job, cfg, m, trial=t, profile=False,
                          overrides=[f"mode={mode}", f"batch={batch}"])
                job += 1
    return sweep


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


@pytest.fixture(scope="module")
def models_sweep(tmp_path_factory) -> Path:
    """`model._target_=pkg.nets.NetA,pkg.nets.NetB +model.width=16,32`, 3 trials each."""
    import numpy as np

    sweep = tmp_path_factory.mktemp("models") / "sweeps" / "u" / "20240101-000000-modl"
    job = 0
    rng = np.random.default_rng(0)
    for t in range(3):
        for target in ("pkg.nets.NetA", "pkg.nets.NetB"):
            for width in (16, 32):
                step = (10.0 if target.endswith("A") else 20.0) * width / 16
                cfg = {**BASE_CONFIG, "model": target, "size": None}
                group = {**cfg, "width": width}  # the kwargs are part of the config hash
                vals = list(rng.lognormal(np.log(step), 0.01, 1))
                write_job(sweep, job, cfg, {"step_ms": vals}, trial=t, profile=False,
                          overrides=[f"model._target_={target}", f"+model.width={width}"])
                # write_job hashes `cfg`; give each width its own configuration
                path = sweep / str(job) / "row.parquet"
                table = pq.read_table(path)
                gh = __import__("test_analysis_helpers").group_hash(group)
                table = table.set_column(table.schema.get_field_index("group_hash"), "group_hash",
                                         __import__("pyarrow").array([gh]))
                pq.write_table(table, path)
                job += 1
    return sweep


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
