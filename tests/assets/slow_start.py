"""A model that is slow on its first SLOW_CALLS forward calls in each process (as lazy
initialisation, caches or autotuning make real models), then steady: every forward busy-waits to
a wall-clock deadline, so its duration does not depend on how the machine schedules it, and
records that duration by its own clock (`DURATIONS`), the tests' outer reference."""

from __future__ import annotations

import time

import torch

SLOW_CALLS = 6
STEADY_MS = 3.0
EXTRA_MS = 30.0  # added to each of the first SLOW_CALLS calls
DURATIONS: list[float] = []  # ms of every forward call in this process, by the model's own clock


def reset() -> None:
    DURATIONS.clear()


def _spin(ms: float) -> None:
    deadline = time.perf_counter() + ms / 1e3
    while time.perf_counter() < deadline:
        pass


class SlowStart(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        begin = time.perf_counter()
        _spin(STEADY_MS + (EXTRA_MS if len(DURATIONS) < SLOW_CALLS else 0.0))
        out = x.float().mean(dim=(1, 2, 3)) * self.scale
        DURATIONS.append((time.perf_counter() - begin) * 1e3)
        return out
