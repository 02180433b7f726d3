"""A model that is slow on its first SLOW_CALLS forward calls in each process (as lazy
initialisation, caches or autotuning make real models), then steady, and that records the
duration of every call by its own clock (`DURATIONS`), the tests' outer reference.

Its work is a sleep: it costs no CPU, and a sleeping thread is woken promptly on a busy machine
where a busy-wait is preempted at the end of its time slice. The slow-down (100 ms on 10 ms) is
far above the scheduling delays a loaded 2-core machine adds to a short step (10-30 ms were seen
at a load average of 11), so the slow calls stay recognisable there; and a 10 ms call keeps the
few milliseconds a preemption costs, when it falls between the capture's clock marks and the
model's own, at a few percent of the step."""

from __future__ import annotations

import time

import torch

SLOW_CALLS = 6
STEADY_MS = 10.0
EXTRA_MS = 100.0  # added to each of the first SLOW_CALLS calls
DURATIONS: list[float] = []  # ms of every forward call in this process, by the model's own clock


def reset() -> None:
    """As in a fresh process: the next SLOW_CALLS calls are slow."""
    DURATIONS.clear()


def spend_slow_calls() -> None:
    """As in a process that already made its slow calls (not timed: recorded as NaN)."""
    DURATIONS.extend([float("nan")] * max(0, SLOW_CALLS - len(DURATIONS)))


class SlowStart(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        begin = time.perf_counter()
        time.sleep((STEADY_MS + (EXTRA_MS if len(DURATIONS) < SLOW_CALLS else 0.0)) / 1e3)
        out = x.float().mean(dim=(1, 2, 3)) * self.scale
        DURATIONS.append((time.perf_counter() - begin) * 1e3)
        return out
