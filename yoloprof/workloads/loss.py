"""The built-in detector's training loss: centre-based assignment, GIoU, BCE objectness and classes.

Why a real loss and not MSE on random targets: the backward pass of a detector is shaped by the
loss (gathers, masks, IoU arithmetic, BCE over every cell), and a profile of "training" should
contain that work. The assignment is the simple centre-sampling rule of FCOS/YOLOX:

* a cell is a candidate for a ground-truth box when its centre lies inside the box and within
  `radius` strides of the box centre (per axis), or when it is the cell that contains the box
  centre (so every box, however small, gets at least one positive on each level);
* a cell claimed by several boxes goes to the smallest one.

The loss is written without boolean indexing and without `.item()` so it adds no device
synchronisation of its own; the one host read left is the largest box count per image, taken on
the targets' device. Pass the targets on the CPU (as the data loader yields them) and the loss
never waits for the GPU.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from yoloprof.workloads.boxes import box_area, cxcywh_to_xyxy, giou
from yoloprof.workloads.yolo import NUM_BOX, STRIDES, distances_to_boxes, flatten_outputs, make_anchors


def pack_targets(targets: torch.Tensor, batch: int, width: int, height: int) -> tuple[torch.Tensor, ...]:
    """[M, 6] rows (image, cls, cx, cy, w, h) normalised -> per-image padded tensors.

    Returns xyxy pixel boxes [B, G, 4], classes [B, G] (long) and a validity mask [B, G], where G is
    the largest number of boxes in one image (0 when there are none).
    """
    if targets.ndim != 2 or targets.shape[1] != 6:
        raise ValueError(f"targets must have shape [M, 6], got {list(targets.shape)}")
    img = targets[:, 0].long()
    counts = torch.bincount(img, minlength=batch)
    g = int(counts.max()) if targets.shape[0] else 0
    boxes = targets.new_zeros((batch, g, 4))
    classes = torch.zeros((batch, g), dtype=torch.long, device=targets.device)
    valid = torch.zeros((batch, g), dtype=torch.bool, device=targets.device)
    if g:
        order = torch.argsort(img, stable=True)
        img_sorted = img[order]
        starts = torch.cumsum(counts, 0) - counts
        slot = torch.arange(len(order), device=targets.device) - starts[img_sorted]
        scale = targets.new_tensor([width, height, width, height])
        boxes[img_sorted, slot] = cxcywh_to_xyxy(targets[order, 2:6] * scale)
        classes[img_sorted, slot] = targets[order, 1].long()
        valid[img_sorted, slot] = True
    return boxes, classes, valid


def assign(points: torch.Tensor, stride: torch.Tensor, gt_boxes: torch.Tensor, valid: torch.Tensor,
           radius: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Centre-based assignment; returns (positive mask [B, A], assigned box index [B, A])."""
    pts = points[None, None]  # [1, 1, A, 2]
    s = stride[None, None, :, 0]  # [1, 1, A]
    box = gt_boxes[:, :, None]  # [B, G, 1, 4]
    centre = (box[..., :2] + box[..., 2:]) / 2
    delta = (pts - centre).abs()  # [B, G, A, 2]
    inside = ((pts > box[..., :2]) & (pts < box[..., 2:])).all(-1)
    near = (delta < radius * s[..., None]).all(-1)
    holds_centre = (delta <= s[..., None] / 2).all(-1)
    cand = ((inside & near) | holds_centre) & valid[:, :, None]
    area = box_area(gt_boxes)[:, :, None].expand_as(cand)
    area = torch.where(cand, area, torch.full_like(area, float("inf")))
    best = area.argmin(1)  # [B, A]: the smallest candidate box wins ties
    return cand.any(1), best


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
        gt_boxes, gt_cls, valid = (t.to(dev, non_blocking=True) for t in pack_targets(targets, batch, width, height))
        obj_logit = flat[..., NUM_BOX]
        if gt_boxes.shape[1] == 0:
            # No boxes anywhere: every cell is background; keep the box/cls graph alive with zeros.
            zero = flat[..., :NUM_BOX].sum() * 0.0 + flat[..., NUM_BOX + 1:].sum() * 0.0
            lobj = F.binary_cross_entropy_with_logits(obj_logit, torch.zeros_like(obj_logit))
            return self._total(zero, lobj, zero.clone())
        pos, best = assign(points, stride, gt_boxes, valid, self.radius)
        posf = pos.float()
        npos = posf.sum().clamp(min=1.0)
        pred_boxes = distances_to_boxes(flat[..., :NUM_BOX], points, stride)
        matched = torch.gather(gt_boxes, 1, best[..., None].expand(-1, -1, 4))
        lbox = ((1.0 - giou(pred_boxes, matched)) * posf).sum() / npos
        lobj = F.binary_cross_entropy_with_logits(obj_logit, posf)
        cls_target = F.one_hot(torch.gather(gt_cls, 1, best), self.nc).float()
        bce = F.binary_cross_entropy_with_logits(flat[..., NUM_BOX + 1:], cls_target, reduction="none")
        lcls = (bce.sum(-1) * posf).sum() / npos
        return self._total(lbox, lobj, lcls)

    def _total(self, lbox: torch.Tensor, lobj: torch.Tensor, lcls: torch.Tensor) -> tuple[torch.Tensor, dict]:
        wb, wo, wc = self.weights
        loss = wb * lbox + wo * lobj + wc * lcls
        return loss, {"box": lbox.detach(), "obj": lobj.detach(), "cls": lcls.detach()}

