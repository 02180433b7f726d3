"""A user's own training script, as someone who never heard of yoloprof's built-in workloads would
write it: their model, loss, optimizer and loop, profiled with `yoloprof.profile`.

`train(...)` is also the `_target_` of the user-loop sweep test (`task._target_=user_loop.train`).
"""

from __future__ import annotations

import time

import torch
from torch import nn

import yoloprof

SLEEP_FWD_S = 0.02  # the Slow module's forward sleeps this long: a known amount of forward time
SLEEP_BWD_S = 0.03  # ... and its backward this long


class _SlowGrad(torch.autograd.Function):
    """Identity whose backward sleeps: a known amount of backward time inside one module."""

    @staticmethod
    def forward(ctx, x, scale, owner):  # noqa: D102
        ctx.scale, ctx.owner = scale, owner
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        t0 = time.perf_counter()
        time.sleep(SLEEP_BWD_S * ctx.scale)
        ctx.owner.bwd_ms.append((time.perf_counter() - t0) * 1e3)
        return grad, None, None


class Slow(nn.Module):
    """Sleeps `scale` x the known times in its forward and in its backward."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.fwd_ms: list[float] = []  # its own clock around each sleep: the reference
        self.bwd_ms: list[float] = []

    def forward(self, x):
        t0 = time.perf_counter()
        time.sleep(SLEEP_FWD_S * self.scale)
        self.fwd_ms.append((time.perf_counter() - t0) * 1e3)
        return _SlowGrad.apply(x, self.scale, self)


class Net(nn.Module):
    def __init__(self, width: int = 32, slow: float = 0.0) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, width), nn.ReLU(inplace=True), nn.Linear(width, width),
                                  nn.ReLU(inplace=True))
        self.slow = Slow(slow) if slow else nn.Identity()
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        return self.head(self.slow(self.body(x)))


def batches(n: int, batch: int = 8, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n):
        yield torch.randn(batch, 16, generator=gen), torch.randint(0, 4, (batch,), generator=gen)


def train(out_dir: str = "runs/user", width: int = 32, slow: float = 0.0, iterations: int = 200,
          warmup: int = 1, steps: int = 6, repeat: int = 3, trace_steps: int = 1,
          python_hotspots: bool = True, batch: int = 8) -> str:
    """Train `Net` for up to `iterations` batches, profiled; returns the profile path."""
    torch.manual_seed(0)
    model = Net(width, slow)
    train.last_model = model  # the tests read the Slow module's own clock
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with yoloprof.profile(out_dir, model=model, warmup=warmup, steps=steps, repeat=repeat,
                          trace_steps=trace_steps, module_steps=2, python_hotspots=python_hotspots,
                          hotspot_steps=1) as prof:
        for x, y in batches(iterations, batch):
            with prof.phase("forward"):
                loss = loss_fn(model(x), y)
            with prof.phase("backward"):
                loss.backward()
            with prof.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            prof.step(x)
            if prof.done:
                break
    return str(prof.path)
