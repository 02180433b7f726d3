"""Class-aware NMS: torchvision's kernel when it imports, else an exact pure-torch equivalent.

Both follow torchvision's semantics: boxes are visited in descending score order, a box is dropped
when its IoU with an already kept box of the same class is strictly greater than the threshold,
and the kept indices come back sorted by descending score.

The pure-torch version is exact greedy NMS, vectorised: inside a block of score-sorted boxes the
keep mask is the fixed point of `keep[j] = not any(keep[i] and iou[i, j] > t for i < j)`, which
is reached after at most (length of the longest suppression chain) matrix steps, usually 2-4; entry
j depends only on entries before it, so the fixed point is unique and equals the sequential
result. Blocks bound memory at BLOCK x BLOCK instead of N x N. Equal scores are broken by index
(stable sort); torchvision's order among exact ties is unspecified.
"""

from __future__ import annotations

import torch

from yoloprof.workloads.boxes import pairwise_iou

BLOCK = 2048

try:  # torchvision is optional; a broken install (ABI mismatch) must not break yoloprof either.
    from torchvision.ops import batched_nms as _tv_batched_nms
except Exception:  # noqa: BLE001 - any import failure means "not available"
    _tv_batched_nms = None

HAS_TORCHVISION = _tv_batched_nms is not None


def _exceeds(iou: torch.Tensor, threshold: float) -> torch.Tensor:
    """`iou > threshold` with the threshold as the double it is (as torchvision's kernel compares):
    torch would round it to float32 first, and 0.3 becomes 0.30000001, which an IoU of exactly
    float32(0.3) does not exceed. For float32 x: x > t (double) <=> x >= f32(t) when f32(t) > t."""
    t32 = torch.tensor(threshold, dtype=iou.dtype).item()
    return iou >= t32 if t32 > threshold else iou > t32


def _greedy_block(iou: torch.Tensor, threshold: float) -> torch.Tensor:
    """Exact greedy keep mask for one block of score-sorted boxes (iou: [K, K])."""
    suppresses = torch.triu(_exceeds(iou, threshold), diagonal=1)  # [i, j]: i (higher score) can drop j
    keep = torch.ones(iou.shape[0], dtype=torch.bool, device=iou.device)
    for _ in range(iou.shape[0]):
        new = ~(suppresses & keep[:, None]).any(0)
        if torch.equal(new, keep):
            break
        keep = new
    return keep


def _overlaps(a: torch.Tensor, b: torch.Tensor, ca: torch.Tensor | None, cb: torch.Tensor | None) -> torch.Tensor:
    """IoU of every box of `a` with every box of `b`, 0 between boxes of different classes."""
    iou = pairwise_iou(a, b)
    return iou if ca is None or cb is None else iou.masked_fill(ca[:, None] != cb[None, :], 0.0)


def nms_torch(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float,
              classes: torch.Tensor | None = None) -> torch.Tensor:
    """Greedy NMS in pure torch (class-aware when `classes` is given); returns kept indices sorted
    by descending score."""
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.long, device=boxes.device)
    order = torch.sort(scores, descending=True, stable=True).indices
    sorted_boxes = boxes[order].float()
    sorted_cls = None if classes is None else classes[order]
    kept: list[torch.Tensor] = []
    kept_boxes = sorted_boxes[:0]
    kept_cls = None if sorted_cls is None else sorted_cls[:0]
    for start in range(0, len(order), BLOCK):
        block = sorted_boxes[start:start + BLOCK]
        block_cls = None if sorted_cls is None else sorted_cls[start:start + BLOCK]
        alive = torch.ones(len(block), dtype=torch.bool, device=boxes.device)
        if len(kept_boxes):  # boxes kept in earlier blocks suppress this block first
            alive = ~_exceeds(_overlaps(kept_boxes, block, kept_cls, block_cls), iou_threshold).any(0)
        idx = torch.nonzero(alive).squeeze(1)
        live_cls = None if block_cls is None else block_cls[idx]
        keep = _greedy_block(_overlaps(block[idx], block[idx], live_cls, live_cls), iou_threshold)
        kept.append(order[start + idx[keep]])
        kept_boxes = torch.cat((kept_boxes, block[idx[keep]]))
        if kept_cls is not None and live_cls is not None:
            kept_cls = torch.cat((kept_cls, live_cls[keep]))
    return torch.cat(kept)


def batched_nms_torch(boxes: torch.Tensor, scores: torch.Tensor, classes: torch.Tensor,
                      iou_threshold: float) -> torch.Tensor:
    """Class-aware NMS: the IoU of boxes of different classes counts as 0. Computed on the boxes as
    they are: the coordinate-offset trick (adding class x span to every box) rounds large float32
    coordinates differently and kept a box that exact per-class NMS drops."""
    return nms_torch(boxes, scores, iou_threshold, classes)


def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, classes: torch.Tensor,
                iou_threshold: float) -> torch.Tensor:
    """Kept indices of class-aware NMS, descending score; torchvision's kernel when available."""
    if _tv_batched_nms is not None:
        return _tv_batched_nms(boxes.float(), scores.float(), classes, iou_threshold)
    return batched_nms_torch(boxes, scores, classes, iou_threshold)


def nms_backend() -> str:
    """Which implementation batched_nms uses, for the profile's environment record."""
    return "torchvision" if HAS_TORCHVISION else "torch"
