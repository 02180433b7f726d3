"""GPU-only checks of the workloads (skipped on CPU machines by the one skip helper).

The loss promises to add no device synchronisation to a training step; CUDA's sync debug mode
turns any synchronising call into an error, which is the only way to check that promise.
"""

from __future__ import annotations

import pytest
import torch

from gpu import requires_cuda
from yoloprof.workloads.loss import DetectionLoss
from yoloprof.workloads.nms import batched_nms_torch
from yoloprof.workloads.pipeline import load_sources, postprocess, preprocess
from yoloprof.workloads.yolo import build_yolo

pytestmark = [requires_cuda, pytest.mark.gpu]


@pytest.mark.parametrize("targets_on_gpu", [False, True])
def test_loss_adds_no_device_sync(batch, targets_on_gpu):
    images, targets = batch
    model = build_yolo("n", num_classes=8).cuda()
    x = images.cuda().float() / 255
    targets = targets.cuda() if targets_on_gpu else targets
    outputs = model(x)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        loss, parts = DetectionLoss(8)(outputs, targets)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    cpu_model = build_yolo("n", num_classes=8)
    expected, _ = DetectionLoss(8)(cpu_model(images.float() / 255), batch[1])
    assert loss.item() == pytest.approx(expected.item(), rel=1e-3)


def test_loss_under_float16_autocast(batch):
    images, targets = batch
    model = build_yolo("n", num_classes=8).cuda()
    with torch.autocast("cuda", dtype=torch.float16):
        loss, _ = DetectionLoss(8)(model(images.cuda().float() / 255), targets)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    loss.backward()


def test_pure_nms_same_on_gpu_and_cpu():
    gen = torch.Generator().manual_seed(0)
    xy = torch.rand(3000, 2, generator=gen) * 300
    boxes = torch.cat((xy, xy + torch.rand(3000, 2, generator=gen) * 80 + 1), 1)
    scores, classes = torch.rand(3000, generator=gen), torch.randint(0, 4, (3000,), generator=gen)
    cpu = batched_nms_torch(boxes, scores, classes, 0.5)
    gpu = batched_nms_torch(boxes.cuda(), scores.cuda(), classes.cuda(), 0.5)
    assert torch.equal(cpu, gpu.cpu())


def test_pipeline_on_gpu_matches_cpu():
    model = build_yolo("n").eval()
    sources = load_sources(None)
    x_cpu, meta = preprocess(sources, 160)
    x_gpu, _ = preprocess(sources, 160, device="cuda")
    assert x_gpu.is_cuda and torch.equal(x_gpu.cpu(), x_cpu)
    with torch.no_grad():
        cpu = postprocess(model(x_cpu), meta, conf=0.0, max_det=20)[0]
        gpu = postprocess(model.cuda()(x_gpu), meta, conf=0.0, max_det=20)[0]
    assert gpu.shape == cpu.shape == (20, 6)
    assert torch.allclose(gpu[:, 4].cpu(), cpu[:, 4], atol=1e-4)
