"""The built-in YOLO-style detector family (sizes n t s m l).

The point of the built-in model is not accuracy but a *representative* workload: the same mix of
3x3/1x1 convolutions, batch norms, SiLU activations, concatenations, upsampling and pooling that
real YOLOv5/v8 detectors spend their time in, at widths and depths that scale like theirs. A user
profiling "a YOLO" therefore sees a kernel mix close to the real thing without any download.

The forward pass always returns the raw per-level head outputs (training and eval alike); turning
them into boxes is `decode_outputs`, which the inference pipeline times as part of postprocess.
"""

from __future__ import annotations

import math

import torch
from torch import nn

STRIDES: tuple[int, ...] = (8, 16, 32)
# (width multiplier, depth multiplier, channel cap) per size, after YOLOv8's scaling table; the cap
# keeps the deepest stage of the big sizes from dominating the way an uncapped 1024 would.
SIZE_SCALES: dict[str, tuple[float, float, int]] = {
    "n": (0.25, 0.33, 1024),
    "t": (0.375, 0.33, 1024),
    "s": (0.5, 0.33, 1024),
    "m": (0.75, 0.67, 768),
    "l": (1.0, 1.0, 512),
}
BASE_CHANNELS = (64, 128, 256, 512, 1024)
BASE_DEPTHS = (3, 6, 6, 3)  # C2f repeats in the backbone stages P2..P5
NECK_DEPTH = 3
NUM_BOX = 4  # ltrb distances from the cell centre, in stride units


def _channels(c: int, width: float, cap: int) -> int:
    """Scale a channel count and round up to a multiple of 8 (friendly to vectorised kernels)."""
    return max(8, int(math.ceil(min(c, cap) * width / 8) * 8))


def _depth(n: int, depth: float) -> int:
    return max(1, round(n * depth))


