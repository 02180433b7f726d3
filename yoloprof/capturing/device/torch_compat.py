"""The torch range yoloprof declares (`pyproject.toml`: `torch>=2.1`) and the guards for the APIs
newer than that floor, so a torch at the floor runs every path instead of crashing on the first GPU
training step.

Newer APIs the capture uses, each guarded here:
- `torch.amp.GradScaler("cuda")` exists from torch 2.3; 2.1-2.2 have `torch.cuda.amp.GradScaler()`
  (deprecated from 2.4 with a FutureWarning, so it is only the fallback).
- `torch.cuda.is_bf16_supported(including_emulation=...)` takes its argument from torch 2.4; the
  capability checks (capturing/device/gpu_capability.py) read the compute capability instead.
The TF32 switches are read through their long-standing names (`torch.backends.cuda.matmul.
allow_tf32`, `torch.backends.cudnn.allow_tf32`, both since torch 1.7), which torch 2.9+ keeps in
step with its `fp32_precision` settings.
"""

from __future__ import annotations

from typing import Any

TORCH_FLOOR = (2, 1)  # must equal the `torch>=` floor of pyproject.toml (tests/test_capturing_gpu_paths.py)


def grad_scaler() -> Any:
    """A CUDA GradScaler on every torch from the floor on."""
    import torch

    amp_scaler = getattr(torch.amp, "GradScaler", None)  # torch >= 2.3
    if amp_scaler is not None:
        return amp_scaler("cuda")
    return torch.cuda.amp.GradScaler()  # torch 2.1-2.2


def tf32_flags() -> dict[str, bool]:
    """torch's TF32 switches as they are now: matmuls (default False since torch 1.12) and cuDNN
    convolutions (default True)."""
    import torch

    return {"matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32)}
