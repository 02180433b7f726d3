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
    """IoU matrix [N, M] of xyxy boxes a [N, 4] and b [M, 4] (the NMS kernel's inner product).

    Written per coordinate with in-place ops so it allocates a handful of [N, M] buffers instead of
    [N, M, 2] intermediates: it is most of the pure-torch NMS's time.
    """
    ax1, ay1, ax2, ay2 = (a[:, i, None] for i in range(4))
    bx1, by1, bx2, by2 = (b[None, :, i] for i in range(4))
    inter = torch.minimum(ax2, bx2).sub_(torch.maximum(ax1, bx1)).clamp_(min=0)
    inter.mul_(torch.minimum(ay2, by2).sub_(torch.maximum(ay1, by1)).clamp_(min=0))
    union = (box_area(a)[:, None] + box_area(b)[None, :]).sub_(inter).clamp_(min=_EPS)
    return inter.div_(union)


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
