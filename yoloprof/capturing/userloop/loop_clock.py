"""The clock of `yoloprof.profile` around a user's loop: whole iterations between step boundaries,
and the user's own phases inside them.

Unlike the capture's StepClock (whose phases tile the step), a user's phases may leave gaps and may
repeat, so each phase marks its start and its end. A step is the host time between two step
boundaries, and each boundary synchronises the device once, so a step holds all of its device
work. On a GPU, phase marks are CUDA events recorded on the stream (no synchronise inside the step;
a host clock would only time the launches); on CPU, perf_counter_ns.
"""

from __future__ import annotations

import time
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo, synchronize

_POOL = 32  # CUDA events made up front; more are made only for a step with more phase marks


class LoopClock:
    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self._cuda = device.is_cuda
        self._t0 = 0
        self._marks: list[tuple[str, Any, Any]] = []
        self._pool: list[Any] = []
        self._used = 0
        self._stream: Any = None
        if device.is_cuda:
            self._pool = [device.new_event() for _ in range(_POOL)]

    def start(self) -> None:
        """The step starts now (right after the previous boundary's synchronise)."""
        self._marks.clear()
        self._used = 0
        # the chosen device's current stream, read per step (the user may switch streams)
        self._stream = self.device.stream() if self._cuda else None
        self._t0 = time.perf_counter_ns()

    def now(self) -> Any:
        if not self._cuda:
            return time.perf_counter_ns()
        if self._used == len(self._pool):
            self._pool.append(self.device.new_event())
        event = self._pool[self._used]
        self._used += 1
        event.record(self._stream)
        return event

    def add(self, name: str, begin: Any, end: Any) -> None:
        self._marks.append((name, begin, end))

    def finish(self) -> tuple[float, dict[str, float]]:
        """(step ms, {phase: ms summed over its spans in this step}); synchronises once."""
        synchronize(self.device)
        total = (time.perf_counter_ns() - self._t0) / 1e6
        phases: dict[str, float] = {}
        for name, begin, end in self._marks:
            ms = float(begin.elapsed_time(end)) if self._cuda else (end - begin) / 1e6
            phases[name] = phases.get(name, 0.0) + ms
        return total, phases
