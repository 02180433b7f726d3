"""The two families yoloprof ships: its own detector (`yolo`) and a user's factory (`factory`).

Both train on the loader's batch as it is (uint8 images normalised on the device, targets as the
loader's [M, 6] rows) and infer through yoloprof's pipeline (decode + letterbox, then the built-in
decode + NMS, or the outputs unchanged for a factory's model, whose meaning yoloprof does not know:
a `postprocess` hook gives them one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from yoloprof.workloads.family_api import ForwardLoss, InputSize, ModelRef


def move_to_device(images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
    """The loader's batch on `device` as it is, uint8 images normalised to [0, 1] there."""
    import torch

    images = images.to(device, non_blocking=True)
    targets = targets.to(device, non_blocking=True)
    if images.dtype == torch.uint8:  # loaders hand over uint8; normalising is device work
        images = images.float().div_(255.0)
    return images, targets


def _preprocess(model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
    from yoloprof.workloads.pipeline import preprocess

    return preprocess(images, imgsz, device)


def _forward(model: Any, inputs: Any) -> Any:
    return model(inputs)


def _with_loss(loss_fn: Any) -> ForwardLoss:
    return lambda model, inputs, targets: loss_fn(model(inputs), targets)


def _stride_multiple(imgsz: int) -> InputSize:
    return InputSize(imgsz)  # the settings already refuse an imgsz that is not a multiple of 32


@dataclass(frozen=True)
class BuiltinAdapter:
    """The built-in detector: DetectionLoss, the pipeline's letterbox, decode and class-aware NMS."""

    @property
    def sizes(self) -> tuple[str, ...]:
        from yoloprof.workloads.yolo import SIZE_SCALES

        return tuple(SIZE_SCALES)

    def build(self, ref: ModelRef) -> Any:
        from yoloprof.workloads.models import build_model

        return build_model("yolo", size=ref.size or "n", num_classes=ref.num_classes, seed=ref.seed,
                           weights=ref.weights)

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        return _stride_multiple(imgsz)

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        return move_to_device(images, targets, device)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        from yoloprof.workloads.loss import DetectionLoss

        return _with_loss(DetectionLoss(model.num_classes))

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        return _preprocess(model, images, imgsz, device)

    def forward(self, model: Any, inputs: Any) -> Any:
        return _forward(model, inputs)

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        from yoloprof.workloads.pipeline import postprocess

        return postprocess(raw, meta, conf, iou, max_det)


@dataclass(frozen=True)
class FactoryAdapter:
    """A user's factory (dotted path, callable or nn.Module): a generic loss over its outputs
    unless a loss hook is given, the pipeline's letterbox, its outputs unchanged as the result."""

    sizes: None = None

    def build(self, ref: ModelRef) -> Any:
        from yoloprof.workloads.models import build_model

        return build_model(ref.name, num_classes=ref.num_classes, seed=ref.seed, weights=ref.weights,
                           kwargs=ref.kwargs)

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        return _stride_multiple(imgsz)

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        return move_to_device(images, targets, device)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        from yoloprof.workloads.models import generic_loss

        return lambda m, inputs, targets: (generic_loss(m(inputs)), {})

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        return _preprocess(model, images, imgsz, device)

    def forward(self, model: Any, inputs: Any) -> Any:
        return _forward(model, inputs)

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        return raw


BUILTIN = BuiltinAdapter()
FACTORY = FactoryAdapter()
