"""The Ultralytics family (`family_api.Adapter`): YOLOv8 / YOLO11 / ... detection models of the
`ultralytics` package, trained with their own `v8DetectionLoss` and run through their own
LetterBox, non-maximum suppression and box scaling.

`ModelRef.name` is an Ultralytics model yaml (`yolov8n.yaml`, `yolo11s.yaml`: resolved by
Ultralytics from its packaged configs, the scale letter inside the name), a path to a yaml, or a
`.pt` checkpoint (its model's yaml is built, then its weights loaded). `ModelRef.weights` may name a
`.pt` checkpoint loaded over the built model. Ultralytics checkpoints are Python pickles: loading
one runs code from it, so load only files you trust. They are read with Ultralytics' own
`torch_safe_load`, never downloaded (`YOLO_OFFLINE` is set before Ultralytics is imported, so it
does not probe the network either).

Ultralytics writes a settings file when imported (under `YOLO_CONFIG_DIR` where set).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yoloprof.errors import UsageError
from yoloprof.workloads.family_api import ForwardLoss, InputSize, ModelRef

# the parts of v8DetectionLoss's loss vector, in its order (box, cls, dfl)
LOSS_PARTS = ("box", "cls", "dfl")
REMOTE_PREFIXES = ("http:", "https:", "ul:", "gs:", "rtsp:", "rtmp:")


def _ultralytics() -> None:
    """Import-time settings for the package: never reach the network."""
    os.environ.setdefault("YOLO_OFFLINE", "1")


@dataclass
class UltralyticsMeta:
    """One image's letterbox for the post-process: its original (h, w) and the model input (h, w)."""

    orig_shape: tuple[int, int]
    input_shape: tuple[int, int]


def _checked_file(path: str, what: str) -> Path:
    if path.lower().startswith(REMOTE_PREFIXES):
        raise UsageError(f"ultralytics {what} {path!r}: a remote file; give a local file (nothing is downloaded)")
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"ultralytics {what} {path!r} does not exist")
    return file


def _yaml_cfg(name: str) -> dict[str, Any]:
    """The model yaml as a dict: a packaged config name or a local file."""
    _ultralytics()
    from ultralytics.nn.tasks import yaml_model_load

    if name.lower().startswith(REMOTE_PREFIXES):
        _checked_file(name, "model")
    try:
        cfg: dict[str, Any] = yaml_model_load(name)
    except (FileNotFoundError, OSError) as err:
        raise UsageError(f"ultralytics model {name!r} does not exist (not a packaged yaml or a file)") from err
    return cfg


@functools.lru_cache(maxsize=32)
def _yaml_stride(name: str) -> int:
    """The largest stride of the model a yaml builds (as Ultralytics computes it: one forward)."""
    import torch

    _ultralytics()
    from ultralytics.nn.tasks import DetectionModel

    cfg = _yaml_cfg(name)
    with torch.random.fork_rng(devices=[]):
        model = DetectionModel(dict(cfg), verbose=False)
    return int(model.stride.max())


def _load_checkpoint(path: str, what: str) -> dict[str, Any]:
    """An Ultralytics `.pt` checkpoint (a pickle: it runs code from the file) as Ultralytics reads it."""
    file = _checked_file(path, what)
    _ultralytics()
    from ultralytics.nn.tasks import torch_safe_load

    try:
        ckpt, _ = torch_safe_load(str(file))
    except Exception as err:  # a corrupt file or one that is not a checkpoint
        raise UsageError(f"ultralytics {what} {path!r} cannot be read as an Ultralytics checkpoint: {err}") from err
    if not isinstance(ckpt, dict) or not (ckpt.get("ema") or ckpt.get("model")):
        raise UsageError(f"ultralytics {what} {path!r} holds no Ultralytics model")
    return ckpt


def _bgr(item: Any) -> Any:
    """One image source decoded as Ultralytics reads it: an HWC uint8 BGR array (cv2's order)."""
    import numpy as np

    from yoloprof.workloads.pipeline import _decode

    return np.ascontiguousarray(np.asarray(_decode(item))[:, :, ::-1])


