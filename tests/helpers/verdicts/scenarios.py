"""Workloads built to have one known bottleneck each, and the same workload with it removed.

Each scenario is a pair of capture settings (bottleneck, fixed) plus the verdict the bottleneck
must produce. The effects are large on purpose (2-8x step time between the sides): the captures run
beside other tests on a shared machine, and `compare` must still call the removal significant
with the statistics unchanged. The cost of a scenario is mostly its trace pass and trials, so the
bottlenecks are no bigger than that needs (12,000 allocations, not 30,000: a smaller trace). They
run on the CPU in CI, small enough to take a few seconds each; the user models live in a module
written to a temporary folder, as a user's own `mymodels.py` would.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODELS = '''
import torch
from torch import nn


class HeavyConv(nn.Module):
    """Compute-bound: two wide 3x3 convolutions carry the step."""

    def __init__(self, width: int = 96):
        super().__init__()
        self.c1 = nn.Conv2d(3, width, 3, padding=1)
        self.c2 = nn.Conv2d(width, width, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


class TinyOps(nn.Module):
    """Framework-overhead-bound: a small convolution plus `n` scalar ops on a 1-element tensor."""

    def __init__(self, n: int = 1500, width: int = 32):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.scale = nn.Parameter(torch.ones(1))
        self.n = n

    def forward(self, x):
        s = self.scale
        for _ in range(self.n):
            s = s * 1.0001 + 1e-4
        return self.conv(x) * s


class Churn(nn.Module):
    """Allocator-churn-bound: `n` throw-away allocations per call beside a small convolution."""

    def __init__(self, n: int = 4000, width: int = 32):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.n = n

    def forward(self, x):
        for _ in range(self.n):
            torch.empty(256)
        return self.conv(x)
'''

MODULE = "yp_scenario_models"


@dataclass
class Scenario:
    name: str
    bound: str                      # the verdict the bottleneck must produce
    mode: str
    slow: dict[str, Any]            # settings with the bottleneck
    fixed: dict[str, Any] | None    # the same workload with the bottleneck removed
    why_names: tuple[str, ...] = field(default_factory=tuple)  # words the verdict must contain
    # the pure-torch NMS (workloads/nms.py's fallback) on the slow side: with torchvision's kernel
    # even 3,549 candidates at conf 0 cost a few ms, so the induced bottleneck is that NMS path
    pure_torch_nms: bool = False


def write_inputs(root: Path) -> dict[str, Path]:
    """The user-model module (importable from `root`) and the images the scenarios read."""
    import numpy as np
    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    (root / f"{MODULE}.py").write_text(MODELS)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    rng = np.random.default_rng(0)
    paths: dict[str, Path] = {}
    for name, px in (("big", 2400), ("small", 64)):
        img = root / f"{name}.jpg"
        Image.fromarray(rng.integers(0, 255, (px, px, 3), dtype=np.uint8)).save(img, quality=90)
        paths[f"{name}_image"] = img
        data = root / f"yolo_{name}"
        (data / "images").mkdir(parents=True, exist_ok=True)
        (data / "labels").mkdir(parents=True, exist_ok=True)
        side = 2000 if name == "big" else 64
        for i in range(8):
            pixels = rng.integers(0, 255, (side, side, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(data / "images" / f"{i}.jpg", quality=90)
            (data / "labels" / f"{i}.txt").write_text("0 0.5 0.5 0.25 0.25\n")
        paths[f"{name}_data"] = data
    return paths


def scenarios(paths: dict[str, Path]) -> list[Scenario]:
    user = f"{MODULE}."
    train = {"device": "cpu", "imgsz": 64, "batch": 2, "warmup": 1, "steps": 3, "workers": 0, "size": "n"}
    infer = {"device": "cpu", "imgsz": 64, "batch": 1, "warmup": 1, "runs": 3, "size": "n"}
    return [
        Scenario("dataloader", "dataloader", "train",
                 {**train, "data": str(paths["big_data"])}, {**train, "data": str(paths["small_data"])}),
        Scenario("compute", "compute", "train",
                 {**train, "model": user + "HeavyConv", "imgsz": 96}, None,
                 why_names=("convolution",)),
        Scenario("framework-overhead", "framework-overhead", "train",
                 {**train, "model": user + "TinyOps", "model_kwargs": {"n": 1500}},
                 {**train, "model": user + "TinyOps", "model_kwargs": {"n": 0, "width": 96}},
                 why_names=("aten::",)),
        Scenario("allocator-churn", "memory", "train",
                 {**train, "model": user + "Churn", "model_kwargs": {"n": 12000, "width": 4}},
                 {**train, "model": user + "Churn", "model_kwargs": {"n": 0, "width": 4}},
                 why_names=("aten::empty",)),
        Scenario("preprocess", "preprocess", "infer",
                 {**infer, "data": str(paths["big_image"])}, {**infer, "data": str(paths["small_image"])}),
        Scenario("postprocess", "postprocess", "infer",
                 {**infer, "data": str(paths["small_image"]), "imgsz": 416, "conf": 0.0, "max_det": 3000,
                  "iou": 0.99},
                 {**infer, "data": str(paths["small_image"]), "imgsz": 416, "conf": 0.25},
                 pure_torch_nms=True),
    ]
