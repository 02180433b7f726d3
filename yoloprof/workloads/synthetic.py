"""Deterministic synthetic detection data: coloured rectangles and ellipses on a noisy background.

Each image is generated inside `__getitem__` from a generator seeded by (seed, index), so
* the same seed gives identical tensors whatever the worker count or access order, and
* the data loader does real per-image work (noise, shape rasterisation), the way decoding a JPEG
  does, instead of handing out one cached tensor and making dataload look free.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

MAX_OBJECTS = 6
MIN_SIDE = 0.05  # smallest box side, as a fraction of the image
MAX_SIDE = 0.5


class SyntheticDetection(Dataset):
    """`n_images` square uint8 images [3, imgsz, imgsz] with labels [k, 5] = (cls, cx, cy, w, h)."""

    def __init__(self, n_images: int, imgsz: int, num_classes: int = 80, seed: int = 0) -> None:
        if n_images < 0 or imgsz < 8 or num_classes < 1:
            raise ValueError("n_images >= 0, imgsz >= 8 and num_classes >= 1 are required")
        self.n_images, self.imgsz, self.num_classes, self.seed = n_images, imgsz, num_classes, seed
        self.names = [f"class{i}" for i in range(num_classes)]
        self.skipped = 0
        self.warnings: list[str] = []

    def __len__(self) -> int:
        return self.n_images

    def _generator(self, index: int) -> torch.Generator:
        gen = torch.Generator()
        gen.manual_seed((self.seed * 1_000_003 + index) % (2**63 - 1))
        return gen

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < self.n_images:
            raise IndexError(index)
        gen, size = self._generator(index), self.imgsz
        base = torch.randint(40, 200, (3, 1, 1), generator=gen).float()
        image = base + torch.randn((3, size, size), generator=gen) * 12.0
        k = int(torch.randint(1, MAX_OBJECTS + 1, (1,), generator=gen))
        labels = torch.zeros((k, 5))
        ys = torch.arange(size, dtype=torch.float32)[:, None] + 0.5
        xs = torch.arange(size, dtype=torch.float32)[None, :] + 0.5
        for j in range(k):
            wh = MIN_SIDE + torch.rand(2, generator=gen) * (MAX_SIDE - MIN_SIDE)
            centre = wh / 2 + torch.rand(2, generator=gen) * (1 - wh)
            cls = int(torch.randint(0, self.num_classes, (1,), generator=gen))
            colour = torch.randint(0, 256, (3, 1, 1), generator=gen).float()
            cx, cy, w, h = (float(v) * size for v in (centre[0], centre[1], wh[0], wh[1]))
            if cls % 2:  # odd classes are ellipses, even ones rectangles: shape carries the class
                mask = ((xs - cx) / (w / 2)) ** 2 + ((ys - cy) / (h / 2)) ** 2 <= 1.0
            else:
                mask = ((xs - cx).abs() <= w / 2) & ((ys - cy).abs() <= h / 2)
            image = torch.where(mask, colour, image)
            labels[j] = torch.tensor([cls, centre[0], centre[1], wh[0], wh[1]])
        return image.clamp(0, 255).to(torch.uint8), labels
