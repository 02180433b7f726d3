"""Plain LibreYOLO loops, written with LibreYOLO's own pieces only (no yoloprof), for
bench/bench_families.py: `name` is "<family>:<size>" (e.g. "yolo9:t").

- training: the family's `_from_scratch(size, nb_classes=80, seed=0)`, images float in [0, 1] and
  targets `[B, 3, 5]` (class, normalised xyxy) as its YOLO9 trainer feeds them (made once), its
  trainer's step (plain_loops/trainer_steps.py: PGI branch on, the trainer's optimizer and EMA);
  phases forward, backward, optimizer (+ EMA);
- inference: its `_preprocess` per image, the module's forward, its `_postprocess` per image (what
  its `predict` calls); stages preprocess, forward, postprocess.
"""

from __future__ import annotations

import io
from typing import Any, Callable

import torch
from PIL import Image

NUM_CLASSES = 80
CONF, IOU, MAX_DET = 0.25, 0.45, 300  # LibreYOLO's own (InferenceRunner.__call__), as yoloprof infer runs them


def _wrapper(name: str) -> Any:
    import libreyolo.models  # noqa: F401 - registers the families
    from libreyolo.models.base.model import BaseModel

    family, size = name.split(":")
    cls = next(c for c in BaseModel._registry if c.FAMILY == family)
    return cls._from_scratch(size=size, nb_classes=NUM_CLASSES, device="cpu", seed=0)


def train_phases(name: str, batch: int, imgsz: int, device: str = "cpu") -> dict[str, Callable[[], None]]:
    """Its trainer's step (plain_loops/trainer_steps.py: the PGI branch, its optimizer and EMA),
    the EMA update timed with the optimizer, as yoloprof's clip + optimizer + ema."""
    from plain_loops.trainer_steps import libreyolo_phases

    gen = torch.Generator().manual_seed(1)
    imgs = torch.randint(0, 256, (batch, 3, imgsz, imgsz), dtype=torch.uint8, generator=gen).float() / 255
    xy = torch.rand(batch, 3, 2, generator=gen) * 0.5
    targets = torch.cat((torch.randint(0, NUM_CLASSES, (batch, 3, 1), generator=gen).float(), xy, xy + 0.3), 2)
    phases = libreyolo_phases(name.split(":")[1], imgs, targets)
    step, ema = phases["optimizer"], phases.pop("ema")
    phases["optimizer"] = lambda: (step(), ema())  # type: ignore[func-returns-value]
    return phases


def infer_stages(name: str, source: bytes, batch: int, imgsz: int, device: str = "cpu") -> dict[str, Callable[[], None]]:
    wrapper = _wrapper(name)
    model = wrapper.model.eval()
    state: dict[str, Any] = {}

    def preprocess() -> None:
        done = [wrapper._preprocess(Image.open(io.BytesIO(source)).convert("RGB"), color_format="rgb",
                                    input_size=imgsz) for _ in range(batch)]
        state["x"], state["meta"] = torch.cat([d[0] for d in done]), [(d[2], d[3]) for d in done]

    def forward() -> None:
        with torch.inference_mode():
            state["raw"] = model(state["x"])

    def postprocess() -> None:
        raw = state.pop("raw")
        with torch.inference_mode():
            for i, (size, ratio) in enumerate(state["meta"]):
                one = {k: (v[i:i + 1] if isinstance(v, torch.Tensor) else v) for k, v in raw.items()}
                wrapper._postprocess(one, CONF, IOU, size, max_det=MAX_DET, ratio=ratio, input_size=imgsz)

    return {"preprocess": preprocess, "forward": forward, "postprocess": postprocess}
