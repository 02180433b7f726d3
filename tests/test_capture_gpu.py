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
