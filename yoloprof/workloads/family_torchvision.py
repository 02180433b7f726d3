"""The torchvision family: classification and detection builders of `torchvision.models`, by name.

`ModelRef.name` is a builder of `torchvision.models.list_models()` of the classification or the
detection module (segmentation, video, optical-flow and quantized builders are refused). Every
model is built with `weights=None` (and `weights_backbone=None` for detectors), seeded with
`ModelRef.seed`; `ModelRef.weights` may name a state-dict file of that builder, whose class count
the model follows where it differs (torchvision_weights.py). Nothing downloads.

Classes. `ModelRef.num_classes` counts the data's classes. Where the detector's classifier counts a
background class at index 0 (SSD, SSDlite, Faster/Mask/Keypoint R-CNN) the model gets
`num_classes + 1` and a box of data class `c` is label `c + 1`; RetinaNet and FCOS (sigmoid
classifiers, no background) get `num_classes` and label `c`. Detections carry the model's labels.

Size. `input_size(ref, imgsz)` says what `imgsz` becomes (detectors and most classifiers: `imgsz`;
ViT: rounded up to its patch size, as `image_size` must be; SSD300-VGG16: at least 268); the caller then builds with
`ModelRef(..., imgsz=that)`. `build` reads `ref.imgsz`: a detector's `GeneralizedRCNNTransform`
resizes every image so its longer side is `imgsz` (min_size = max_size = imgsz; SSD's fixed size
becomes imgsz x imgsz); a ViT gets `image_size=imgsz`. `ref.imgsz = None` keeps the model's own.

Training. `to_device` takes the loader's batch (uint8 [B, 3, H, W], rows (image, class, cx, cy, w,
h) in [0, 1]). Detectors: a list of float images in [0, 1] (the model's transform normalises) and a
list of {boxes: xyxy pixels, labels: int64} (rows of zero width or height dropped: the models refuse them) (Mask R-CNN also gets each box filled as its mask; a
Keypoint R-CNN cannot be trained from boxes). Classifiers: the batch in [0, 1] normalised with the
ImageNet mean/std and one label per image: the class of its first target row, 0 where it has none.
The loss: a detector's own loss dict summed (parts = the dict); a classifier's cross-entropy (an
Inception/GoogLeNet aux output adds 0.4 x its cross-entropy).

Inference. `preprocess` decodes and runs the model's own transform (detectors: normalise, resize,
batch into an `ImageList`; classifiers: resize to imgsz x imgsz and normalise). `forward` is the
network without the transform: for SSD/SSDlite/RetinaNet/FCOS the backbone, head and anchors (their
box decoding, score filter and NMS run in `postprocess`); for the R-CNN family the backbone, the
RPN and the ROI heads: the second stage needs the first stage's proposals, so the RPN's NMS and
the ROI heads' box decoding and NMS run inside `forward`, and `postprocess` is only the transform's
rescale to the original images. Outputs equal `model.eval()(images)`.
`conf`, `iou`, `max_det` (by default the model's own: config/postprocess_defaults.py, so setting
them changes nothing unless the user overrode one) are set on the model as its score_thresh, nms_thresh and
detections_per_img (R-CNN: on its ROI heads) before the detections are made; for R-CNN that is the
next call's `forward`, so this call's detections are also filtered to score >= conf and the
`max_det` best (exact for conf and max_det, since the ROI heads sort and filter the same way;
`iou` takes effect from the next call). Classifiers: softmax and the top 5 {scores, labels}.

Inference runtimes (`export_network`): a classifier is its module; a one-stage detector (SSD,
SSDlite, RetinaNet, FCOS) is the part `forward` runs (backbone, head, anchors) as a module of the
batched image tensor (`ImageList.tensors`: the anchors depend only on its shape), returning
{head, anchors, level_sizes}; the image sizes are put back from the `ImageList` for
`postprocess`. The R-CNN family is not applicable: its second stage reads a data-dependent number
of proposals from the first stage's NMS, which one traced shape cannot hold.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import torch

from yoloprof.errors import RuntimeNotApplicable, UsageError
from yoloprof.workloads.family_api import ExportForm, ForwardLoss, InputSize, ModelRef, RecipeInputs, TrainRecipe
from yoloprof.workloads.pipeline import decode
from yoloprof.workloads.torchvision_weights import checkpoint_classes, first_lines, load_weights, read_weights

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # what torchvision's classification weights were trained with
IMAGENET_STD = (0.229, 0.224, 0.225)
AUX_WEIGHT = 0.4  # an aux classifier's share of the loss (Inception-v3 paper)
TOP_K = 5  # classes a classifier's postprocess keeps per image
DOWNLOAD_KWARGS = ("weights", "weights_backbone", "pretrained", "pretrained_backbone")
MIN_IMGSZ = {"ssd300_vgg16": 268}  # below it the VGG extra layers' 3x3 convs outgrow their input


@dataclass(frozen=True)
class DetectorKind:
    """How one detector architecture is split and labelled."""

    background: bool  # the classifier counts a background class at index 0
    two_stage: bool  # R-CNN: box NMS inside forward (the ROI heads need the RPN's proposals)
    per_level: bool  # head outputs split per feature level before postprocess_detections
    masks: bool = False  # Mask R-CNN: training targets need masks
    keypoints: bool = False  # Keypoint R-CNN: training targets need keypoints


DETECTORS: dict[str, DetectorKind] = {  # builder name prefix -> kind
    "ssd": DetectorKind(background=True, two_stage=False, per_level=False),  # ssd300, ssdlite320
    "retinanet": DetectorKind(background=False, two_stage=False, per_level=True),
    "fcos": DetectorKind(background=False, two_stage=False, per_level=True),
    "fasterrcnn": DetectorKind(background=True, two_stage=True, per_level=False),
    "maskrcnn": DetectorKind(background=True, two_stage=True, per_level=False, masks=True),
    "keypointrcnn": DetectorKind(background=True, two_stage=True, per_level=False, keypoints=True),
}


def _names() -> tuple[list[str], list[str]]:
    import torchvision.models as tvm

    return tvm.list_models(module=tvm), tvm.list_models(module=tvm.detection)


def detector_kind(name: str) -> DetectorKind | None:
    """The kind of a detection builder; None for a classifier."""
    return next((kind for prefix, kind in DETECTORS.items() if name.startswith(prefix)), None)


def _check_name(name: str) -> None:
    classify, detect = _names()
    if name in classify or name in detect:
        return
    import torchvision.models as tvm

    if name in tvm.list_models():
        raise UsageError(f"torchvision model {name!r} is not a classification or detection model (the only ones profiled)")
    close = difflib.get_close_matches(name, classify + detect, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see torchvision.models.list_models()"
    raise UsageError(f"unknown torchvision model {name!r}{hint}")


def _vit_patch(name: str) -> int | None:
    """A ViT's patch size from its builder name (vit_b_16 -> 16), else None."""
    head, _, tail = name.rpartition("_")
    return int(tail) if name.startswith("vit_") and head and tail.isdigit() else None


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _set_size(model: Any, imgsz: int) -> None:
    """Make a detector's transform resize to `imgsz` on the longer side (SSD: imgsz x imgsz)."""
    t = model.transform
    t.min_size = (imgsz,)
    t.max_size = imgsz
    if t.fixed_size is not None:
        t.fixed_size = (imgsz, imgsz)


