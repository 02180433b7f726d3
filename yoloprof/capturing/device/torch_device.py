"""Devices and clocks: which torch device a `--device` string means, and how to time a step on it.

The clock is where measurement honesty lives. On CPU, `perf_counter_ns` at phase boundaries is
exact because nothing runs asynchronously. On CUDA, host timestamps at phase boundaries would only
measure how long it took to *enqueue* the work, and synchronising at each boundary would change the
step being measured; so phase boundaries are CUDA events recorded on the stream (no sync), and the
only synchronise is at the step boundary, where `finish()` waits for the last event.

Every CUDA call names the chosen device (issue: `--device cuda:1` used to time cuda:0's idle
stream): the capture runs inside `device.scope()` (`torch.cuda.device(index)`: the chosen device is
the current one for the capture, the DataLoader's pin-memory thread included, and the caller's
current device is restored after), events are recorded on `device.stream()` (that device's
current stream, `torch.cuda.current_stream(device)`) and `synchronize` passes the device.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, ContextManager

from yoloprof.config.device_spec import parse_device, spelled
from yoloprof.errors import UsageError


@dataclass(frozen=True)
class DeviceInfo:
    torch_device: Any  # torch.device
    type: str  # "cpu" | "cuda"
    # The CUDA API the capture calls (Event, synchronize, allocator statistics, OutOfMemoryError):
    # None = torch.cuda. Tests pass a fake so the CUDA branches' logic runs on CPU-only machines.
    api: Any = None

    @property
    def is_cuda(self) -> bool:
        return self.type == "cuda"

    @property
    def cuda(self) -> Any:
        if self.api is not None:
            return self.api
        import torch

        return torch.cuda

    @property
    def index(self) -> int | None:
        return self.torch_device.index if self.is_cuda else None

    def stream(self) -> Any:
        """The chosen device's current stream: where the capture's work and its events go."""
        return self.cuda.current_stream(self.torch_device)

    def scope(self) -> ContextManager[Any]:
        """The chosen CUDA device as the current one inside the block (nothing on CPU)."""
        if not self.is_cuda:
            return contextlib.nullcontext()
        return self.cuda.device(self.torch_device)

    def new_event(self) -> Any:
        return self.cuda.Event(enable_timing=True)


def resolve_device(spec: str | int, flag: str = "--device") -> DeviceInfo:
    """The torch device of a `--device` string (parsed by the one parser, config/device_spec.py: `auto`
    is this machine's first GPU or its CPU), checked against the devices this machine has. An
    explicit device is strict; the hint is spelled as `flag` is typed (`--device cpu`, `device=cpu`)."""
    import torch

    parsed = parse_device(spec, flag=flag.lstrip("-"))
    if not parsed.is_cuda:
        return DeviceInfo(torch.device("cpu"), "cpu")
    index = int(parsed.index or 0)
    if not torch.cuda.is_available():
        raise UsageError(f"{spelled(flag, spec)} asks for CUDA device {index}, but this machine has no CUDA "
                         f"device; use {spelled(flag, 'cpu')} (or {spelled(flag, 'auto')}, the default)")
    if index >= torch.cuda.device_count():
        raise UsageError(f"{spelled(flag, spec)}: only {torch.cuda.device_count()} CUDA device(s) present")
    return DeviceInfo(torch.device("cuda", index), "cuda")


def synchronize(device: DeviceInfo) -> None:
    if device.is_cuda:
        device.cuda.synchronize(device.torch_device)


class StepClock:
    """Marks phase boundaries inside one step and returns their durations in ms after `finish()`.

    Usage: `clock.start(); ...; clock.mark("forward"); ...; durations = clock.finish()`.
    The step total is measured from `start()` to the synchronised end.
    """

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self._names: list[str] = []
        self._marks: list[Any] = []
        if device.is_cuda:
            # Events are created once and reused: creating them inside the step would cost time.
            self._pool = [device.new_event() for _ in range(16)]
        self._stream: Any = None

    def start(self) -> None:
        self._stream = self.device.stream() if self.device.is_cuda else None
        self._names.clear()
        self._marks.clear()
        self._marks.append(self._now())

    def mark(self, name: str) -> None:
        self._names.append(name)
        self._marks.append(self._now())

    def _now(self) -> Any:
        if self.device.is_cuda:
            if len(self._marks) == len(self._pool):
                self._pool.append(self.device.new_event())
            event = self._pool[len(self._marks)]
            event.record(self._stream)
            return event
        return time.perf_counter_ns()

    def finish(self) -> tuple[float, dict[str, float]]:
        """(step total ms, {phase: ms}); synchronises the device once."""
        if self.device.is_cuda:
            self._marks[-1].synchronize()
            spans = [a.elapsed_time(b) for a, b in zip(self._marks, self._marks[1:])]
        else:
            spans = [(b - a) / 1e6 for a, b in zip(self._marks, self._marks[1:])]
        phases: dict[str, float] = {}
        for name, ms in zip(self._names, spans):
            phases[name] = phases.get(name, 0.0) + ms
        return float(sum(spans)), phases
