"""The two families yoloprof ships: its own detector (`yolo`) and a user's factory (`factory`).

Both train on the loader's batch as it is (uint8 images normalised on the device, targets as the
loader's [M, 6] rows) and infer through yoloprof's pipeline (decode + letterbox, then the built-in
decode + NMS, or the outputs unchanged for a factory's model, whose meaning yoloprof does not know:
a `postprocess` hook gives them one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from yoloprof.workloads.family_api import ForwardLoss, InputSize, ModelRef, RecipeInputs, TrainRecipe


def move_to_device(images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
    """The loader's batch on `device` as it is, uint8 images normalised to [0, 1] there."""
    import torch

    images = images.to(device, non_blocking=True)
    targets = targets.to(device, non_blocking=True)
    if images.dtype == torch.uint8:  # loaders hand over uint8; normalising is device work
        images = images.float().div_(255.0)
    return images, targets


class FactoryAdapter:
    """A user's factory (dotted path, callable or nn.Module): a generic loss over its outputs
    unless a loss hook is given, the pipeline's letterbox, its outputs unchanged as the result."""

    sizes: tuple[str, ...] | None = None

    def check(self, ref: ModelRef) -> None:
        """A factory's import is checked by the capture's pre-flight (capturing/builtin/preflight.py),
        the built-in detector's size by `CaptureSettings.validate`."""

    def build(self, ref: ModelRef) -> Any:
        from yoloprof.workloads.models import build_model

        return build_model(ref.name, num_classes=ref.num_classes, seed=ref.seed, weights=ref.weights,
                           kwargs=ref.kwargs)

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        return InputSize(imgsz)  # the settings already refuse an imgsz that is not a multiple of 32

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        return move_to_device(images, targets, device)

    def train_recipe(self, model: Any, inputs: RecipeInputs) -> TrainRecipe:
        """No trainer of its own: yoloprof's documented SGD (workloads/train_recipe.py BUILTIN_SGD)."""
        from yoloprof.workloads.train_recipe import BUILTIN_SGD, sgd_recipe

        return sgd_recipe(model, inputs, BUILTIN_SGD)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        from yoloprof.workloads.models import generic_loss

        return lambda m, inputs, targets: (generic_loss(m(inputs)), {})

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        from yoloprof.workloads.pipeline import preprocess

        return preprocess(images, imgsz, device)

    def forward(self, model: Any, inputs: Any) -> Any:
        return model(inputs)

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        return raw


class BuiltinAdapter(FactoryAdapter):
    """The built-in detector: its sizes, DetectionLoss, the pipeline's decode and class-aware NMS
    (its letterbox, device move and forward are a factory's)."""

    def __init__(self) -> None:
        from yoloprof.config.capture_settings import SIZES

        self.sizes = SIZES

    def build(self, ref: ModelRef) -> Any:
        from yoloprof.workloads.models import build_model

        return build_model("yolo", size=ref.size or "n", num_classes=ref.num_classes, seed=ref.seed,
                           weights=ref.weights)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        from yoloprof.workloads.loss import DetectionLoss

        fn = DetectionLoss(model.num_classes)
        return lambda m, inputs, targets: fn(m(inputs), targets)

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        from yoloprof.workloads.pipeline import postprocess

        return postprocess(raw, meta, conf, iou, max_det)


BUILTIN = BuiltinAdapter()
FACTORY = FactoryAdapter()
