"""The built-in detector's training loss: centre-based assignment, GIoU, BCE objectness and classes.

Why a real loss and not MSE on random targets: the backward pass of a detector is shaped by the
loss (gathers, masks, IoU arithmetic, BCE over every cell), and a profile of "training" should
contain that work. The assignment is the simple centre-sampling rule of FCOS/YOLOX:

* a cell is a candidate for a ground-truth box when its centre lies inside the box and within
  `radius` strides of the box centre (per axis), or when it is the cell that contains the box
  centre (so every box, however small, gets at least one positive on each level);
* a cell claimed by several boxes goes to the smallest one.

The loss is written without boolean indexing, `.item()` or any other host read of device values,
so it adds no device synchronisation of its own: a profile of the step shows the model's syncs,
not the loss's. The targets may be on the CPU (they are then moved, non-blocking) or the device.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from yoloprof.workloads.boxes import box_area, cxcywh_to_xyxy, giou
from yoloprof.workloads.yolo import NUM_BOX, STRIDES, distances_to_boxes, flatten_outputs, make_anchors


def target_boxes(targets: torch.Tensor, width: int, height: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """[M, 6] rows (image, cls, cx, cy, w, h) normalised -> (image [M] long, cls [M] long,
    xyxy pixel boxes [M, 4])."""
    if targets.ndim != 2 or targets.shape[1] != 6:
        raise ValueError(f"targets must have shape [M, 6], got {list(targets.shape)}")
    cxcywh = targets[:, 2:6].clone()
    cxcywh[:, 0::2] *= width  # python scalars: no host-to-device copy when targets are on a GPU
    cxcywh[:, 1::2] *= height
    return targets[:, 0].long(), targets[:, 1].long(), cxcywh_to_xyxy(cxcywh)


def assign(points: torch.Tensor, stride: torch.Tensor, boxes: torch.Tensor, image: torch.Tensor, batch: int,
           radius: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Centre-based assignment of M boxes (of images `image`) to the A cells of every image.

    Returns (positive mask [B, A], index into the M boxes [B, A]; 0 where not positive). Works on
    the flat box list with scatter-reductions, so no per-image padding and no host-side count.
    """
    pts, s = points[None], stride[None, :, 0]  # [1, A, 2], [1, A]
    box = boxes[:, None]  # [M, 1, 4]
    delta = (pts - (box[..., :2] + box[..., 2:]) / 2).abs()  # [M, A, 2]
    inside = ((pts > box[..., :2]) & (pts < box[..., 2:])).all(-1)
    near = (delta < radius * s[..., None]).all(-1)
    holds_centre = (delta <= s[..., None] / 2).all(-1)
    cand = (inside & near) | holds_centre  # [M, A]
    key = box_area(boxes)[:, None].expand_as(cand).masked_fill(~cand, float("inf"))  # smallest box wins
    rows = image[:, None].expand_as(key)
    best = torch.full((batch, key.shape[1]), float("inf"), device=boxes.device)
    best = best.scatter_reduce(0, rows, key, "amin")
    winner = cand & (key == best[image])
    m_index = torch.arange(len(boxes), device=boxes.device)[:, None].expand_as(key)
    none = torch.full_like(m_index, len(boxes))
    first = torch.full((batch, key.shape[1]), len(boxes), dtype=torch.long, device=boxes.device)
    first = first.scatter_reduce(0, rows, torch.where(winner, m_index, none), "amin")  # ties: lower index
    pos = first < len(boxes)
    return pos, torch.where(pos, first, torch.zeros_like(first))


class DetectionLoss:
    """Callable `(outputs, targets) -> (loss, parts)`; `parts` holds detached tensors (box, obj,
    cls) so a caller can log them without forcing a device sync inside the step."""

    def __init__(self, num_classes: int, strides: tuple[int, ...] = STRIDES, radius: float = 2.5,
                 box_weight: float = 5.0, obj_weight: float = 1.0, cls_weight: float = 1.0) -> None:
        self.nc, self.strides, self.radius = num_classes, strides, radius
        self.weights = (box_weight, obj_weight, cls_weight)

    def __call__(self, outputs: list[torch.Tensor], targets: torch.Tensor) -> tuple[torch.Tensor, dict]:
        flat = flatten_outputs(outputs).float()  # [B, A, 4 + 1 + nc]; float32 even under autocast
        if flat.shape[-1] != NUM_BOX + 1 + self.nc:
            raise ValueError(f"outputs have {flat.shape[-1]} channels, expected {NUM_BOX + 1 + self.nc}")
        batch, dev = flat.shape[0], flat.device
        height, width = (d * self.strides[0] for d in outputs[0].shape[-2:])
        points, stride = make_anchors(outputs, self.strides)
        image, gt_cls, gt_boxes = (t.to(dev, non_blocking=True) for t in target_boxes(targets, width, height))
        obj_logit = flat[..., NUM_BOX]
        if gt_boxes.shape[0] == 0:  # a shape, known on the host: no sync to find out
            # No boxes anywhere: every cell is background; keep the box/cls graph alive with zeros.
            zero = flat[..., :NUM_BOX].sum() * 0.0 + flat[..., NUM_BOX + 1:].sum() * 0.0
            lobj = F.binary_cross_entropy_with_logits(obj_logit, torch.zeros_like(obj_logit))
            return self._total(zero, lobj, zero.clone())
        pos, best = assign(points, stride, gt_boxes.float(), image, batch, self.radius)
        posf = pos.float()
        npos = posf.sum().clamp(min=1.0)
        pred_boxes = distances_to_boxes(flat[..., :NUM_BOX], points, stride)
        matched = gt_boxes.float()[best]  # [B, A, 4]
        lbox = ((1.0 - giou(pred_boxes, matched)) * posf).sum() / npos
        lobj = F.binary_cross_entropy_with_logits(obj_logit, posf)
        classes = torch.arange(self.nc, device=dev)
        cls_target = (gt_cls[best][..., None] == classes).float()  # one-hot without one_hot's range check
        bce = F.binary_cross_entropy_with_logits(flat[..., NUM_BOX + 1:], cls_target, reduction="none")
        lcls = (bce.sum(-1) * posf).sum() / npos
        return self._total(lbox, lobj, lcls)

    def _total(self, lbox: torch.Tensor, lobj: torch.Tensor, lcls: torch.Tensor) -> tuple[torch.Tensor, dict]:
        wb, wo, wc = self.weights
        loss = wb * lbox + wo * lobj + wc * lcls
        return loss, {"box": lbox.detach(), "obj": lobj.detach(), "cls": lcls.detach()}

