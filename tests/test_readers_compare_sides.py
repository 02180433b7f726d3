"""compare lists every workload difference between the sides (model class, size, arguments,
parameters, data source, image size, loader workers), and ms per image has one definition:
step_ms / batch (worked case: steps of 50 and 150 ms at batch 2 give 50 ms per image, where
1000 / mean(img/s) would give 1000 / mean(40, 13.33) = 37.5)."""

from __future__ import annotations

import pytest
from helpers.profiles import gpu_train_profile

from yoloprof.profiles.model import metric
from yoloprof.readers.compare import compute_compare


def _sides():
    before, after = gpu_train_profile(), gpu_train_profile()
    before["config"].update(model="yolo", size="n", data="synthetic", workers=0, workers_effective=0)
    before["model"] = {"params_total": 3_000_000}
    after["config"] = {"source": "yoloprof.profile", "mode": "train", "model": "TinyResNet", "batch": 16,
                       "device": "0", "model_kwargs": {"width": 8}}
    after["model"] = {"params_total": 120_000}
    return before, after


def test_workload_differences_are_listed():
    before, after = _sides()
    r = compute_compare(before, after)
    diffs = {d["field"]: d for d in r["differences"]}
    assert diffs["model"]["before"] == "yolo" and diffs["model"]["after"] == "TinyResNet"
    assert diffs["params"]["before"] == 3_000_000 and diffs["params"]["after"] == 120_000
    assert diffs["data"]["after"] == "the user's own data (yoloprof.profile)"
    assert diffs["model_args"]["after"] == {"width": 8}
    assert not any(diffs[f]["big"] for f in ("model", "params", "data", "model_args"))  # listed, no flag
    assert not r["flagged"]


def test_same_workload_lists_nothing_of_it():
    before, after = gpu_train_profile(), gpu_train_profile()
    for p in (before, after):
        p["config"].update(model="yolo", size="n", data="synthetic", workers=2)
    fields = {d["field"] for d in compute_compare(before, after)["differences"]}
    assert not fields & {"model", "model_size", "model_args", "params", "data", "imgsz", "workers"}


def test_ms_per_image_is_step_over_batch():
    before, after = gpu_train_profile(), gpu_train_profile()
    for p in (before, after):
        p["config"]["batch"] = 2
        p["metrics"]["step_ms"] = metric([50.0, 150.0], "ms", "lower")
        p["metrics"]["img_per_s"] = metric([40.0, 2000.0 / 150.0], "img/s", "higher")
    row = next(d for d in compute_compare(before, after)["deltas"] if d["metric"] == "ms_per_image")
    assert row["before"] == pytest.approx(50.0) and row["after"] == pytest.approx(50.0)
