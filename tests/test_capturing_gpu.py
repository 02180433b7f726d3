"""GPU capture paths: CUDA events, allocator peaks, AMP float16 with GradScaler, --batch -1.
They run only where CUDA is present (tests/gpu.py); CI and the development machine have none."""

from __future__ import annotations

import json

from helpers.paths import run_cli
from gpu import requires_cuda


@requires_cuda
def test_cuda_train_float16_with_grad_scaler(tmp_path):
    proc = run_cli("run", "--device", "0", "--batch", "4", "--imgsz", "128", "--steps", "3", "--warmup", "2",
                   "--precision", "float16", "--repeat", "2", "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((tmp_path / "train" / "profile.json").read_text())
    assert profile["config"]["phase_timing"] == "cuda_events"
    assert profile["metrics"]["peak_mem_mb"]["n"] == 2  # allocator peak reset per trial
    assert profile["metrics"]["kernels_per_step"]["value"] > 0  # CUPTI attached
    assert profile["metrics"]["device_util_pct"]["value"] > 0


@requires_cuda
def test_cuda_infer_bfloat16_and_auto_batch(tmp_path):
    proc = run_cli("infer", "--device", "0", "--precision", "bfloat16", "--runs", "5",
                   "--warmup", "2", "--imgsz", "128", "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("run", "--device", "0", "--batch", "-1", "--imgsz", "128", "--steps", "2", "--warmup", "1",
                   "--no-trace", "--project", tmp_path / "auto")
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((tmp_path / "auto" / "train" / "profile.json").read_text())
    assert profile["config"]["batch"] >= 1
    assert profile["config"]["autobatch"]["chosen"] == profile["config"]["batch"]
    assert any(w.startswith("--batch -1 chose") for w in profile["warnings"])


@requires_cuda
def test_cuda_capture_on_the_last_device_leaves_the_callers_device_and_model(tmp_path):
    import torch

    import yoloprof

    last = torch.cuda.device_count() - 1
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()).cuda(0)
    weight = net[0].weight
    before = torch.cuda.current_device()
    settings = yoloprof.CaptureSettings.for_mode("train", model=net, device=f"cuda:{last}", batch=2, imgsz=32,
                                                 steps=2, warmup=1, workers=0, trace=True)
    p = yoloprof.capture(settings, tmp_path / "out").data
    assert p["config"]["device"] == f"cuda:{last}" and p["env"]["device_index"] == last
    assert torch.cuda.current_device() == before
    assert net[0].weight is weight and weight.device == torch.device("cuda", 0)  # back, same Parameter
    assert p["env"]["driver_version"] and "cudnn_benchmark" in p["env"]
    assert p["config"]["mfu_basis"]["parts"]
    import os

    assert os.environ.get("TEARDOWN_CUPTI") in ("0", "1")
