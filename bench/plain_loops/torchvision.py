"""Plain torchvision loops: one training step or one inference call, written with torchvision's
public API only, for a bench to time with `time.perf_counter` next to yoloprof's timings.

The same work as the torchvision family adapter does, without yoloprof:
- models built with `weights=None` (detectors also `weights_backbone=None`): nothing downloads;
  seeded with 0; `NUM_CLASSES` data classes (+1 background for SSD and the R-CNNs);
- detectors' transforms resize the longer side to `imgsz` (SSD: imgsz x imgsz);
- training step: forward with targets, the model's loss dict summed (classifiers: cross-entropy),
  backward, SGD step, zero_grad; the batch and targets are made once, beforehand;
- inference call: PNG decode (PIL) + to float tensor + `model.eval()(images)` (transform, network,
  box decoding and NMS) under `torch.inference_mode()`, at the model's own score_thresh, nms_thresh
  and detections_per_img (what yoloprof infer runs by default); classifiers: decode, resize to
  imgsz x imgsz, ImageNet normalise, softmax, top 5.
On CUDA each callable synchronises before it returns, so a wall clock around it times the work.

    step = train_step("ssdlite320_mobilenet_v3_large", batch=2, imgsz=320); step()
"""

from __future__ import annotations

import io
from typing import Any, Callable

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision.transforms.functional import pil_to_tensor

NUM_CLASSES = 80
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BACKGROUND = ("ssd", "fasterrcnn", "maskrcnn", "keypointrcnn")  # builders whose labels count background


def _is_detector(name: str) -> bool:
    return name in torchvision.models.list_models(module=torchvision.models.detection)


def _device(device: str | None) -> torch.device:
    return torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _build(name: str, imgsz: int, device: torch.device) -> Any:
    torch.manual_seed(0)
    if _is_detector(name):
        background = 1 if name.startswith(BACKGROUND) else 0
        model = torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                             num_classes=NUM_CLASSES + background)
        model.transform.min_size, model.transform.max_size = (imgsz,), imgsz
        if model.transform.fixed_size is not None:
            model.transform.fixed_size = (imgsz, imgsz)
    else:
        model = torchvision.models.get_model(name, weights=None, num_classes=NUM_CLASSES)
    return model.to(device)


def _normalise(x: torch.Tensor) -> torch.Tensor:
    mean = x.new_tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = x.new_tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return (x - mean) / std


def train_step(name: str, batch: int, imgsz: int, device: str | None = None) -> Callable[[], None]:
    """One training step of torchvision model `name` on a random `batch` x 3 x imgsz x imgsz batch."""
    phases = train_phases(name, batch, imgsz, device)

    def step() -> None:
        for run in phases.values():
            run()

    return step


def train_phases(name: str, batch: int, imgsz: int, device: str | None = None) -> dict[str, Callable[[], None]]:
    """{forward, backward, optimizer}: one training step, phase by phase (each synchronised)."""
    dev = _device(device)
    model = _build(name, imgsz, dev).train()
    # torchvision's references' defaults (references/detection|classification/train.py), as yoloprof's step
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad],
                                lr=0.02 if _is_detector(name) else 0.1, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(1)
    images = torch.rand(batch, 3, imgsz, imgsz, generator=gen).to(dev)
    if _is_detector(name):
        inputs = list(images.unbind(0))
        box = torch.tensor([[0.25, 0.25, 0.75, 0.75]]) * imgsz  # one centred box per image
        targets: Any = [{"boxes": box.to(dev), "labels": torch.tensor([1], device=dev)} for _ in range(batch)]
        if name.startswith("maskrcnn"):
            mask = torch.zeros(1, imgsz, imgsz, dtype=torch.uint8)
            mask[:, imgsz // 4: 3 * imgsz // 4, imgsz // 4: 3 * imgsz // 4] = 1
            for t in targets:
                t["masks"] = mask.to(dev)

        def loss() -> torch.Tensor:
            return sum(model(inputs, targets).values())
    else:
        x, labels = _normalise(images), torch.randint(0, NUM_CLASSES, (batch,), generator=gen).to(dev)

        def loss() -> torch.Tensor:
            out = model(x)
            return torch.nn.functional.cross_entropy(out if isinstance(out, torch.Tensor) else out.logits, labels)

    state: dict[str, Any] = {}

    def forward() -> None:
        state["loss"] = loss()
        _sync(dev)

    def backward() -> None:
        state.pop("loss").backward()
        _sync(dev)

    def step() -> None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        _sync(dev)

    return {"forward": forward, "backward": backward, "optimizer": step}


def infer_call(name: str, batch: int, imgsz: int, device: str | None = None,
               source: bytes | None = None) -> Callable[[], Any]:
    """One inference call of torchvision model `name` on `batch` PNG-encoded imgsz x imgsz images
    (`source`: `batch` copies of this encoded image instead)."""
    dev = _device(device)
    model = _build(name, imgsz, dev).eval()
    rng = np.random.default_rng(0)
    sources = [source] * batch if source is not None else []
    for _ in range(batch - len(sources)):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (imgsz, imgsz, 3), dtype=np.uint8)).save(buf, format="PNG")
        sources.append(buf.getvalue())
    detector = _is_detector(name)

    def decode() -> list[torch.Tensor]:
        return [pil_to_tensor(Image.open(io.BytesIO(s)).convert("RGB")).to(dev).float().div_(255.0) for s in sources]

    def call() -> Any:
        with torch.inference_mode():
            images = decode()
            if detector:
                out = model(images)
            else:
                x = torch.stack([torch.nn.functional.interpolate(t[None], size=(imgsz, imgsz), mode="bilinear",
                                                                 antialias=True, align_corners=False)[0] for t in images])
                out = torch.softmax(model(_normalise(x)), dim=1).topk(5, dim=1)
        _sync(dev)
        return out

    return call
