"""Plain Ultralytics loops, written with Ultralytics' public pieces only (no yoloprof), for
bench/bench_families.py to time with `time.perf_counter` beside yoloprof's own figures.

- training: `DetectionModel(cfg, nc=80)` seeded with 0, the batch dict its trainer hands the model
  (made once beforehand), its trainer's step (plain_loops/trainer_steps.py: `model(batch)`,
  backward, the trainer's own `optimizer_step`: clip, AdamW by `optimizer=auto`, EMA); phases
  forward (forward + loss), backward, optimizer (the whole `optimizer_step`);
- inference: PNG decode (PIL) + `LetterBox` + HWC->CHW / 255, `model(x)`, `non_max_suppression`
  + `scale_boxes`, under `torch.inference_mode()`; stages preprocess, forward, postprocess.
On CUDA each phase synchronises before it returns, so a wall clock around it times the work.
"""

from __future__ import annotations

import io
from typing import Any, Callable

import numpy as np
import torch
from PIL import Image

NUM_CLASSES = 80
SYNTHETIC_IMAGES = 64  # what `optimizer=auto` counts: any run of yoloprof's synthetic data up to 6400 images picks AdamW
# Ultralytics' own, which yoloprof infer runs by default: BasePredictor's conf, default.yaml's iou and max_det
CONF, IOU, MAX_DET = 0.25, 0.7, 300


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _model(cfg: str, device: torch.device) -> Any:
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel
    from ultralytics.utils import DEFAULT_CFG

    torch.manual_seed(0)
    model = DetectionModel(cfg, nc=NUM_CLASSES, verbose=False).to(device)
    model.args = get_cfg(DEFAULT_CFG)
    for name, p in model.named_parameters():
        p.requires_grad_(".dfl" not in name)
    return model


def train_phases(cfg: str, batch: int, imgsz: int, device: str = "cpu") -> dict[str, Callable[[], None]]:
    """{forward, backward, optimizer}: one training step of `cfg`, phase by phase."""
    from plain_loops.trainer_steps import ultralytics_phases

    dev = torch.device(device)
    gen = torch.Generator().manual_seed(1)
    img = torch.randint(0, 256, (batch, 3, imgsz, imgsz), dtype=torch.uint8, generator=gen).to(dev).float() / 255
    n = 3 * batch
    boxes = torch.rand(n, 4, generator=gen) * 0.4 + torch.tensor([0.3, 0.3, 0.1, 0.1])
    data = {"img": img, "batch_idx": torch.arange(batch).repeat_interleave(3).float().to(dev),
            "cls": torch.randint(0, NUM_CLASSES, (n, 1), generator=gen).float().to(dev), "bboxes": boxes.to(dev)}
    phases = ultralytics_phases(cfg, img, data, images=SYNTHETIC_IMAGES)

    def synced(run: Callable[[], None]) -> Callable[[], None]:
        return lambda: (run(), _sync(dev))  # type: ignore[func-returns-value]

    return {name: synced(run) for name, run in phases.items()}


def infer_stages(cfg: str, source: bytes, batch: int, imgsz: int, device: str = "cpu") -> dict[str, Callable[[], None]]:
    """{preprocess, forward, postprocess}: one inference call on `batch` copies of the encoded image."""
    from ultralytics.data.augment import LetterBox
    from ultralytics.utils import nms, ops

    dev = torch.device(device)
    model = _model(cfg, dev).eval()
    box = LetterBox((imgsz, imgsz), auto=False, stride=32)
    state: dict[str, Any] = {}

    def preprocess() -> None:
        with torch.inference_mode():
            arrays = [np.asarray(Image.open(io.BytesIO(source)).convert("RGB")) for _ in range(batch)]
            state["shapes"] = [a.shape[:2] for a in arrays]
            x = torch.from_numpy(np.stack([box(image=a) for a in arrays])).to(dev)
            state["x"] = x.permute(0, 3, 1, 2).contiguous().float().div_(255)
        _sync(dev)

    def forward() -> None:
        with torch.inference_mode():
            state["raw"] = model(state["x"])
        _sync(dev)

    def postprocess() -> None:
        with torch.inference_mode():
            dets = nms.non_max_suppression(state.pop("raw"), CONF, IOU, max_det=MAX_DET)
            for d, shape in zip(dets, state["shapes"]):
                d[:, :4] = ops.scale_boxes((imgsz, imgsz), d[:, :4], shape)
        _sync(dev)

    return {"preprocess": preprocess, "forward": forward, "postprocess": postprocess}
