"""YOLO-format datasets: a data.yaml or a dataset folder with images/ and labels/.

Layout rules follow the Ultralytics convention users already have on disk:
* data.yaml keys `path` (dataset root; relative = relative to the yaml's folder), `train`, `val`,
  `names` (list or {id: name}); `train` may be a folder, an image-list .txt, or a list of those,
  each relative to `path` (or, failing that, to the yaml's folder);
* the label of `.../images/a/b.jpg` is `.../labels/a/b.txt`; no label file = no boxes;
* label lines are `cls cx cy w h`, coordinates normalised to [0, 1].

Everything a user can get wrong is checked when the dataset is built, in the main process, so the
error is one line naming the file (and line) instead of a traceback out of a loader worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import yaml
from torch.utils.data import Dataset

from yoloprof.errors import UsageError
from yoloprof.workloads.images import letterbox, list_images, load_rgb, readable_images, to_chw_uint8

YAML_SUFFIXES = (".yaml", ".yml")  # what makes a `--data`/source file a data.yaml
_COORD_EPS = 1e-6  # tolerance for labels written as 1.0000001 by float round-off


def label_path(image: Path) -> Path:
    """`.../images/x/y.jpg` -> `.../labels/x/y.txt` (last `images` component); else beside it."""
    parts = list(image.parts)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "images":
            parts[i] = "labels"
            return Path(*parts).with_suffix(".txt")
    return image.with_suffix(".txt")


def parse_label_file(path: Path, num_classes: int) -> torch.Tensor:
    """Rows (cls, cx, cy, w, h); UsageError naming file and line for any malformed line."""
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}:{lineno}"
        if len(fields) != 5:
            raise UsageError(f"label {where}: expected 5 fields 'cls cx cy w h', got {len(fields)}")
        try:
            values = [float(f) for f in fields]
        except ValueError:
            raise UsageError(f"label {where}: non-numeric value in {line.strip()!r}") from None
        cls = values[0]
        if cls != int(cls) or not 0 <= cls < num_classes:
            raise UsageError(f"label {where}: class {fields[0]} is not an integer in [0, {num_classes})")
        if any(not -_COORD_EPS <= v <= 1 + _COORD_EPS for v in values[1:]):
            raise UsageError(f"label {where}: box values must be normalised to [0, 1], got {' '.join(fields[1:])}")
        rows.append([min(max(v, 0.0), 1.0) if i else v for i, v in enumerate(values)])
    return torch.tensor(rows, dtype=torch.float32).reshape(-1, 5)


class YoloDataset(Dataset):
    """Letterboxed uint8 images [3, imgsz, imgsz] and labels [k, 5] mapped into that square.

    Decoding happens in `__getitem__` (so a profile's dataload time is real JPEG/PNG work);
    corrupt files were already dropped at construction: `skipped` counts them, `warnings` says which.
    """

    def __init__(self, images: list[Path], imgsz: int, num_classes: int, names: list[str] | None = None,
                 where: str = "the dataset") -> None:
        self.files, self.warnings = readable_images(images, where)
        self.skipped = len(images) - len(self.files)
        self.imgsz, self.num_classes = imgsz, num_classes
        self.names = names or [f"class{i}" for i in range(num_classes)]
        self.labels = [self._labels_for(f) for f in self.files]

    def _labels_for(self, image: Path) -> torch.Tensor:
        path = label_path(image)
        return parse_label_file(path, self.num_classes) if path.is_file() else torch.zeros((0, 5))

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image, box = letterbox(load_rgb(self.files[index]), self.imgsz)
        labels = self.labels[index].clone()
        if len(labels):
            size = self.imgsz
            labels[:, 1] = (labels[:, 1] * box.orig_w * box.ratio + box.pad_x) / size
            labels[:, 2] = (labels[:, 2] * box.orig_h * box.ratio + box.pad_y) / size
            labels[:, 3] = labels[:, 3] * box.orig_w * box.ratio / size
            labels[:, 4] = labels[:, 4] * box.orig_h * box.ratio / size
        return to_chw_uint8(image), labels


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"cannot read data file {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"data file {path} is not a YAML mapping")
    return doc


def _names(doc: dict[str, Any]) -> list[str] | None:
    names = doc.get("names")
    if isinstance(names, dict):
        return [str(names[k]) for k in sorted(names)]
    return [str(n) for n in names] if isinstance(names, list) else None


def _resolve_entry(entry: str, roots: list[Path], yaml_path: Path) -> list[Path]:
    """One `train` entry -> image paths: a folder, an image-list .txt, or a single image."""
    candidates = [root / entry for root in roots] if not Path(entry).is_absolute() else [Path(entry)]
    target = next((c for c in candidates if c.exists()), None)
    if target is None:
        raise UsageError(f"{yaml_path}: train entry {entry!r} not found (looked in {', '.join(map(str, roots))})")
    if target.is_dir():
        return list_images(target)
    if target.suffix.lower() == ".txt":
        lines = [ln.strip() for ln in target.read_text(encoding="utf-8").splitlines() if ln.strip()]
        return [p if p.is_absolute() else (target.parent / p) for p in map(Path, lines)]
    return [target]


def yaml_split_images(yaml_path: Path, split: str) -> tuple[list[Path], dict[str, Any]]:
    """The image paths of `split` in a data.yaml, and the parsed document."""
    doc = _read_yaml(yaml_path)
    if not doc.get(split):
        raise UsageError(f"data file {yaml_path} has no '{split}' entry (expected keys: path, train, val, names)")
    base = Path(str(doc.get("path") or "."))
    root = base if base.is_absolute() else yaml_path.parent / base
    roots = [root, yaml_path.parent] if root != yaml_path.parent else [root]
    entries = doc[split] if isinstance(doc[split], list) else [doc[split]]
    return [img for entry in entries for img in _resolve_entry(str(entry), roots, yaml_path)], doc


def inference_split(yaml_path: Path) -> str:
    """Inference runs over the validation images (what a detector is evaluated on), or the
    training images when the data.yaml has no `val` entry."""
    return "val" if _read_yaml(yaml_path).get("val") else "train"


def dataset_yaml(folder: Path) -> Path | None:
    """A dataset folder's own data.yaml, if it has one."""
    return next((folder / n for n in ("data.yaml", "data.yml") if (folder / n).is_file()), None)


def from_yaml(yaml_path: Path, imgsz: int, num_classes: int, split: str = "train") -> YoloDataset:
    """Dataset for `split` of a data.yaml (the capture trains on `train`)."""
    images, doc = yaml_split_images(yaml_path, split)
    return YoloDataset(images, imgsz, num_classes, _names(doc), where=f"{yaml_path} ({split})")


def from_folder(folder: Path, imgsz: int, num_classes: int) -> YoloDataset:
    """A dataset folder given directly: its data.yaml if it has one, else images/, else itself."""
    own = dataset_yaml(folder)
    if own is not None:
        return from_yaml(own, imgsz, num_classes)
    image_dir = folder / "images" if (folder / "images").is_dir() else folder
    return YoloDataset(list_images(image_dir), imgsz, num_classes, where=str(image_dir))
