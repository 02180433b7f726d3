"""Box helpers shared by the loss, NMS and the pipeline (pure torch, any device, any batch shape)."""

from __future__ import annotations

import torch

_EPS = 1e-7


def cxcywh_to_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """Centre/size boxes -> corner boxes (the label format -> the format IoU is computed in)."""
    c, half = boxes[..., :2], boxes[..., 2:4] / 2
    return torch.cat((c - half, c + half), -1)


def box_area(boxes: torch.Tensor) -> torch.Tensor:
    return (boxes[..., 2] - boxes[..., 0]).clamp(min=0) * (boxes[..., 3] - boxes[..., 1]).clamp(min=0)


def pairwise_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IoU matrix [N, M] of xyxy boxes a [N, 4] and b [M, 4] (the NMS kernel's inner product)."""
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = box_area(a)[:, None] + box_area(b)[None, :] - inter
    return inter / union.clamp(min=_EPS)


def giou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Element-wise generalised IoU of matching xyxy boxes [..., 4]; in [-1, 1].

    GIoU rather than plain IoU because it still has a gradient when predicted and true boxes do
    not overlap, which is the common case for a randomly initialised detector.
    """
    lt = torch.maximum(a[..., :2], b[..., :2])
    rb = torch.minimum(a[..., 2:], b[..., 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = box_area(a) + box_area(b) - inter
    iou = inter / union.clamp(min=_EPS)
    hull_lt = torch.minimum(a[..., :2], b[..., :2])
    hull_rb = torch.maximum(a[..., 2:], b[..., 2:])
    hull = (hull_rb - hull_lt).clamp(min=0).prod(-1)
    return iou - (hull - union) / hull.clamp(min=_EPS)
