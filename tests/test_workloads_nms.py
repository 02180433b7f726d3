"""NMS: hand-computed cases, a sequential reference, block boundaries, torchvision when present."""

from __future__ import annotations

import pytest
import torch

import yoloprof.workloads.nms as nms
from yoloprof.workloads.nms import batched_nms, batched_nms_torch, nms_torch


def sequential_nms(boxes: list[list[float]], scores: list[float], classes: list[int], thr: float) -> list[int]:
    """Textbook greedy NMS with plain Python floats: the definition the fast version must equal."""
    def iou(a, b):
        iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = iw * ih
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return inter / union if union > 0 else 0.0

    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    kept: list[int] = []
    for i in order:
        if all(classes[k] != classes[i] or iou(boxes[k], boxes[i]) <= thr for k in kept):
            kept.append(i)
    return kept


def test_overlapping_same_class_is_suppressed_other_class_kept():
    boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [50, 50, 60, 60]])
    scores = torch.tensor([0.9, 0.8, 0.7, 0.6])
    classes = torch.tensor([0, 0, 1, 0])
    # Box 1 overlaps box 0 with IoU 81/119 = 0.68 > 0.5 -> dropped; box 2 is another class.
    assert batched_nms_torch(boxes, scores, classes, 0.5).tolist() == [0, 2, 3]
    assert batched_nms_torch(boxes, scores, classes, 0.7).tolist() == [0, 1, 2, 3]


def test_threshold_is_strict_like_torchvision():
    scores = torch.tensor([0.5, 0.4])
    half = torch.tensor([[0.0, 0, 3, 1], [1, 0, 4, 1]])  # IoU exactly 0.5 (2 / 4), exact in float32
    assert nms_torch(half, scores, 0.5).tolist() == [0, 1]
    assert nms_torch(half, scores, 0.4999).tolist() == [0]
    # IoU 1/3 is float32(1/3) = 0.33333334 > 1/3: torchvision's kernel compares it with the
    # threshold as a double and drops the box; rounding the threshold to float32 would keep it
    third = torch.tensor([[0.0, 0, 2, 1], [1, 0, 3, 1]])
    assert nms_torch(third, scores, 1 / 3).tolist() == [0]
    assert nms_torch(third, scores, 0.3333334).tolist() == [0, 1]


def test_chain_suppression_keeps_the_third_box():
    # A suppresses B, B would suppress C, but B is gone so C survives (A and C do not overlap).
    boxes = torch.tensor([[0.0, 0, 10, 10], [5, 0, 15, 10], [10, 0, 20, 10]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    assert nms_torch(boxes, scores, 0.3).tolist() == [0, 2]


def test_equal_scores_are_broken_by_index():
    boxes = torch.tensor([[0.0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10]])
    scores = torch.tensor([0.5, 0.5, 0.5])
    assert nms_torch(boxes, scores, 0.5).tolist() == [0]
    scores = torch.tensor([0.5, 0.7, 0.7])
    assert nms_torch(boxes, scores, 0.5).tolist() == [1]


def test_result_is_sorted_by_descending_score():
    boxes = torch.tensor([[0.0, 0, 1, 1], [5, 5, 6, 6], [10, 10, 11, 11]])
    assert nms_torch(boxes, torch.tensor([0.1, 0.9, 0.5]), 0.5).tolist() == [1, 2, 0]


def test_empty_input():
    empty = torch.zeros((0, 4))
    assert batched_nms_torch(empty, torch.zeros(0), torch.zeros(0, dtype=torch.long), 0.5).shape == (0,)
    assert batched_nms(empty, torch.zeros(0), torch.zeros(0, dtype=torch.long), 0.5).shape == (0,)


def random_boxes(n: int, seed: int, n_classes: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=gen) * 200 - 20  # some boxes start left of/above the image
    wh = torch.rand(n, 2, generator=gen) * 60 + 1
    return torch.cat((xy, xy + wh), 1), torch.rand(n, generator=gen), torch.randint(0, n_classes, (n,), generator=gen)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("thr", [0.3, 0.5, 0.7])
def test_matches_sequential_reference(seed, thr):
    boxes, scores, classes = random_boxes(300, seed)
    expected = sequential_nms(boxes.tolist(), scores.tolist(), classes.tolist(), thr)
    assert batched_nms_torch(boxes, scores, classes, thr).tolist() == expected


def test_blocks_give_the_same_result(monkeypatch):
    boxes, scores, classes = random_boxes(500, 11)
    whole = batched_nms_torch(boxes, scores, classes, 0.45)
    monkeypatch.setattr(nms, "BLOCK", 37)
    assert torch.equal(batched_nms_torch(boxes, scores, classes, 0.45), whole)


def torchvision_ops():
    try:
        import torchvision.ops as ops
    except Exception as exc:  # noqa: BLE001 - mirrors the module's guard
        pytest.skip(f"torchvision does not import here ({type(exc).__name__}), nothing to compare against")
    return ops


@pytest.mark.parametrize("seed", range(3))
def test_identical_to_torchvision(seed):
    ops = torchvision_ops()
    boxes, scores, classes = random_boxes(2000, seed, n_classes=5)
    for thr in (0.3, 0.45, 0.7):
        assert torch.equal(batched_nms_torch(boxes, scores, classes, thr), ops.batched_nms(boxes, scores, classes, thr))


def test_backend_reports_what_is_used():
    assert nms.nms_backend() == ("torchvision" if nms.HAS_TORCHVISION else "torch")
