"""Each model family's own post-process thresholds (docs/workloads.md "Post-process settings").

`conf`, `iou` and `max_det` default to None, "the family's own": the values the family's library
uses when it predicts, so an inference capture times the post-process its users really pay for
(SSDlite keeps every box scoring 0.001 and up; yoloprof's 0.25 would hide most of that work).
`--conf/--iou/--max-det` (sweeps: `capture.conf`, ...) override them. `resolve` turns None into the
numbers, so a profile's config, a row and a configuration hash always hold the values that ran;
`origins` says which came from the family and which from the user.

Where each number is read (the libraries' installed source):
- yoloprof's built-in detector and a user's factory: yoloprof's pipeline, 0.25 / 0.45 / 300;
- Ultralytics: `ultralytics/cfg/default.yaml` (iou 0.7, max_det 300; conf empty there, which
  `BasePredictor.__init__` sets to 0.25);
- LibreYOLO: the keyword defaults of `InferenceRunner.__call__` (conf 0.25, iou 0.45, max_det 300);
- torchvision detectors: the builders' constructor defaults (`SSD`: score_thresh 0.01, nms_thresh
  0.45, detections_per_img 200; `ssdlite320_mobilenet_v3_large` passes 0.001, 0.55, 300;
  `RetinaNet` 0.05, 0.5, 300; `FCOS` 0.2, 0.6, 100; Faster/Mask/Keypoint R-CNN's ROI heads
  box_score_thresh 0.05, box_nms_thresh 0.5, box_detections_per_img 100). A builder keyword given
  with `--model-arg` (`score_thresh=0.3`) is the model's own value, and so the default.
  torchvision classifiers have no thresholds (softmax, top 5): they keep yoloprof's numbers, unused.
Training captures never run a post-process: their config keeps yoloprof's numbers, as before these
defaults existed, so training configurations keep their hashes.

This module imports only the standard library, the family table and errors: it sits in the lowest layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, TypedDict

from yoloprof.config.model_families import FACTORY, split_model
from yoloprof.errors import UsageError

KEYS = ("conf", "iou", "max_det")  # the settings these defaults fill
FAMILY, USER = "family", "user"  # where a value came from (profile config `postprocess_from`)


class Values(TypedDict):
    """The post-process settings as they run (numbers, never None)."""

    conf: float
    iou: float
    max_det: int


@dataclass(frozen=True)
class PostDefaults:
    """One model's own post-process values, and the builder keywords that set them (torchvision)."""

    conf: float
    iou: float
    max_det: int
    keywords: tuple[str, str, str] | None = None  # builder keywords of (conf, iou, max_det)

    def values(self) -> dict[str, Any]:
        return {"conf": self.conf, "iou": self.iou, "max_det": self.max_det}


YOLOPROF = PostDefaults(0.25, 0.45, 300)  # the built-in pipeline's (workloads/pipeline.py)
FAMILIES: dict[str, PostDefaults] = {
    "yolo": YOLOPROF,
    FACTORY: YOLOPROF,
    "ultralytics": PostDefaults(0.25, 0.7, 300),
    "libreyolo": PostDefaults(0.25, 0.45, 300),
}
_SINGLE = ("score_thresh", "nms_thresh", "detections_per_img")
_ROI = ("box_score_thresh", "box_nms_thresh", "box_detections_per_img")
# torchvision builder name prefix -> its constructor's values (first match wins: ssdlite before ssd)
TORCHVISION: tuple[tuple[str, PostDefaults], ...] = (
    ("ssdlite", PostDefaults(0.001, 0.55, 300, _SINGLE)),
    ("ssd", PostDefaults(0.01, 0.45, 200, _SINGLE)),
    ("retinanet", PostDefaults(0.05, 0.5, 300, _SINGLE)),
    ("fcos", PostDefaults(0.2, 0.6, 100, _SINGLE)),
    ("fasterrcnn", PostDefaults(0.05, 0.5, 100, _ROI)),
    ("maskrcnn", PostDefaults(0.05, 0.5, 100, _ROI)),
    ("keypointrcnn", PostDefaults(0.05, 0.5, 100, _ROI)),
)


def torchvision_defaults(name: str) -> PostDefaults | None:
    """A torchvision detection builder's own values; None for a classifier."""
    return next((d for prefix, d in TORCHVISION if str(name).startswith(prefix)), None)


def family_defaults(model: Any, model_kwargs: Mapping[str, Any] | None = None) -> PostDefaults:
    """The model's own post-process values (builder keywords in `model_kwargs` included); a
    model whose family is unknown gets yoloprof's (its error comes from validation, not here)."""
    try:
        family, name = split_model(model)
    except UsageError:  # an unknown family is refused elsewhere, with its own message
        return YOLOPROF
    if family != "torchvision":
        return FAMILIES.get(family, YOLOPROF)
    own = torchvision_defaults(name)
    if own is None or own.keywords is None:
        return YOLOPROF
    given = dict(model_kwargs or {})
    conf, iou, max_det = (given.get(k, v) for k, v in zip(own.keywords, (own.conf, own.iou, own.max_det)))
    return PostDefaults(float(conf), float(iou), int(max_det), own.keywords)


def resolve(mode: str, model: Any, model_kwargs: Mapping[str, Any] | None,
            given: Mapping[str, Any]) -> Values:
    """`conf`, `iou`, `max_det` as they run: each given value kept, each None the model's own
    (inference) or yoloprof's (training, which runs no post-process)."""
    own = family_defaults(model, model_kwargs) if mode == "infer" else YOLOPROF
    values = {**own.values(), **{k: given[k] for k in KEYS if given.get(k) is not None}}
    return Values(conf=float(values["conf"]), iou=float(values["iou"]), max_det=int(values["max_det"]))


def origins(given: Mapping[str, Any]) -> dict[str, str]:
    """Where each value comes from: `family` where it was not given (None), else `user`."""
    return {k: FAMILY if given.get(k) is None else USER for k in KEYS}
