"""torchvision `--weights`: a state-dict file read, its class count compared with the model's before
the model is built (`checkpoint_classes`), loaded with any refusal on one line (family_torchvision.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from yoloprof.errors import UsageError


def read_weights(path: str) -> Mapping[str, Any]:
    """A state dict from a file (a plain one, or one under `model` / `state_dict`)."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"model weights file {path!r} not found")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a bad file is the user's to fix
        raise UsageError(f"cannot load torchvision weights {path!r}: {type(exc).__name__}: {first_lines(exc)}") from None
    if isinstance(state, Mapping) and not any(isinstance(v, torch.Tensor) for v in state.values()):
        state = state.get("model", state.get("state_dict", state))
    if not isinstance(state, Mapping):
        raise UsageError(f"cannot load torchvision weights {path!r}: not a state dict ({type(state).__name__})")
    return state


def first_lines(exc: BaseException, width: int = 300) -> str:
    """An exception's message on one line: its first line and its first detail, cut at `width`
    characters with the count of the details left out (torch's load_state_dict puts the header
    "Error(s) in loading state_dict for ResNet:" alone on the first line)."""
    lines = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()]
    text = " ".join(lines[:2])
    text = text if len(text) <= width else text[:width - 3] + "..."
    return text + (f" (and {len(lines) - 2} more)" if len(lines) > 2 else "")


def checkpoint_classes(model: Any, state: Mapping[str, Any], built: int) -> int | None:
    """The class count a state dict's classifier was trained with, when it differs from `built`
    (the model's own count): every tensor whose shape differs from the model's only in its first
    dimension, which is `k * built` in the model (a classifier's rows, a detection head's `anchors
    x classes` channels, Faster R-CNN's `4 x classes` box rows), must be `k * N` in the file, with
    one N for all of them. None when the shapes agree or say nothing consistent."""
    own = model.state_dict()
    counts = set()
    for key, value in state.items():
        mine = own.get(key)
        if mine is None or not isinstance(value, torch.Tensor) or value.shape == mine.shape:
            continue
        if value.dim() != mine.dim() or value.dim() == 0 or value.shape[1:] != mine.shape[1:] \
                or mine.shape[0] % built or value.shape[0] % (mine.shape[0] // built):
            return None
        counts.add(value.shape[0] // (mine.shape[0] // built))
    return counts.pop() if len(counts) == 1 else None


def load_weights(model: Any, state: Mapping[str, Any], path: str) -> None:
    try:
        model.load_state_dict(state)
    except Exception as exc:  # noqa: BLE001 - a bad file is the user's to fix
        raise UsageError(f"cannot load torchvision weights {path!r}: {type(exc).__name__}: {first_lines(exc)}") from None
