"""Training data for a capture: resolve `--data`, build the dataset, wrap it in a DataLoader.

The loader yields `(images uint8 [B, 3, H, W], targets float [M, 6])` with target rows
(image index in batch, cls, cx, cy, w, h), normalised. Images stay uint8 on the host: that is what
a real pipeline moves across PCIe, and the float conversion then belongs to the to_device phase
(`to_device` below), not to dataload.
"""

from __future__ import annotations

from collections.abc import Sized
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from yoloprof.errors import UsageError
from yoloprof.workloads.synthetic import SyntheticDetection
from yoloprof.workloads.yolodata import YAML_SUFFIXES, YoloDataset, from_folder, from_yaml

__all__ = ["SyntheticDetection", "YoloDataset", "build_dataset", "collate", "make_loader", "num_batches",
           "to_device"]

DEFAULT_SYNTHETIC_IMAGES = 64


def build_dataset(data: str | None, imgsz: int, num_classes: int = 80, n_images_hint: int | None = None,
                  seed: int = 0) -> SyntheticDetection | YoloDataset:
    """'synthetic' (or None) | a data.yaml path | a dataset folder -> a map-style Dataset.

    `n_images_hint` sizes the synthetic set (the capture passes exactly what the run consumes);
    a real dataset is as large as it is, and `num_batches` tells the caller whether it suffices.
    """
    if data is None or data == "synthetic":
        n = DEFAULT_SYNTHETIC_IMAGES if n_images_hint is None else int(n_images_hint)
        return SyntheticDetection(n, imgsz, num_classes, seed)
    path = Path(data).expanduser()
    if path.is_dir():
        return from_folder(path, imgsz, num_classes)
    if path.is_file():
        if path.suffix.lower() not in YAML_SUFFIXES:
            raise UsageError(f"data {data!r} is a file but not a data.yaml (expected .yaml/.yml)")
        return from_yaml(path, imgsz, num_classes)
    raise UsageError(f"unknown data {data!r}: not 'synthetic', and no such data.yaml or dataset folder")


def collate(batch: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack images; prefix each label row with its image's index in the batch."""
    images = torch.stack([img for img, _ in batch])
    rows = [torch.cat((torch.full((len(lab), 1), float(i)), lab), 1) for i, (_, lab) in enumerate(batch)]
    targets = torch.cat(rows) if rows else torch.zeros((0, 6))
    return images, targets.reshape(-1, 6)


def make_loader(dataset: Dataset, batch: int, workers: int = 0, shuffle: bool = False, seed: int = 0,
                pin_memory: bool = False) -> DataLoader:
    """A DataLoader with drop_last=True (every measured step sees a full batch).

    Shuffling draws from a generator seeded here, so two loaders built with the same seed yield
    the same batches (repeats of a capture see the same data).
    """
    if batch < 1:
        raise UsageError(f"batch must be >= 1 (got {batch})")
    gen = torch.Generator()
    gen.manual_seed(seed)
    return DataLoader(dataset, batch_size=batch, shuffle=shuffle, num_workers=workers, collate_fn=collate,
                      drop_last=True, generator=gen, pin_memory=pin_memory,
                      persistent_workers=False, worker_init_fn=_quiet_worker if workers else None)


def _quiet_worker(_worker_id: int) -> None:
    """Loader workers leave Ctrl-C to the main process (which shuts them down in order: no
    traceback from every worker), and print Python warnings as one channel line each."""
    import signal
    import warnings

    from yoloprof import warn

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.showwarning = warn.showwarning


def num_batches(dataset: Sized, batch: int) -> int:
    """Full batches one pass over the dataset yields (drop_last=True)."""
    return len(dataset) // batch if batch > 0 else 0


def to_device(images: torch.Tensor, targets: torch.Tensor, device: torch.device | str,
              dtype: torch.dtype = torch.float32, non_blocking: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Move a batch and scale uint8 images to [0, 1] in `dtype` on the device.

    Targets are moved too; DetectionLoss also accepts them on the CPU (where packing them costs no
    device sync), so a caller may keep them there.
    """
    images = images.to(device, non_blocking=non_blocking)
    images = images.to(dtype).div_(255.0) if images.dtype == torch.uint8 else images.to(dtype)
    return images, targets.to(device, non_blocking=non_blocking)
