"""A fake of the parts of torch.cuda the capture calls, so that the CUDA branches' logic (event
clock, allocator peaks reset per trial, --batch -1 probing) runs on CPU-only machines.

The fake keeps a simulated GPU timeline (`run(ms)` enqueues work that takes `ms`) and a simulated
allocator (`alloc`/`free`); tests state the durations and sizes, so the expected figures are known
independently of the code under test. Pass it as `DeviceInfo(torch.device("cpu"), "cuda", api=fake)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

MIB = 2**20


class FakeOutOfMemoryError(RuntimeError):
    pass


@dataclass
class FakeCuda:
    total_memory: int = 16 * 1024 * MIB
    gpu_ms: float = 0.0  # the simulated device clock: end of the last enqueued work
    allocated: int = 0
    peak: int = 0
    reserved_peak: int = 0
    device_syncs: int = 0  # torch.cuda.synchronize calls
    event_syncs: int = 0  # Event.synchronize calls
    calls: list[str] = field(default_factory=list)

    OutOfMemoryError = FakeOutOfMemoryError

    # the simulated GPU ---------------------------------------------------------------------
    def run(self, ms: float, alloc: int = 0) -> None:
        """Enqueue `ms` of device work that holds `alloc` extra bytes while it runs."""
        self.alloc(alloc)
        self.gpu_ms += ms
        self.free(alloc)

    def alloc(self, nbytes: int) -> None:
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)
        self.reserved_peak = max(self.reserved_peak, self.allocated)

    def free(self, nbytes: int) -> None:
        self.allocated -= nbytes

    # the torch.cuda surface the capture uses -----------------------------------------------
    def Event(self, enable_timing: bool = False) -> "FakeEvent":  # noqa: N802 - torch's name
        assert enable_timing
        return FakeEvent(self)

    def synchronize(self, device: Any = None) -> None:
        self.device_syncs += 1

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        self.calls.append("reset_peak")
        self.peak = self.reserved_peak = self.allocated

    def max_memory_allocated(self, device: Any = None) -> int:
        return self.peak

    def max_memory_reserved(self, device: Any = None) -> int:
        return self.reserved_peak

    def empty_cache(self) -> None:
        self.calls.append("empty_cache")

    def get_device_properties(self, device: Any = None) -> Any:
        return SimpleNamespace(total_memory=self.total_memory, name="Fake GPU")


class FakeEvent:
    """Records the simulated GPU time at which all work enqueued so far has finished."""

    def __init__(self, cuda: FakeCuda) -> None:
        self.cuda = cuda
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t = self.cuda.gpu_ms

    def synchronize(self) -> None:
        self.cuda.event_syncs += 1

    def elapsed_time(self, end: "FakeEvent") -> float:
        assert self.t is not None and end.t is not None, "elapsed_time on an unrecorded event"
        return end.t - self.t
