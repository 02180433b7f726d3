"""Plain Ultralytics loops (no yoloprof): one training step and one inference call built from
Ultralytics' public pieces only, for comparing yoloprof's timings with a plain perf_counter loop.

Models are built from `yolov8n.yaml` with seeded random weights on the current CUDA device (else
the CPU); nothing is downloaded (`YOLO_OFFLINE` is set before Ultralytics is imported).
"""

from __future__ import annotations

import os
from typing import Callable

MODEL = "yolov8n.yaml"
NUM_CLASSES = 80


def _model(seed: int = 0):  # type: ignore[no-untyped-def]
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch
    from ultralytics.cfg import DEFAULT_CFG, get_cfg
    from ultralytics.nn.tasks import DetectionModel

    torch.manual_seed(seed)
    model = DetectionModel(MODEL, nc=NUM_CLASSES, verbose=False)
    model.args = get_cfg(DEFAULT_CFG)  # the loss gains (box, cls, dfl)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device), device


def _sync(device) -> None:  # type: ignore[no-untyped-def]
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(batch: int, imgsz: int) -> Callable[[], None]:
    """A zero-argument callable running one training step: uint8 batch to the device, /255,
    forward + `model.loss` summed as Ultralytics' trainer does, backward, SGD step, zero_grad."""
    import torch

    model, device = _model()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937)
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (batch, 3, imgsz, imgsz), dtype=torch.uint8, generator=gen)
    idx = torch.arange(batch, dtype=torch.float32)
    boxes = torch.tensor([0.5, 0.5, 0.3, 0.3]).repeat(batch, 1)
    targets = {"batch_idx": idx, "cls": (idx % NUM_CLASSES).view(-1, 1), "bboxes": boxes}

    def step() -> None:
        data = {k: v.to(device, non_blocking=True) for k, v in targets.items()}
        data["img"] = images.to(device, non_blocking=True).float() / 255
        loss, _ = model.loss(data, model(data["img"]))
        loss.sum().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        _sync(device)

    return step


def infer_call(batch: int, imgsz: int) -> Callable[[], list]:
    """A zero-argument callable running one inference call: LetterBox (square `imgsz`) of `batch`
    BGR images, BCHW, BGR -> RGB, /255, the network in eval mode, `non_max_suppression`,
    `scale_boxes` back to the original size."""
    import numpy as np
    import torch
    from ultralytics.data.augment import LetterBox
    from ultralytics.utils import nms, ops

    model, device = _model()
    model.eval()
    rng = np.random.default_rng(0)
    originals = [rng.integers(0, 256, (imgsz * 3 // 4, imgsz, 3), dtype=np.uint8) for _ in range(batch)]
    letterbox = LetterBox((imgsz, imgsz), auto=False)

    def call() -> list:
        with torch.inference_mode():
            boxed = np.stack([letterbox(image=im) for im in originals])
            x = torch.from_numpy(boxed).to(device).permute(0, 3, 1, 2).contiguous().flip(1).float().div_(255)
            dets = nms.non_max_suppression(model(x), 0.25, 0.45, max_det=300)
            for det, im in zip(dets, originals):
                det[:, :4] = ops.scale_boxes((imgsz, imgsz), det[:, :4], im.shape[:2])
        _sync(device)
        return dets

    return call
