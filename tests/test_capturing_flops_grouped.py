"""FLOPs of grouped and depthwise convolutions, forward and training step, against a hand-worked count.

The hand count of one convolution call (torch's convention: 2 FLOPs per multiply-add, bias ignored):
    F = 2 * N * C_out * (C_in / groups) * kh * kw * H_out * W_out       (a plain conv)
    F = 2 * N * C_in * (C_out / groups) * kh * kw * H_in * W_in         (a transposed conv)
A training step adds F for grad_weight (when the weight requires grad) and F for grad_input (when
the conv's input requires grad: not for the first layer, whose input is the batch). On whole models
it is summed over every conv call by forward hooks (an independent walk: the shapes the layers saw).
torch's own `FlopCounterMode` counts grad_weight as if groups were 1 (the bug this guards against).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from yoloprof.capturing.device.flop_count import FlopCounter

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)


def _hand_forward(conv: nn.Module, x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> int:
    """F above, from the layer's attributes and the shapes it saw."""
    kernel = math.prod(conv.kernel_size)
    if isinstance(conv, nn.modules.conv._ConvTransposeNd):
        return 2 * x_shape[0] * conv.in_channels * (conv.out_channels // conv.groups) * kernel * math.prod(x_shape[2:])
    return 2 * y_shape[0] * conv.out_channels * (conv.in_channels // conv.groups) * kernel * math.prod(y_shape[2:])


class _HandCount:
    """Forward hooks on every conv: `forward` = sum of F, `train` = sum of F x (1 + weight grad + input grad)."""

    def __init__(self, model: nn.Module) -> None:
        self.forward = self.train = 0
        self.grouped = 0
        self._handles = [m.register_forward_hook(self._hook) for m in model.modules() if isinstance(m, _CONVS)]

    def _hook(self, conv: nn.Module, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x = inputs[0]
        f = _hand_forward(conv, tuple(x.shape), tuple(output.shape))
        self.forward += f
        grads = torch.is_grad_enabled()
        self.train += f * (1 + int(grads and conv.weight.requires_grad) + int(grads and x.requires_grad))
        self.grouped += int(conv.groups > 1)

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()


def _ours(fn: Any) -> float:
    with FlopCounter() as counter:
        fn()
    return counter.mix.total


def _torchs(fn: Any) -> float:
    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


@pytest.mark.parametrize("cin,cout,groups", [(8, 16, 1), (8, 16, 4), (16, 16, 16)], ids=["groups1", "groups4", "depthwise"])
def test_one_conv_forward_and_training_step_match_the_hand_formula(cin, cout, groups):
    torch.manual_seed(0)
    conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1, groups=groups)
    x = torch.randn(2, cin, 20, 20)
    hand = 2 * 2 * cout * (cin // groups) * 3 * 3 * 10 * 10  # N=2, 20 px at stride 2 -> 10 x 10
    assert _ours(lambda: conv(x)) == hand
    assert _ours(lambda: conv(x).sum().backward()) == 2 * hand  # grad_weight only: x needs no grad
    xg = x.clone().requires_grad_(True)
    assert _ours(lambda: conv(xg).sum().backward()) == 3 * hand  # grad_input too
    torchs = _torchs(lambda: conv(xg).sum().backward())
    # torch's own count agrees where groups = 1 and over-counts grad_weight groups-fold otherwise
    assert torchs == (3 * hand if groups == 1 else 2 * hand + groups * hand)


def test_a_grouped_transposed_conv_matches_the_hand_formula():
    torch.manual_seed(0)
    conv = nn.ConvTranspose2d(8, 12, 4, stride=2, padding=1, groups=4)
    x = torch.randn(1, 8, 6, 6, requires_grad=True)
    hand = 2 * 1 * 8 * (12 // 4) * 4 * 4 * 6 * 6
    assert _ours(lambda: conv(x)) == hand
    assert _ours(lambda: conv(x).sum().backward()) == 3 * hand


def test_a_64_channel_depthwise_conv_costs_twice_its_forward_backward():
    """The issue's case: forward 1.18 MFLOP here, backward 2x that (torch's count: 66x)."""
    conv = nn.Conv2d(64, 64, 3, padding=1, groups=64)
    x = torch.randn(1, 64, 32, 32, requires_grad=True)
    forward = _ours(lambda: conv(x))
    assert forward == 2 * 64 * 9 * 32 * 32
    assert _ours(lambda: conv(x).sum().backward()) == 3 * forward


def _model_counts(model: nn.Module, forward: Any, step: Any) -> dict[str, float]:
    hand = _HandCount(model)
    try:
        fwd = _ours(forward)
        hand_fwd, hand.forward, hand.train = hand.forward, 0, 0
        train = _ours(step)
    finally:
        hand.close()
    return {"forward": fwd, "train": train, "hand_forward": hand_fwd, "hand_train": hand.train, "grouped": hand.grouped}


def _sum_outputs(out: Any) -> torch.Tensor:
    tensors = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(t.sum() for t in tensors)  # type: ignore[return-value]


def test_ssdlite_training_step_is_within_2pct_of_the_hand_count():
    """A depthwise-heavy detector: torch's count was 7x over (102 GFLOP per step for a 4.7 forward
    at batch 4); ours holds the hand count, and train/forward is the hand ratio (a little under 3:
    the first conv computes no grad_input)."""
    detection = pytest.importorskip("torchvision.models.detection")
    torch.manual_seed(0)
    model = detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3)
    images = [torch.rand(3, 64, 64) for _ in range(2)]  # the model's transform resizes to 320 x 320
    targets = [{"boxes": torch.tensor([[4.0, 6.0, 40.0, 50.0]]), "labels": torch.tensor([1])}] * 2

    def forward() -> None:
        model.eval()
        with torch.no_grad():
            model(images)

    def step() -> None:
        model.train()
        sum(model(images, targets).values()).backward()

    c = _model_counts(model, forward, step)
    assert c["grouped"] > 10
    assert c["forward"] == pytest.approx(c["hand_forward"], rel=0.02)
    assert c["train"] == pytest.approx(c["hand_train"], rel=0.02)
    assert c["train"] / c["forward"] == pytest.approx(c["hand_train"] / c["hand_forward"], rel=0.02)
    assert 2.9 < c["train"] / c["forward"] <= 3.0
    assert _torchs(step) > 5 * c["train"]  # what torch alone says: the over-count fixed here


def _ultralytics(cfg: str, tmp_path, monkeypatch) -> nn.Module:
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    tasks = pytest.importorskip("ultralytics.nn.tasks")
    torch.manual_seed(0)
    return tasks.DetectionModel(cfg, verbose=False).train()


def test_yolov8n_has_no_grouped_convs_and_keeps_train_3x_forward(tmp_path, monkeypatch):
    """No grouped convs: our count equals torch's own, and the step is forward x 3 less the first
    layer's grad_input (and the frozen DFL conv's grad_weight when it runs)."""
    model = _ultralytics("yolov8n.yaml", tmp_path, monkeypatch)
    x = torch.rand(1, 3, 64, 64)
    c = _model_counts(model, lambda: model(x), lambda: _sum_outputs(model(x)).backward())
    assert c["grouped"] == 0
    assert c["forward"] == c["hand_forward"]
    assert c["train"] == c["hand_train"]
    assert c["train"] == _torchs(lambda: _sum_outputs(model(x)).backward())
    assert c["train"] / c["forward"] == pytest.approx(3.0, rel=0.02)


def test_yolo11n_training_step_is_within_2pct_of_the_hand_count(tmp_path, monkeypatch):
    """YOLO11n has depthwise convs (and attention matmuls, whose FLOPs torch counts right: added
    to the hand count of the convs as torch counts them). torch alone read train/forward 3.37."""
    model = _ultralytics("yolo11n.yaml", tmp_path, monkeypatch)
    x = torch.rand(1, 3, 64, 64)

    def step() -> None:
        _sum_outputs(model(x)).backward()

    with FlopCounterMode(display=False) as torch_counter:
        step()
    not_conv = sum(v for op, v in torch_counter.get_flop_counts()["Global"].items() if "convolution" not in str(op))
    c = _model_counts(model, lambda: model(x), step)
    assert c["grouped"] > 0
    assert c["train"] == pytest.approx(c["hand_train"] + not_conv, rel=0.02)
    assert c["train"] < torch_counter.get_total_flops()


def test_the_user_loop_reports_the_hand_counted_flops_and_achieved_tflops(tmp_path):
    """gflops_per_step and achieved_tflops (and MFU on a GPU: the same count) come from the fixed counter."""
    import json

    import yoloprof

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1, groups=16),
                          nn.Conv2d(16, 8, 1))
    x = torch.rand(2, 3, 16, 16)
    hand = _HandCount(model)
    model(x).sum().backward()
    hand.close()
    with yoloprof.profile(tmp_path / "p", model=model, warmup=1, steps=3, trace_steps=1, modules=False) as prof:
        while not prof.done:
            model(x).sum().backward()
            prof.step(x)
    profile = json.loads((tmp_path / "p" / "profile.json").read_text())
    metrics = profile["metrics"]
    assert metrics["gflops_per_step"]["value"] * 1e9 == pytest.approx(hand.train, rel=1e-9)
    step_ms = metrics["step_ms"]["samples"]
    assert metrics["achieved_tflops"]["samples"] == pytest.approx([hand.train / (ms / 1e3) / 1e12 for ms in step_ms])