class UltralyticsAdapter:
    """Ultralytics detection models (see the module docstring)."""

    sizes: tuple[str, ...] | None = None  # the scale letter lives in the yaml name

    def build(self, ref: ModelRef) -> Any:
        """A `DetectionModel` with `ref.num_classes` classes, seeded random weights (or the weights
        of `ref.name` / `ref.weights` when they are checkpoints), on the CPU, in train mode. Its
        `args` are Ultralytics' default hyperparameters (the loss gains box/cls/dfl)."""
        import torch

        _ultralytics()
        from ultralytics.cfg import DEFAULT_CFG, get_cfg
        from ultralytics.nn.tasks import DetectionModel

        ckpt = _load_checkpoint(ref.name, "model") if ref.name.lower().endswith(".pt") else None
        cfg = (ckpt.get("ema") or ckpt["model"]).yaml if ckpt is not None else _yaml_cfg(ref.name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(ref.seed)
            try:
                model = DetectionModel(dict(cfg), nc=ref.num_classes, verbose=False, **dict(ref.kwargs))
            except TypeError as err:  # a --model-arg DetectionModel does not take
                raise UsageError(f"ultralytics model {ref.name!r}: bad model argument ({err})") from err
        if ckpt is not None:
            model.load(ckpt, verbose=False)
        if ref.weights != "none":
            model.load(_load_checkpoint(ref.weights, "weights"), verbose=False)
        model.args = get_cfg(DEFAULT_CFG)  # the hyperparameters v8DetectionLoss reads (box, cls, dfl)
        model.float().cpu().train()
        for p in model.parameters():  # as Ultralytics' trainer does: every layer trains
            p.requires_grad_(True)
        return model

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        """`imgsz` rounded up to a multiple of the model's largest stride (with a note if rounded)."""
        stride = self._max_stride(ref)
        size = -(-imgsz // stride) * stride
        note = None if size == imgsz else f"imgsz {imgsz} rounded up to {size} (a multiple of the model stride {stride})"
        return InputSize(size, note)

    def _max_stride(self, ref: ModelRef) -> int:
        if ref.name.lower().endswith(".pt"):
            ckpt = _load_checkpoint(ref.name, "model")
            return int((ckpt.get("ema") or ckpt["model"]).stride.max())
        return _yaml_stride(ref.name)

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        """Loader batch -> (images float [0, 1] on `device`, Ultralytics batch dict {img, batch_idx,
        cls [M, 1], bboxes [M, 4] normalised cx, cy, w, h}) as its trainer's `preprocess_batch`."""
        img = images.to(device, non_blocking=True).float() / 255
        targets = targets.to(device, non_blocking=True)
        batch = {"img": img, "batch_idx": targets[:, 0], "cls": targets[:, 1:2], "bboxes": targets[:, 2:6]}
        return img, batch

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        """Forward + Ultralytics' own criterion (`model.loss`), reduced with `.sum()` as its trainer
        does; parts box/cls/dfl are the detached, gain-weighted components (v8DetectionLoss: the
        loss is batch size x their sum; for DFL-free heads such as YOLO26 "dfl" is its L1 part)."""
        if loss is not None:
            raise UsageError("ultralytics models train with their own loss: --loss is not accepted for this family")

        def forward_loss(m: Any, inputs: Any, batch: Any) -> tuple[Any, dict[str, Any]]:
            total, items = m.loss(batch, m(inputs))
            values = list(items.values()) if isinstance(items, dict) else list(items)
            return total.sum(), dict(zip(LOSS_PARTS, values))

        return forward_loss

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        """Decode (BGR, as cv2), Ultralytics' LetterBox to square `imgsz` (auto=False), stack,
        HWC -> CHW, BGR -> RGB, /255 on `device`, as its predictor's `preprocess`."""
        import numpy as np
        import torch

        _ultralytics()
        from ultralytics.data.augment import LetterBox

        letterbox = LetterBox((imgsz, imgsz), auto=False, stride=int(model.stride.max()))
        decoded = [_bgr(item) for item in images]
        boxed: list[Any] = [letterbox(image=im) for im in decoded]
        x = torch.from_numpy(np.stack(boxed)).to(device).permute(0, 3, 1, 2).contiguous().flip(1).float().div_(255)
        meta = [UltralyticsMeta(im.shape[:2], (imgsz, imgsz)) for im in decoded]
        return x, meta

    def forward(self, model: Any, inputs: Any) -> Any:
        """The network alone, in eval mode."""
        if model.training:
            model.eval()
        return model(inputs)

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        """Ultralytics' `non_max_suppression` then `scale_boxes` back to each original image: one
        [K, 6] tensor (x1, y1, x2, y2, score, class) per image."""
        _ultralytics()
        from ultralytics.utils import nms, ops

        head = model.model[-1]
        dets = nms.non_max_suppression(raw, conf, iou, max_det=max_det, end2end=getattr(head, "end2end", False))
        for det, m in zip(dets, meta):
            det[:, :4] = ops.scale_boxes(m.input_shape, det[:, :4], m.orig_shape)
        return dets


ADAPTER = UltralyticsAdapter()