class Conv(nn.Module):
    """Conv2d (no bias) + BatchNorm + SiLU: the unit every YOLO since v4 is built of."""

    def __init__(self, c_in: int, c_out: int, k: int = 1, s: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool = True) -> None:
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """CSP block with two convolutions and n bottlenecks whose outputs are all concatenated."""

    def __init__(self, c_in: int, c_out: int, n: int = 1, shortcut: bool = False) -> None:
        super().__init__()
        self.c = c_out // 2
        self.cv1 = Conv(c_in, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c_out, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        for block in self.m:
            y.append(block(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling (fast): three chained 5x5 max-pools, concatenated."""

    def __init__(self, c_in: int, c_out: int, k: int = 5) -> None:
        super().__init__()
        hidden = c_in // 2
        self.cv1 = Conv(c_in, hidden, 1)
        self.cv2 = Conv(hidden * 4, c_out, 1)
        self.pool = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat((x, y1, y2, self.pool(y2)), 1))


def _prediction_bias(branch: nn.Module) -> torch.Tensor:
    """The bias of the 1x1 prediction conv that ends a head branch (an nn.Sequential, built by
    DetectHead; nn.ModuleList yields its items as plain nn.Module)."""
    last = branch[-1] if isinstance(branch, nn.Sequential) else None
    if not isinstance(last, nn.Conv2d) or last.bias is None:
        raise TypeError(f"a detection head branch must end with a biased Conv2d, not {type(last).__name__}")
    return last.bias.data


class DetectHead(nn.Module):
    """Anchor-free decoupled head: a box branch and an objectness+class branch per level."""

    def __init__(self, channels: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        self.nc = num_classes
        c_box = max(16, channels[0] // 4, NUM_BOX * 4)
        c_cls = max(channels[0], min(num_classes, 100))
        self.box = nn.ModuleList(
            nn.Sequential(Conv(c, c_box, 3), Conv(c_box, c_box, 3), nn.Conv2d(c_box, NUM_BOX, 1)) for c in channels
        )
        self.cls = nn.ModuleList(
            nn.Sequential(Conv(c, c_cls, 3), Conv(c_cls, c_cls, 3), nn.Conv2d(c_cls, 1 + num_classes, 1))
            for c in channels
        )

    def init_biases(self, imgsz: int = 640) -> None:
        """Start with low objectness/class probabilities (as YOLO does) so early losses are sane."""
        for branch, stride in zip(self.cls, STRIDES):
            bias = _prediction_bias(branch)
            cells = (imgsz / stride) ** 2
            bias[0] = math.log(8 / cells)  # about 8 objects per image
            bias[1:] = math.log(5 / max(self.nc, 1) / cells)
        for branch in self.box:
            _prediction_bias(branch).fill_(1.0)  # softplus(1) ~ 1.3 strides: small boxes at first

    def forward(self, feats: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.cat((b(x), c(x)), 1) for x, b, c in zip(feats, self.box, self.cls)]


class YOLO(nn.Module):
    """Backbone (Conv + C2f stages, SPPF), FPN/PAN neck, three-level detect head."""

    def __init__(self, size: str = "n", num_classes: int = 80) -> None:
        super().__init__()
        if size not in SIZE_SCALES:
            raise ValueError(f"unknown size {size!r}; valid: {', '.join(SIZE_SCALES)}")
        width, depth, cap = SIZE_SCALES[size]
        c0, c1, c2, c3, c4 = (_channels(c, width, cap) for c in BASE_CHANNELS)
        d1, d2, d3, d4 = (_depth(n, depth) for n in BASE_DEPTHS)
        dn = _depth(NECK_DEPTH, depth)
        self.size, self.num_classes, self.strides = size, num_classes, STRIDES
        self.stem = Conv(3, c0, 3, 2)
        self.stage2 = nn.Sequential(Conv(c0, c1, 3, 2), C2f(c1, c1, d1, True))
        self.stage3 = nn.Sequential(Conv(c1, c2, 3, 2), C2f(c2, c2, d2, True))
        self.stage4 = nn.Sequential(Conv(c2, c3, 3, 2), C2f(c3, c3, d3, True))
        self.stage5 = nn.Sequential(Conv(c3, c4, 3, 2), C2f(c4, c4, d4, True), SPPF(c4, c4))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.top_down4 = C2f(c4 + c3, c3, dn)
        self.top_down3 = C2f(c3 + c2, c2, dn)
        self.down3 = Conv(c2, c2, 3, 2)
        self.bottom_up4 = C2f(c2 + c3, c3, dn)
        self.down4 = Conv(c3, c3, 3, 2)
        self.bottom_up5 = C2f(c3 + c4, c4, dn)
        self.head = DetectHead((c2, c3, c4), num_classes)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Raw outputs per level: [B, 4 + 1 + nc, H/s, W/s] for s in 8, 16, 32."""
        p3 = self.stage3(self.stage2(self.stem(x)))
        p4 = self.stage4(p3)
        p5 = self.stage5(p4)
        n4 = self.top_down4(torch.cat((self.up(p5), p4), 1))
        o3 = self.top_down3(torch.cat((self.up(n4), p3), 1))
        o4 = self.bottom_up4(torch.cat((self.down3(o3), n4), 1))
        o5 = self.bottom_up5(torch.cat((self.down4(o4), p5), 1))
        return self.head([o3, o4, o5])


def build_yolo(size: str = "n", num_classes: int = 80, seed: int = 0) -> YOLO:
    """A detector whose initial weights depend only on (size, num_classes, seed).

    The global RNG is forked so building a model never shifts the random stream of the caller
    (a capture that builds a fresh model per repeat must not change its data order by doing so).
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = YOLO(size, num_classes)
        model.head.init_biases()
    return model


def make_anchors(outputs: list[torch.Tensor], strides: tuple[int, ...] = STRIDES) -> tuple[torch.Tensor, torch.Tensor]:
    """Cell centres in input pixels [A, 2] and each cell's stride [A, 1], levels concatenated."""
    points, stride_col = [], []
    for out, s in zip(outputs, strides):
        h, w = out.shape[-2:]
        ys = (torch.arange(h, device=out.device, dtype=torch.float32) + 0.5) * s
        xs = (torch.arange(w, device=out.device, dtype=torch.float32) + 0.5) * s
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        points.append(torch.stack((gx, gy), -1).reshape(-1, 2))
        stride_col.append(torch.full((h * w, 1), float(s), device=out.device))
    return torch.cat(points), torch.cat(stride_col)


def flatten_outputs(outputs: list[torch.Tensor]) -> torch.Tensor:
    """Per-level [B, C, H, W] maps -> one [B, A, C] tensor (A = all cells of all levels)."""
    return torch.cat([o.flatten(2) for o in outputs], 2).transpose(1, 2)


def distances_to_boxes(ltrb: torch.Tensor, points: torch.Tensor, stride: torch.Tensor) -> torch.Tensor:
    """Raw ltrb logits -> xyxy pixel boxes; softplus keeps distances positive without exp's blow-up."""
    dist = nn.functional.softplus(ltrb.float()) * stride
    return torch.cat((points - dist[..., :2], points + dist[..., 2:]), -1)


def decode_outputs(outputs: list[torch.Tensor], strides: tuple[int, ...] = STRIDES) -> torch.Tensor:
    """Raw head outputs -> [B, N, 4 + 1 + nc]: xyxy boxes in input pixels, objectness and class
    probabilities (sigmoids). Computed in float32 whatever the model's dtype."""
    flat = flatten_outputs(outputs).float()
    points, stride = make_anchors(outputs, strides)
    boxes = distances_to_boxes(flat[..., :NUM_BOX], points, stride)
    return torch.cat((boxes, flat[..., NUM_BOX:].sigmoid()), -1)
