"""The inference pipeline, split into the three stages a profile times separately:

* `preprocess`: decode (paths) + RGB + letterbox + uint8 -> device -> float in [0, 1];
* forward: the model itself (the caller runs it);
* `postprocess`: box decode + confidence filter + class-aware NMS + `max_det`, boxes mapped back to
  original image pixels.

User models (a factory's) have outputs of unknown meaning, so their postprocess is the identity
(workloads/family_builtin.py FACTORY): the profile then shows a zero-cost postprocess stage rather
than a made-up one.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from itertools import cycle, islice
from pathlib import Path

import torch
from PIL import Image

from yoloprof.errors import UsageError
from yoloprof.workloads.images import Letterbox, letterbox, list_images, load_rgb, readable_images, to_chw_uint8, to_rgb
from yoloprof.workloads.nms import batched_nms
from yoloprof.workloads.sample import sample_image_path
from yoloprof.workloads.yolo import STRIDES, decode_outputs
from yoloprof.workloads.yolodata import YAML_SUFFIXES, dataset_yaml, inference_split, yaml_split_images

MAX_NMS = 30_000  # candidates handed to NMS at most (highest scores first), as Ultralytics does

ImageSource = Image.Image | Path | str | bytes  # bytes = an encoded file (JPEG/PNG/...) in memory


def load_sources(source: str | Path | None) -> list[Path]:
    """Inference inputs: None = the bundled sample, an image file, a folder of images, or a YOLO
    data.yaml (or a dataset folder holding one): its `val` images, `train` when it has no `val`.

    Returns paths, not decoded images: decoding is part of the timed preprocess stage. Corrupt
    files in a folder are skipped with a warning; a folder with none readable is a UsageError.
    """
    if source is None:
        return [sample_image_path()]
    path = Path(source).expanduser()
    if path.is_dir():
        path = dataset_yaml(path) or path
    if path.is_file() and path.suffix.lower() in YAML_SUFFIXES:
        split = inference_split(path)
        images, _ = yaml_split_images(path, split)
        good, _ = readable_images(images, f"{path} ({split})")
        return good
    if path.is_dir():
        good, _ = readable_images(list_images(path), str(path))
        return good
    if path.is_file():
        good, _ = readable_images([path], str(path))
        return good
    raise UsageError(f"image source {str(source)!r} does not exist (expected an image file or a folder)")


def batch_sources(sources: Sequence[ImageSource], batch: int) -> list[ImageSource]:
    """Fill a batch of `batch` inputs by cycling through the sources (one sample image, batch 8)."""
    if not sources:
        raise UsageError("no image sources to fill a batch with")
    return list(islice(cycle(sources), batch))


def decode(item: ImageSource) -> Image.Image:
    """One image source (PIL image, path or encoded bytes) -> an RGB PIL image, fully decoded."""
    if isinstance(item, Image.Image):
        return to_rgb(item)
    if isinstance(item, (bytes, bytearray, memoryview)):
        return load_rgb(io.BytesIO(item))
    return load_rgb(item)


def preprocess(images: Sequence[ImageSource], imgsz: int, device: torch.device | str = "cpu",
               dtype: torch.dtype = torch.float32, non_blocking: bool = True) -> tuple[torch.Tensor, list[Letterbox]]:
    """Images (PIL images, paths or encoded bytes) -> ([B, 3, imgsz, imgsz] `dtype` tensor on
    `device`, letterbox meta).

    The uint8 batch crosses to the device and is converted there (4x fewer bytes moved than float).
    """
    boxed = [letterbox(decode(item), imgsz) for item in images]
    batch = torch.stack([to_chw_uint8(im) for im, _ in boxed])
    if str(device) != "cpu" and non_blocking:
        batch = batch.pin_memory() if torch.cuda.is_available() else batch
    tensor = batch.to(device, non_blocking=non_blocking).to(dtype).div_(255.0)
    return tensor, [meta for _, meta in boxed]


def _scale_back(boxes: torch.Tensor, meta: Letterbox) -> torch.Tensor:
    """Network-input pixels -> original image pixels, clipped to the image."""
    pad = boxes.new_tensor([meta.pad_x, meta.pad_y, meta.pad_x, meta.pad_y])
    out = (boxes - pad) / meta.ratio
    out[:, 0::2] = out[:, 0::2].clamp(0, meta.orig_w)
    out[:, 1::2] = out[:, 1::2].clamp(0, meta.orig_h)
    return out


def detections_one(decoded: torch.Tensor, meta: Letterbox, conf: float, iou: float, max_det: int) -> torch.Tensor:
    """[N, 4 + 1 + nc] decoded rows of one image -> [K, 6] (x1, y1, x2, y2, score, cls)."""
    scores, classes = (decoded[:, 5:] * decoded[:, 4:5]).max(1)  # score = objectness x class prob
    mask = scores > conf
    boxes, scores, classes = decoded[mask, :4], scores[mask], classes[mask]
    if len(scores) > MAX_NMS:
        top = scores.topk(MAX_NMS).indices
        boxes, scores, classes = boxes[top], scores[top], classes[top]
    keep = batched_nms(boxes, scores, classes, iou)[:max_det]
    return torch.cat((_scale_back(boxes[keep], meta), scores[keep, None], classes[keep, None].float()), 1)


def postprocess(raw_outputs: list[torch.Tensor], meta: list[Letterbox], conf: float = 0.25, iou: float = 0.45,
                max_det: int = 300) -> list[torch.Tensor]:
    """Built-in detector outputs -> one [K, 6] float32 tensor per image, K <= max_det,
    boxes in original image coordinates, sorted by descending score."""
    decoded = decode_outputs(raw_outputs, STRIDES)
    if decoded.shape[0] != len(meta):
        raise ValueError(f"{decoded.shape[0]} images in the outputs but {len(meta)} in meta")
    return [detections_one(d, m, conf, iou, max_det) for d, m in zip(decoded, meta)]
