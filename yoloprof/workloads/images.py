"""Image decoding, letterboxing and image-folder listing, shared by the datasets and the pipeline.

Decoding goes through Pillow (no OpenCV dependency). Every image becomes 3-channel RGB: grayscale,
palette and RGBA files all occur in real datasets and the model takes exactly three channels.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from yoloprof.errors import UsageError

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})
PAD_VALUE = 114  # the grey YOLO letterboxes with
# What Pillow raises for a file it cannot read as an image.
DECODE_ERRORS = (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError)


def pil_open(path: Path | str | BinaryIO) -> Image.Image:
    """Pillow's own `Image.open`, also where another package has replaced it in this process:
    Ultralytics' replacement answers a file Pillow cannot identify by installing `pi-heif` from
    the network, so one corrupt image would reach for the network (and fail offline with a
    traceback). Its wrapper keeps the function it replaced as `_image_open` (followed down to
    Pillow's own); any other wrapper is used as it is."""
    import sys

    opener = Image.open
    for _ in range(8):  # wrappers of wrappers: each keeps the one it replaced as `_image_open`
        if getattr(opener, "__module__", "PIL.Image") == "PIL.Image":
            break
        inner = getattr(sys.modules.get(opener.__module__), "_image_open", None)
        if inner is None or inner is opener:
            break
        opener = inner
    return opener(path)


@dataclass(frozen=True)
class Letterbox:
    """How one image was mapped into the square network input, to map boxes back."""

    orig_w: int
    orig_h: int
    ratio: float
    pad_x: float
    pad_y: float


def to_rgb(image: Image.Image) -> Image.Image:
    """Any mode -> RGB; transparent pixels of RGBA/LA/P images are composited on the pad grey
    rather than dropping alpha (which would turn them black and invent edges)."""
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        base = Image.new("RGBA", rgba.size, (PAD_VALUE, PAD_VALUE, PAD_VALUE, 255))
        return Image.alpha_composite(base, rgba).convert("RGB")
    return image.convert("RGB")


def load_rgb(path: Path | str | BinaryIO) -> Image.Image:
    """Fully decode an image file (or file object) to RGB; UsageError naming it when it is corrupt."""
    try:
        with pil_open(path) as im:
            im.load()
            return to_rgb(im)
    except DECODE_ERRORS as exc:
        name = path if isinstance(path, (str, Path)) else "from memory"
        raise UsageError(f"cannot decode image {name}: {exc}") from None


def _jpeg_complete(path: Path) -> bool:
    """Whether a JPEG ends with its end-of-image marker; a truncated file does not."""
    with open(path, "rb") as fh:
        fh.seek(-2, 2)
        return fh.read(2) == b"\xff\xd9"


def is_readable_image(path: Path) -> bool:
    """Cheap check used to skip corrupt files up front, in the main process.

    Pillow's verify() reads the whole structure of a PNG but only the header of a JPEG, so a
    truncated JPEG would pass it and fail later inside a loader worker; a JPEG without its
    end-of-image marker is therefore decoded fully here (JPEGs with trailing bytes still load).
    """
    try:
        with pil_open(path) as im:
            fmt = im.format
            im.verify()
        if fmt == "JPEG" and not _jpeg_complete(path):
            with pil_open(path) as im:
                im.load()
        return True
    except DECODE_ERRORS:
        return False


def letterbox(image: Image.Image, imgsz: int) -> tuple[Image.Image, Letterbox]:
    """Resize keeping the aspect ratio so the long side is imgsz, pad the rest with grey, centred."""
    w, h = image.size
    ratio = imgsz / max(w, h)
    new_w, new_h = max(1, round(w * ratio)), max(1, round(h * ratio))
    if (new_w, new_h) != (w, h):
        image = image.resize((new_w, new_h), Image.Resampling.BILINEAR)
    pad_x, pad_y = (imgsz - new_w) / 2, (imgsz - new_h) / 2
    canvas = Image.new("RGB", (imgsz, imgsz), (PAD_VALUE,) * 3)
    canvas.paste(image, (int(pad_x), int(pad_y)))
    return canvas, Letterbox(w, h, ratio, float(int(pad_x)), float(int(pad_y)))


def to_chw_uint8(image: Image.Image) -> torch.Tensor:
    """RGB PIL image -> contiguous uint8 tensor [3, H, W]."""
    return torch.from_numpy(np.asarray(image, dtype=np.uint8).copy()).permute(2, 0, 1).contiguous()


def list_images(folder: Path) -> list[Path]:
    """Image files under folder (recursively), sorted so every run sees the same order."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def readable_images(paths: list[Path], where: str) -> tuple[list[Path], list[str]]:
    """Drop files Pillow cannot read, warning about each; UsageError when none (or all bad) remain.

    Returns the readable paths and the warning messages (also issued with warnings.warn so a
    script using the library sees them without looking at the dataset).
    """
    if not paths:
        raise UsageError(f"no images found in {where} (looked for {', '.join(sorted(IMAGE_SUFFIXES))})")
    good, notes = [], []
    for path in paths:
        if is_readable_image(path):
            good.append(path)
        else:
            notes.append(f"skipping corrupt or unreadable image {path}")
            warnings.warn(notes[-1], stacklevel=3)
    if not good:
        raise UsageError(f"all {len(paths)} image(s) in {where} are corrupt or unreadable")
    return good, notes
