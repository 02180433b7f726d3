"""How far a configuration's outputs are from the reference's (docs/knobs.md "Outputs checked").

Figures, on the same fixed input run through both networks:
- `output_max_abs_diff`: the largest |a - b| over every element of every output tensor;
- `output_max_rel_diff`: per output tensor, max |a - b| over max |b| (b the reference), then the
  worst tensor. Relative to the tensor's largest magnitude, not per element: a logit near 0 that
  moves by 1e-6 is not a 100% error;
- `detections_matched_pct`: detections after NMS matched one to one (greedy by IoU, highest
  first, same class, IoU >= 0.5), as 100 * matched / max(reference count, candidate count) over
  the batch, so missing and extra detections both lower it; n/a where neither side detects anything.

numpy only: the capture converts its tensors before calling these.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MATCH_IOU = 0.5


def tensor_diffs(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(max abs diff, worst per-tensor relative diff) over (candidate, reference) pairs of equal
    shape. A reference tensor of all zeros: relative 0 when equal, inf otherwise."""
    worst_abs, worst_rel = 0.0, 0.0
    for a, b in pairs:
        if a.shape != b.shape:
            raise ValueError(f"output shapes differ: {a.shape} vs reference {b.shape}")
        if a.size == 0:
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        diff = float(np.max(np.abs(a64 - b64)))
        scale = float(np.max(np.abs(b64)))
        rel = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
        worst_abs, worst_rel = max(worst_abs, diff), max(worst_rel, rel)
    return worst_abs, worst_rel


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box in `a` [N, 4] with every box in `b` [M, 4] (x1, y1, x2, y2)."""
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(axis=2)
    area_a = np.clip(a[:, 2:] - a[:, :2], 0, None).prod(axis=1)
    area_b = np.clip(b[:, 2:] - b[:, :2], 0, None).prod(axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def match_count(cand_boxes: np.ndarray, cand_cls: np.ndarray, ref_boxes: np.ndarray, ref_cls: np.ndarray,
                threshold: float = MATCH_IOU) -> int:
    """Pairs matched one to one: repeatedly take the highest-IoU pair of the same class with
    IoU >= threshold, then drop both boxes."""
    if len(cand_boxes) == 0 or len(ref_boxes) == 0:
        return 0
    iou = box_iou(cand_boxes, ref_boxes)
    iou[cand_cls[:, None] != ref_cls[None, :]] = -1.0
    matched = 0
    while True:
        i, j = np.unravel_index(int(np.argmax(iou)), iou.shape)
        if iou[i, j] < threshold:
            return matched
        matched += 1
        iou[i, :], iou[:, j] = -1.0, -1.0


def matched_pct(images: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
                ) -> tuple[float | None, str | None]:
    """(detections_matched_pct, None) over per-image (cand_boxes, cand_cls, ref_boxes, ref_cls),
    or (None, why) where neither side detects anything."""
    matched = sum(match_count(*img) for img in images)
    cand = sum(len(img[0]) for img in images)
    ref = sum(len(img[2]) for img in images)
    if cand == 0 and ref == 0:
        return None, "neither the configuration nor the eager float32 reference detects anything on the fixed input"
    return 100.0 * matched / max(cand, ref), None
