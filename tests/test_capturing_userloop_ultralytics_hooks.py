"""`yoloprof.profile_trainer` around a real, tiny, offline Ultralytics training run."""

from __future__ import annotations

import json
import time

import pytest

from helpers.ultralytics_data import BATCH, yolo_dataset as _dataset  # sets YOLO_OFFLINE before the import

pytest.importorskip("ultralytics")

import yoloprof  # noqa: E402
from yoloprof.errors import UsageError  # noqa: E402

SLEEP_S = 0.03


def _slow_dataset(trainer):
    """Make each sample of the training set take SLEEP_S longer to load (workers=0: in this process)."""
    dataset = trainer.train_loader.dataset
    base = type(dataset)

    def getitem(self, index):
        time.sleep(SLEEP_S)
        return base.__getitem__(self, index)

    dataset.__class__ = type("SlowDataset", (base,), {"__getitem__": getitem})


def test_profile_trainer_profiles_a_real_training(tmp_path, monkeypatch):
    from ultralytics import YOLO

    monkeypatch.chdir(tmp_path)  # anything Ultralytics writes lands here
    data = _dataset(tmp_path)
    model = YOLO("yolov8n.yaml")
    hooks = yoloprof.profile_trainer(model, tmp_path / "prof", warmup=1, warmup_max=1, steps=3, trace_steps=1,
                                     flops=False, modules=False, stop_when_done=True)
    model.add_callback("on_train_start", _slow_dataset)  # after profile_trainer's own on_train_start
    model.train(data=str(data), epochs=1, imgsz=64, batch=BATCH, workers=0, device="cpu", plots=False, val=False,
                amp=False, nbs=2, project=str(tmp_path / "runs"), name="t", exist_ok=True, pretrained=False,
                verbose=False, save=False, cache=False, mosaic=0.0)
    assert hooks.path is not None and hooks.path.is_file()
    doc = json.loads(hooks.path.read_text())
    assert hooks.result is not None
    text = json.dumps(doc)
    for phase in ("dataload", "forward_backward", "optimizer"):
        assert phase in text
    assert hooks.prof is None  # closed at on_train_end
    metrics = {k: v["value"] for k, v in doc["metrics"].items()}
    step, load = metrics["step_ms"], metrics["dataload_wall_ms"]
    # hand-worked: every sample sleeps SLEEP_S in the DataLoader, so each batch waits >= batch * SLEEP_S
    assert load >= BATCH * SLEEP_S * 1000
    assert load + metrics["forward_backward_wall_ms"] + metrics["optimizer_wall_ms"] <= step * 1.001
    assert 0 < load / step < 1  # the share of the step that waits for data (verdict's dataload_share)


def test_a_training_that_raises_writes_nothing(tmp_path, monkeypatch):
    import gc

    from ultralytics import YOLO

    monkeypatch.chdir(tmp_path)
    data = _dataset(tmp_path, n=8)
    model = YOLO("yolov8n.yaml")
    hooks = yoloprof.profile_trainer(model, tmp_path / "prof", warmup=1, steps=2, trace_steps=0, flops=False,
                                     modules=False)
    frozen = gc.get_freeze_count()

    def fail(trainer):
        raise KeyError("user error")

    model.add_callback("on_train_batch_end", fail)
    with pytest.raises(KeyError, match="user error"):
        model.train(data=str(data), epochs=1, imgsz=64, batch=BATCH, workers=0, device="cpu", plots=False,
                    val=False, amp=False, nbs=2, project=str(tmp_path / "runs"), name="t", exist_ok=True,
                    pretrained=False, verbose=False, save=False, mosaic=0.0)
    assert hooks.prof is None and hooks.path is None and not (tmp_path / "prof").exists()
    assert gc.get_freeze_count() <= frozen  # the profile's frozen heap is released


def test_profile_trainer_refuses_what_is_not_a_yolo_model():
    with pytest.raises(UsageError, match="add_callback"):
        yoloprof.profile_trainer(object(), "x")
