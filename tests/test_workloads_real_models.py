"""Real models nobody here wrote, built from their configs, captured with zero lines of user code:
one capture per family and mode (in-process, tiny), and one sweep over batch and imgsz across the
three families run as a user runs it, with the network unreachable (tests/helpers/offline.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import yoloprof
from helpers.offline import run_offline
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.defs import files

TINY = dict(device="cpu", warmup=1, warmup_max=1, repeat=1, trace=True, trace_wait=0, trace_warmup=0,
            trace_active=1, modules=False, workers=0, threads=1)
TRAINER_PARTS = {"ultralytics": {"clip": True, "ema": True}, "libreyolo": {"clip": False, "ema": True},
                 "torchvision": {"clip": False, "ema": False}}
CASES = [  # (model, size, mode, imgsz)
    ("ultralytics:yolov8n.yaml", "n", "train", 64),
    ("ultralytics:yolo11n.yaml", "n", "infer", 64),
    ("libreyolo:yolo9", "t", "train", 64),
    ("libreyolo:yolo9", "t", "infer", 33),  # LibreYOLO rounds it up: it runs at 64
    ("torchvision:ssdlite320_mobilenet_v3_large", "n", "train", 96),
    ("torchvision:fasterrcnn_mobilenet_v3_large_320_fpn", "n", "infer", 96),
    ("torchvision:resnet18", "n", "train", 64),
    ("torchvision:resnet18", "n", "infer", 64),
]


@pytest.mark.parametrize("model, size, mode, imgsz", CASES, ids=[f"{m}-{mode}" for m, _, mode, _ in CASES])
def test_a_real_model_is_captured_with_its_own_pieces(model, size, mode, imgsz, tmp_path, monkeypatch):
    family = model.split(":")[0]
    pytest.importorskip(family)
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path / "ultralytics"))
    counts = {"steps": 2, "batch": 2} if mode == "train" else {"runs": 3, "batch": 1}
    settings = CaptureSettings.for_mode(mode, model=model, size=size, imgsz=imgsz, **counts, **TINY)
    prof = yoloprof.capture(settings, tmp_path / "p")
    data = prof.data
    assert data["config"]["model"] == model
    if mode == "train":
        ms = {p["phase"]: p["wall_ms_per_step"] for p in data["phases"]}
        assert all(ms[p] > 0 for p in ("to_device", "forward", "backward", "optimizer")), ms
        assert data["metrics"]["step_ms"]["value"] > 0
        # the family's trainer's step (docs/workloads.md): its parts are phases, absent ones no rows
        recipe = data["train_recipe"]
        parts = {"clip": recipe["clip_max_norm"] is not None, "ema": recipe["ema"] is not None}
        assert parts == TRAINER_PARTS[family] and all(ms.get(p, 0) > 0 for p in parts if parts[p])
        assert not any(p in ms for p in parts if not parts[p])
        every = recipe["optimizer_every"]
        assert every == (32 if family == "ultralytics" else 1)  # nbs 64 / batch 2; the others: none
        assert ("amortised_step_ms" in data["metrics"]) == (every > 1)
    else:
        stages = {s["stage"]: s["ms"] for s in data["stages"]}
        assert set(stages) == {"preprocess", "forward", "postprocess"} and all(v > 0 for v in stages.values())
        assert data["latency"]["p50_ms"] > 0
    if imgsz % 32:  # the profile records the size that ran, and what was asked (issue 41)
        assert (data["config"]["imgsz"], data["config"]["imgsz_asked"]) == (-(-imgsz // 32) * 32, imgsz)
        assert any(f"--imgsz {imgsz}: LibreYOLO runs" in w for w in data["warnings"])
    else:
        assert data["config"]["imgsz"] == imgsz and "imgsz_asked" not in data["config"]
    header = prof.summary()["workload"]
    assert ("size" in header) == (family == "libreyolo")


@pytest.mark.slow
def test_a_sweep_over_batch_and_imgsz_of_each_family_offline(tmp_path):
    """`yoloprof sweep model=ultralytics,libreyolo,torchvision ...` as a user types it, in a
    process that cannot reach the network and logs every try: every job ok, no attempt at all."""
    for family in ("ultralytics", "libreyolo", "torchvision"):
        pytest.importorskip(family)
    done, attempts = run_offline(
        "sweep", "-m", "model=ultralytics,libreyolo,torchvision", "size=t", "mode=infer", "batch=1,2",
        "imgsz=64,96", "device=cpu", "threads=1", "capture.runs=2", "capture.warmup=1",
        "capture.warmup_max=1", "capture.trace=false", "capture.modules=false", "launch.isolation=inprocess",
        "analysis.enabled=false", "hydra.sweep.dir=S", tmp=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert attempts == []
    rows = pd.read_parquet(tmp_path / "S" / files.RESULTS)
    assert (rows["status"] == "ok").all() and len(rows) == 12
    assert set(rows["model"]) == {"ultralytics:yolov8n.yaml", "libreyolo:yolo9", "torchvision:resnet18"}
    assert set(zip(rows["batch"], rows["imgsz"])) == {(1, 64), (1, 96), (2, 64), (2, 96)}
    # the size column describes the one family that has sizes
    assert set(rows.loc[rows["model"] != "libreyolo:yolo9", "size"].dropna()) == set()
    profile = json.loads(next((tmp_path / "S").rglob(files.PROFILE)).read_text())
    assert profile["metrics"]["p50_ms"]["value"] > 0 and {s["stage"] for s in profile["stages"]} == {
        "preprocess", "forward", "postprocess"}


KNOB_CASES = [  # (model, size, knobs, imgsz): each family's network moved to a runtime by a capture
    ("ultralytics:yolov8n.yaml", "n", {"runtime": "onnxruntime"}, 64),
    ("torchvision:ssdlite320_mobilenet_v3_large", "n", {"runtime": "openvino", "memory_format": "channels_last"}, 96),
]  # LibreYOLO9-t under each runtime, network to detections: tests/test_capturing_runtimes.py


@pytest.mark.slow
@pytest.mark.parametrize("model, size, knobs, imgsz", KNOB_CASES, ids=[f"{m}-{'-'.join(k.values())}"
                                                                      for m, _, k, _ in KNOB_CASES])
def test_a_capture_moves_the_family_network_to_a_runtime_and_checks_its_outputs(model, size, knobs, imgsz,
                                                                                tmp_path, monkeypatch):
    """`--runtime` through a real capture: the family's pre- and post-process stay (their stages
    are timed), the conversion is `setup_s`, and the outputs are checked against the eager
    float32 network in the same (export) form, tensor for tensor: float32 runtimes agree to well
    under the default tolerance; SSDlite (score 0.001: it detects) matches its detections."""
    for module in ("onnxruntime" if knobs["runtime"] == "onnxruntime" else None,
                   "openvino" if knobs["runtime"] == "openvino" else None, model.split(":")[0]):
        if module:
            pytest.importorskip(module)
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path / "ultralytics"))
    settings = CaptureSettings.for_mode("infer", model=model, size=size, imgsz=imgsz, runs=3, batch=1,
                                        **{**TINY, "trace": False}, **knobs)
    data = yoloprof.capture(settings, tmp_path / "p").data
    assert {k: data["config"][k] for k in knobs} == knobs
    assert {s["stage"] for s in data["stages"]} == {"preprocess", "forward", "postprocess"}
    assert data["metrics"]["setup_s"]["value"] > 0 and data["metrics"]["first_call_ms"]["value"] > 0
    assert data["outputs"]["reference"] == "eager, contiguous, float32"
    assert data["metrics"]["output_max_rel_diff"]["value"] < 1e-4
    if model.startswith("torchvision"):
        assert data["metrics"]["detections_matched_pct"]["value"] >= 90
