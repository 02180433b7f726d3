"""`profile_trainer` never breaks the user's training: short trainings, a failing profiler, and
Ultralytics' gradient accumulation (one optimizer step per round(nbs / batch) batches), on real,
tiny, offline Ultralytics trainings."""

from __future__ import annotations

import gc
import json
import time

import pytest

from helpers.ultralytics_data import BATCH, yolo_dataset as _dataset  # sets YOLO_OFFLINE before the import

pytest.importorskip("ultralytics")

import yoloprof  # noqa: E402

QUICK = {"trace_steps": 0, "flops": False, "modules": False}


def _train(model, data, tmp_path, **args):
    model.train(data=str(data), epochs=1, imgsz=64, batch=BATCH, workers=0, device="cpu", plots=False, val=False,
                amp=False, project=str(tmp_path / "runs"), name="t", exist_ok=True, pretrained=False,
                verbose=False, save=False, cache=False, mosaic=0.0, **args)


def _count_batches(model):
    seen = []
    model.add_callback("on_train_batch_end", lambda trainer: seen.append(1))
    return seen


def test_a_training_shorter_than_the_warmup_returns_normally(tmp_path, monkeypatch, capsys):
    from ultralytics import YOLO

    monkeypatch.chdir(tmp_path)
    data = _dataset(tmp_path, n=8)  # 8 images, batch 2: 4 iterations; the defaults need 34
    model = YOLO("yolov8n.yaml")
    hooks = yoloprof.profile_trainer(model, tmp_path / "prof")
    with pytest.warns(RuntimeWarning, match=r"no profile written: the loop ran 4 iteration\(s\); one timed step "
                                            r"needs 6 and the whole profile 34"):
        _train(model, data, tmp_path)  # returns normally: nothing raised into the trainer
    assert hooks.path is None and hooks.result is None and hooks.failure is None
    err = capsys.readouterr().err
    assert "the profile needs 34 iterations" in err and "this training runs 4 (1 epoch(s) of 4 batches)" in err
    assert not (tmp_path / "prof").exists()


def test_a_short_training_gets_a_partial_profile(tmp_path, monkeypatch):
    from ultralytics import YOLO

    monkeypatch.chdir(tmp_path)
    data = _dataset(tmp_path, n=8)
    model = YOLO("yolov8n.yaml")
    hooks = yoloprof.profile_trainer(model, tmp_path / "prof", warmup=1, steps=20, **QUICK)
    with pytest.warns(RuntimeWarning, match="ended .* early: it ran 4 of the"):
        _train(model, data, tmp_path)
    doc = json.loads(hooks.path.read_text())
    assert doc["config"]["iterations_run"] == 4 and doc["config"]["iterations_lacking"] > 0
    acc = doc["accumulation"]
    # Ultralytics: accumulate = max(round(nbs / batch), 1) = 32, capped by the training's 4 batches;
    # ni - last_opt_step >= 4 first holds at ni = 3: the 4th batch, a timed step here (iterations 2-4)
    assert acc["accumulate"] == 4 and acc["nbs"] == 64 and acc["batch"] == BATCH
    assert acc["timed_steps"] == 3 and acc["timed_steps_with_optimizer"] == 1 and acc["measured_in"] == "timed steps"
    optimizer = doc["metrics"]["optimizer_wall_ms"]["value"]  # its mean over the one step that ran it
    assert acc["optimizer_call_ms"] == pytest.approx(optimizer)
    assert acc["amortised_ms_per_step"] == pytest.approx(optimizer / 4)
    assert any("optimizer ran in 1 of the 3 measured timed steps" in w for w in doc["warnings"])


def test_no_optimizer_step_in_the_window_is_timed_after_it(tmp_path, monkeypatch):
    from ultralytics import YOLO

    monkeypatch.chdir(tmp_path)
    data = _dataset(tmp_path, n=20)  # 10 batches of 2
    model = YOLO("yolov8n.yaml")
    reference = []  # the trainer's own optimizer_step, timed by a wrapper inside yoloprof's

    def wrap(trainer):
        step = trainer.optimizer_step

        def timed():
            begin = time.perf_counter()
            step()
            reference.append((time.perf_counter() - begin) * 1e3)

        trainer.optimizer_step = timed

    model.add_callback("on_train_start", wrap)  # before profile_trainer's: it wraps this wrapper
    hooks = yoloprof.profile_trainer(model, tmp_path / "prof", warmup=1, warmup_max=1, steps=3,
                                     stop_when_done=True, **QUICK)
    batches = _count_batches(model)
    _train(model, data, tmp_path, nbs=16)  # accumulate = round(16 / 2) = 8: the first step at batch 8
    doc = json.loads(hooks.path.read_text())
    acc = doc["accumulation"]
    assert acc["accumulate"] == 8 and acc["timed_steps"] == 3 and acc["timed_steps_with_optimizer"] == 0
    assert acc["measured_in"] == "after the windows" and acc["optimizer_calls"] == 1
    assert len(batches) == 8  # stop_when_done waited for the optimizer step (batch 8), no longer
    (ref,) = reference
    assert ref <= acc["optimizer_call_ms"] <= ref + 50  # plus two synchronises and a wrapper's calls
    assert acc["amortised_ms_per_step"] == pytest.approx(acc["optimizer_call_ms"] / 8)
    assert "optimizer_wall_ms" not in doc["metrics"]
    (note,) = [w for w in doc["warnings"] if "once per 8 batches" in w]
    assert "ran no optimizer step" in note and "amortised per step" in note


def test_a_failing_profiler_never_stops_the_training(tmp_path, monkeypatch):
    from ultralytics import YOLO

    from yoloprof.capturing.userloop.loop import Profile

    monkeypatch.chdir(tmp_path)
    data = _dataset(tmp_path, n=8)
    model = YOLO("yolov8n.yaml")
    hooks = yoloprof.profile_trainer(model, tmp_path / "prof", warmup=1, steps=2, **QUICK)
    batches = _count_batches(model)
    frozen = gc.get_freeze_count()

    def broken(self, batch=None):
        raise ZeroDivisionError("a bug in the profiler")

    monkeypatch.setattr(Profile, "step", broken)
    with pytest.warns(RuntimeWarning, match="profiling stopped, no profile written .*on_train_batch_end: "
                                            "ZeroDivisionError"):
        _train(model, data, tmp_path)
    assert len(batches) == 4 and hooks.path is None and hooks.prof is None
    assert "ZeroDivisionError" in (hooks.failure or "")
    assert gc.get_freeze_count() <= frozen