class TorchvisionAdapter:
    """The `Adapter` of torchvision's classification and detection builders (module docstring)."""

    sizes = None

    def check(self, ref: ModelRef) -> None:
        _check_name(ref.name)

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        _check_name(ref.name)
        smallest = MIN_IMGSZ.get(ref.name, 0)
        if imgsz < smallest:
            return InputSize(smallest, f"imgsz {imgsz} raised to {smallest}, the smallest {ref.name} runs at")
        patch = _vit_patch(ref.name)
        if patch is not None and imgsz % patch:
            size = _round_up(imgsz, patch)
            return InputSize(size, f"imgsz {imgsz} rounded up to {size} (a multiple of {ref.name}'s patch size {patch})")
        return InputSize(imgsz)

    def build(self, ref: ModelRef) -> Any:
        _check_name(ref.name)
        given = [k for k in DOWNLOAD_KWARGS if k in ref.kwargs]
        if given:
            raise UsageError(f"torchvision model argument {given[0]!r} is not taken: weights come from model.weights (a state-dict file)")
        kind = detector_kind(ref.name)
        kwargs = _builder_kwargs(ref, kind)
        state = read_weights(ref.weights) if ref.weights != "none" else None
        if state is not None and "num_classes" not in ref.kwargs:  # the file's class count, read first
            count = checkpoint_classes(_shapes_only(ref, kwargs), state, kwargs["num_classes"])
            if count is not None and count != kwargs["num_classes"]:
                kwargs = _builder_kwargs(ref, kind, _classes_followed(ref, kind, count))
        model = _seeded(ref, kwargs)
        if state is not None:
            load_weights(model, state, ref.weights)
        if kind is not None and ref.imgsz is not None:
            _set_size(model, ref.imgsz)
        return model.train()

    # ---- training -------------------------------------------------------------------------------

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        kind = model_kind(model)
        images = images.to(device, non_blocking=True).float().div_(255.0)
        targets = targets.to(device, non_blocking=True)
        if kind is None:
            return _normalise(images), _first_labels(targets, images.shape[0])
        if kind.keypoints:
            raise UsageError("a Keypoint R-CNN cannot be trained from the loader's boxes (it needs keypoints)")
        height, width = images.shape[-2:]
        scale = targets.new_tensor([width, height, width, height])
        out = []
        for i in range(images.shape[0]):
            rows = targets[(targets[:, 0] == i) & (targets[:, 4] > 0) & (targets[:, 5] > 0)]
            cxcywh = rows[:, 2:6] * scale
            boxes = torch.cat([cxcywh[:, :2] - cxcywh[:, 2:] / 2, cxcywh[:, :2] + cxcywh[:, 2:] / 2], dim=1)
            target = {"boxes": boxes, "labels": rows[:, 1].long() + (1 if kind.background else 0)}
            if kind.masks:
                target["masks"] = _box_masks(boxes, height, width)
            out.append(target)
        return list(images.unbind(0)), out

    def train_recipe(self, model: Any, inputs: RecipeInputs) -> TrainRecipe:
        """torchvision has no trainer in its package: its reference scripts' default SGD
        (workloads/train_recipe.py), for detection or classification."""
        from yoloprof.workloads.train_recipe import TORCHVISION_CLASSIFIER_SGD, TORCHVISION_DETECTOR_SGD, sgd_recipe

        sgd = TORCHVISION_DETECTOR_SGD if model_kind(model) is not None else TORCHVISION_CLASSIFIER_SGD
        return sgd_recipe(model, inputs, sgd)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        return _detector_loss if model_kind(model) is not None else _classifier_loss

    # ---- inference ------------------------------------------------------------------------------

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        from torchvision.transforms.functional import pil_to_tensor

        tensors = [pil_to_tensor(decode(item)).to(device, non_blocking=True).float().div_(255.0) for item in images]
        if model_kind(model) is None:
            resized = [torch.nn.functional.interpolate(t[None], size=(imgsz, imgsz), mode="bilinear",
                                                       antialias=True, align_corners=False)[0] for t in tensors]
            return _normalise(torch.stack(resized)), None
        original_sizes = [(int(t.shape[-2]), int(t.shape[-1])) for t in tensors]
        image_list, _ = model.transform(tensors)
        return image_list, original_sizes

    def forward(self, model: Any, inputs: Any) -> Any:
        kind = model_kind(model)
        if kind is None:
            return model(inputs)
        features = model.backbone(inputs.tensors)
        if isinstance(features, torch.Tensor):
            features = {"0": features}
        if kind.two_stage:
            proposals, _ = model.rpn(inputs, features)
            detections, _ = model.roi_heads(features, proposals, inputs.image_sizes)
            return {"detections": detections, "image_sizes": inputs.image_sizes}
        levels = list(features.values())
        head = model.head(levels)
        anchors = model.anchor_generator(inputs, levels)
        return {"head": head, "anchors": anchors, "image_sizes": inputs.image_sizes,
                "level_sizes": [f.size(2) * f.size(3) for f in levels]}

    def export_network(self, model: Any) -> ExportForm:
        kind = model_kind(model)
        if kind is None:
            return ExportForm(model)
        if kind.two_stage:
            raise RuntimeNotApplicable(f"{type(model).__name__}: a two-stage detector's second stage reads a "
                                       "data-dependent number of proposals (no fixed-shape export)")
        return ExportForm(_OneStage(self, model), tensor=lambda inputs: inputs.tensors,
                          raw=lambda outputs, inputs: {**outputs, "image_sizes": inputs.image_sizes})

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        kind = model_kind(model)
        if kind is None:
            probs = raw.softmax(dim=1)
            top = probs.topk(min(TOP_K, probs.shape[1]), dim=1)
            return [{"scores": s, "labels": i} for s, i in zip(top.values, top.indices)]
        if kind.two_stage:
            heads = model.roi_heads
            heads.score_thresh, heads.nms_thresh, heads.detections_per_img = conf, iou, max_det
            detections = [_keep(d, conf, max_det) for d in raw["detections"]]
        else:
            model.score_thresh, model.nms_thresh, model.detections_per_img = conf, iou, max_det
            head, anchors = raw["head"], raw["anchors"]
            if kind.per_level:  # as RetinaNet.forward / FCOS.forward: split outputs per level
                per_level = [hw * (head["cls_logits"].size(1) // sum(raw["level_sizes"])) for hw in raw["level_sizes"]]
                head = {k: list(v.split(per_level, dim=1)) for k, v in head.items()}
                anchors = [list(a.split(per_level)) for a in anchors]
            detections = model.postprocess_detections(head, anchors, raw["image_sizes"])
        return model.transform.postprocess(detections, raw["image_sizes"], meta)


class _OneStage(torch.nn.Module):
    """A one-stage detector's `forward` as a module of the batched image tensor."""

    def __init__(self, adapter: TorchvisionAdapter, model: Any) -> None:
        super().__init__()
        self.model = model
        self.adapter = adapter

    def forward(self, x: torch.Tensor) -> Any:
        from torchvision.models.detection.image_list import ImageList

        h, w = int(x.shape[-2]), int(x.shape[-1])
        raw = self.adapter.forward(self.model, ImageList(x, [(h, w)] * int(x.shape[0])))
        return {k: v for k, v in raw.items() if k != "image_sizes"}


def _seeded(ref: ModelRef, kwargs: dict[str, Any]) -> Any:
    import torchvision.models as tvm

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ref.seed)
        try:
            return tvm.get_model(ref.name, **kwargs)
        except Exception as exc:  # noqa: BLE001 - bad --model-arg values are the user's to fix
            raise UsageError(f"building torchvision model {ref.name!r} failed: {type(exc).__name__}: "
                             f"{first_lines(exc)}") from None


def _shapes_only(ref: ModelRef, kwargs: dict[str, Any]) -> Any:
    """The model on the `meta` device (shapes, no storage, no initialisation: SSDlite in 0.2 s
    instead of 3 s), to compare with a checkpoint's; a real build where meta cannot build it."""
    import torchvision.models as tvm

    try:
        with torch.device("meta"):
            return tvm.get_model(ref.name, **kwargs)
    except Exception:  # noqa: BLE001 - then the seeded build says what is wrong, or works
        return _seeded(ref, kwargs)


def _builder_kwargs(ref: ModelRef, kind: DetectorKind | None, count: int | None = None) -> dict[str, Any]:
    """The builder's keywords: no download, the model's class count (`count`, else the data's
    plus background where the detector counts one), a ViT's image size."""
    kwargs: dict[str, Any] = {"weights": None, **dict(ref.kwargs)}
    own = ref.num_classes + (1 if kind is not None and kind.background else 0)
    kwargs["num_classes"] = count if count is not None else kwargs.get("num_classes", own)
    if kind is not None:
        kwargs["weights_backbone"] = None
    elif _vit_patch(ref.name) is not None and ref.imgsz is not None:
        kwargs.setdefault("image_size", ref.imgsz)
    return kwargs


def _classes_followed(ref: ModelRef, kind: DetectorKind | None, count: int) -> int:
    """The checkpoint's class count `count` (the model's, background included), followed with a
    warning where the data's classes fit in it; else one line naming the `--num-classes` that
    matches the file."""
    background = 1 if kind is not None and kind.background else 0
    data = count - background
    if data < ref.num_classes:
        raise UsageError(f"--weights {ref.weights} holds a {ref.name} of {data} classes, fewer than --num-classes "
                         f"{ref.num_classes}: pass --num-classes {data}")
    import warnings

    extra = " (plus background)" if background else ""
    warnings.warn(f"--weights {ref.weights} holds a {ref.name} of {data} classes{extra}: the model is built with "
                  f"its {data} classes, not --num-classes {ref.num_classes}", stacklevel=2)
    return count


def model_kind(model: Any) -> DetectorKind | None:
    """The kind of a built detector, by its class (subclasses first); None for a classifier."""
    from torchvision.models.detection import FCOS, FasterRCNN, KeypointRCNN, MaskRCNN, RetinaNet
    from torchvision.models.detection.ssd import SSD

    classes = (("keypointrcnn", KeypointRCNN), ("maskrcnn", MaskRCNN), ("fasterrcnn", FasterRCNN),
               ("ssd", SSD), ("retinanet", RetinaNet), ("fcos", FCOS))
    return next((DETECTORS[prefix] for prefix, cls in classes if isinstance(model, cls)), None)


def _normalise(images: torch.Tensor) -> torch.Tensor:
    mean = images.new_tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = images.new_tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return (images - mean) / std


def _first_labels(targets: torch.Tensor, batch: int) -> torch.Tensor:
    """One class per image: that of its first target row, 0 where it has none (no host sync)."""
    rows = targets.shape[0]
    if rows == 0:
        return torch.zeros(batch, dtype=torch.long, device=targets.device)
    first = torch.full((batch,), rows, dtype=torch.long, device=targets.device)
    order = torch.arange(rows, device=targets.device)
    first = first.scatter_reduce(0, targets[:, 0].long(), order, reduce="amin")
    has = first < rows
    return torch.where(has, targets[first.clamp(max=rows - 1), 1].long(), torch.zeros_like(first))


def _box_masks(boxes: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Each box filled as a uint8 [N, H, W] mask (Mask R-CNN's targets from boxes alone)."""
    ys = torch.arange(height, device=boxes.device).view(1, -1, 1) + 0.5
    xs = torch.arange(width, device=boxes.device).view(1, 1, -1) + 0.5
    b = boxes.view(-1, 4, 1, 1)
    return ((xs >= b[:, 0]) & (xs <= b[:, 2]) & (ys >= b[:, 1]) & (ys <= b[:, 3])).to(torch.uint8)


def _keep(detection: dict[str, torch.Tensor], conf: float, max_det: int) -> dict[str, torch.Tensor]:
    """An R-CNN image's detections (sorted by score) with score >= conf, the max_det best."""
    keep = (detection["scores"] >= conf).nonzero().flatten()[:max_det]
    return {k: v[keep] for k, v in detection.items()}


def _detector_loss(model: Any, inputs: Any, targets: Any) -> tuple[Any, dict[str, Any]]:
    parts = model(inputs, targets)
    return sum(parts.values()), parts


def _classifier_loss(model: Any, inputs: Any, targets: Any) -> tuple[Any, dict[str, Any]]:
    out = model(inputs)
    cross_entropy: Callable[..., torch.Tensor] = torch.nn.functional.cross_entropy
    if isinstance(out, torch.Tensor):
        loss = cross_entropy(out, targets)
        return loss, {"cross_entropy": loss.detach()}
    main = cross_entropy(out.logits, targets)  # Inception-v3 / GoogLeNet in training: (logits, aux...)
    aux = [cross_entropy(v, targets) for k, v in out._asdict().items() if k != "logits" and v is not None]
    loss = main + AUX_WEIGHT * sum(aux) if aux else main
    return loss, {"cross_entropy": main.detach(), **{f"aux{i + 1}": a.detach() for i, a in enumerate(aux)}}


ADAPTER = TorchvisionAdapter()
