"""A tiny offline YOLO dataset for real Ultralytics trainings in tests (profile_trainer)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="yoloprof-ul-"))  # settings file on import
os.environ.setdefault("YOLO_OFFLINE", "1")

BATCH = 2


def yolo_dataset(root: Path, n: int = 20) -> Path:
    """n 64x64 images with one box each, as a YOLO folder (images/ + labels/ + data.yaml)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    (root / "images").mkdir()
    (root / "labels").mkdir()
    for i in range(n):
        Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(root / "images" / f"{i}.png")
        (root / "labels" / f"{i}.txt").write_text(f"{i % 2} 0.5 0.5 0.4 0.3\n")
    data = root / "data.yaml"
    data.write_text(f"path: {root}\ntrain: images\nval: images\nnames:\n  0: a\n  1: b\n")
    return data
