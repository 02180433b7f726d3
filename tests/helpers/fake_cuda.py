"""A fake of the parts of torch.cuda the capture calls, which behaves like torch where it matters,
so that the CUDA branches' logic runs on CPU-only machines.

What it keeps, as torch does:
- several devices (two by default), a current device (`current_device`, `set_device`, the
  `device(d)` context) and one current stream per device (`current_stream(device)`);
- a simulated timeline per device: `run(ms)` enqueues work of `ms` on the current device (or
  `device=`); an event recorded on a stream stamps that device's timeline and belongs to it;
- completion: device work is only known to be done once the host waited for it
  (`synchronize(device)`, `Event.synchronize()`, `Stream.synchronize()`); `Event.elapsed_time`
  raises, as torch does, when either event was not recorded, is on another device, or has not
  completed (torch: "device not ready");
- memory statistics per device (allocated, reserved, their peaks, `mem_get_info`);
- device arguments checked like torch's `_get_device_index`: a CPU device is refused
  (ValueError "Expected a cuda device"), an index past the device count too.

Tests state the durations and sizes, so the expected figures are known independently of the code
under test. Either pass it as `DeviceInfo(torch.device("cuda", 1), "cuda", api=fake)`, or
`fake.install(monkeypatch)` to put it in place of `torch.cuda`'s functions (the user loop and
`@timeit` call torch.cuda directly).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Iterator

MIB = 2**20


class FakeOutOfMemoryError(RuntimeError):
    pass


@dataclass
class FakeDevice:
    index: int
    total_memory: int
    name: str = "NVIDIA A100-SXM4-40GB"
    capability: tuple[int, int] = (8, 0)
    sm_count: int = 108
    gpu_ms: float = 0.0  # end of the last enqueued work
    done_ms: float = 0.0  # how far the host knows the work has completed
    allocated: int = 0
    reserved: int = 0
    peak: int = 0
    reserved_peak: int = 0
    other_processes: int = 0  # memory other processes hold on this device (mem_get_info's free)


class FakeStream:
    def __init__(self, cuda: "FakeCuda", index: int) -> None:
        self.cuda = cuda
        self.device_index = index

    @property
    def device(self) -> Any:
        import torch

        return torch.device("cuda", self.device_index)

    def synchronize(self) -> None:
        dev = self.cuda.devices[self.device_index]
        dev.done_ms = dev.gpu_ms


class FakeCuda:
    OutOfMemoryError = FakeOutOfMemoryError

    def __init__(self, count: int = 2, total_memory: int = 16 * 1024 * MIB) -> None:
        self.devices = [FakeDevice(i, total_memory) for i in range(count)]
        self.streams = [FakeStream(self, i) for i in range(count)]
        self.current = 0
        self.initialized = False
        self.device_syncs: list[int] = []  # the device index of every synchronize call
        self.event_syncs = 0
        self.calls: list[str] = []

    # compatibility with single-device tests: the figures of the current device -------------
    @property
    def total_memory(self) -> int:
        return self.devices[self.current].total_memory

    @total_memory.setter
    def total_memory(self, value: int) -> None:
        for dev in self.devices:
            dev.total_memory = value

    # the simulated GPU ---------------------------------------------------------------------
    def _dev(self, device: Any = None) -> FakeDevice:
        return self.devices[self._index(device)]

    def run(self, ms: float, alloc: int = 0, device: Any = None) -> None:
        """Enqueue `ms` of work on the current device (or `device`) holding `alloc` bytes meanwhile."""
        self.alloc(alloc, device)
        self._dev(device).gpu_ms += ms
        self.free(alloc, device)

    def alloc(self, nbytes: int, device: Any = None) -> None:
        dev = self._dev(device)
        self.initialized = True
        if dev.allocated + nbytes + dev.other_processes > dev.total_memory:
            raise FakeOutOfMemoryError(f"CUDA out of memory on device {dev.index}")
        dev.allocated += nbytes
        dev.reserved = max(dev.reserved, dev.allocated)  # the caching allocator keeps what it got
        dev.peak = max(dev.peak, dev.allocated)
        dev.reserved_peak = max(dev.reserved_peak, dev.reserved)

    def free(self, nbytes: int, device: Any = None) -> None:
        self._dev(device).allocated -= nbytes

    # device arguments, as torch.cuda._utils._get_device_index ---------------------------------
    def _index(self, device: Any = None) -> int:
        import torch

        if device is None:
            return self.current
        if isinstance(device, str):
            device = torch.device(device)
        if isinstance(device, torch.device):
            if device.type != "cuda":
                raise ValueError(f"Expected a cuda device, but got: {device}")
            index = self.current if device.index is None else device.index
        elif isinstance(device, int):
            index = device
        else:
            raise ValueError(f"Expected a cuda device, but got: {device!r}")
        if not 0 <= index < len(self.devices):
            raise RuntimeError("CUDA error: invalid device ordinal")
        return index

    # the torch.cuda surface ------------------------------------------------------------------
    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return self.initialized

    def device_count(self) -> int:
        return len(self.devices)

    def current_device(self) -> int:
        return self.current

    def set_device(self, device: Any) -> None:
        self.initialized = True
        self.current = self._index(device)

    @contextlib.contextmanager
    def device(self, device: Any) -> Iterator[None]:
        index = self._index(device)
        before, self.current = self.current, index
        self.initialized = True
        try:
            yield
        finally:
            self.current = before

    def current_stream(self, device: Any = None) -> FakeStream:
        self.initialized = True
        return self.streams[self._index(device)]

    def Event(self, enable_timing: bool = False) -> "FakeEvent":  # noqa: N802 - torch's name
        return FakeEvent(self, enable_timing)

    def synchronize(self, device: Any = None) -> None:
        index = self._index(device)
        self.device_syncs.append(index)
        dev = self.devices[index]
        dev.done_ms = dev.gpu_ms

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        dev = self._dev(device)
        self.calls.append(f"reset_peak:{dev.index}")
        dev.peak, dev.reserved_peak = dev.allocated, dev.reserved

    def memory_allocated(self, device: Any = None) -> int:
        return self._dev(device).allocated

    def memory_reserved(self, device: Any = None) -> int:
        return self._dev(device).reserved

    def max_memory_allocated(self, device: Any = None) -> int:
        return self._dev(device).peak

    def max_memory_reserved(self, device: Any = None) -> int:
        return self._dev(device).reserved_peak

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        dev = self._dev(device)
        return dev.total_memory - dev.reserved - dev.other_processes, dev.total_memory

    def empty_cache(self) -> None:
        self.calls.append("empty_cache")  # the caching allocator releases its free blocks on every device
        for dev in self.devices:
            dev.reserved = dev.allocated

    def get_device_properties(self, device: Any = None) -> Any:
        dev = self._dev(device)
        return SimpleNamespace(total_memory=dev.total_memory, name=dev.name, major=dev.capability[0],
                               minor=dev.capability[1], multi_processor_count=dev.sm_count)

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return self._dev(device).capability

    def get_device_name(self, device: Any = None) -> str:
        return self._dev(device).name

    def install(self, monkeypatch: Any) -> "FakeCuda":
        """Put this fake in place of torch.cuda's functions for one test."""
        import torch

        for name in ("is_available", "is_initialized", "device_count", "current_device", "set_device",
                     "device", "current_stream", "Event", "synchronize", "reset_peak_memory_stats",
                     "memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved",
                     "mem_get_info", "empty_cache", "get_device_properties", "get_device_capability",
                     "get_device_name"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))
        monkeypatch.setattr(torch.cuda, "OutOfMemoryError", FakeOutOfMemoryError)
        return self


@dataclass
class FakeEvent:
    """Stamps the timeline of the device of the stream it is recorded on."""

    cuda: FakeCuda
    enable_timing: bool = False
    device_index: int | None = None
    t: float | None = None
    records: list[int] = field(default_factory=list)  # device index of every record

    def record(self, stream: FakeStream | None = None) -> None:
        stream = stream if stream is not None else self.cuda.current_stream()
        if self.device_index is not None and self.device_index != stream.device_index:
            raise RuntimeError("Event device does not match recording stream's device")
        self.device_index = stream.device_index
        self.t = self.cuda.devices[stream.device_index].gpu_ms
        self.records.append(stream.device_index)

    def query(self) -> bool:
        return self.t is None or self.t <= self.cuda.devices[self.device_index].done_ms

    def synchronize(self) -> None:
        self.cuda.event_syncs += 1
        if self.t is not None:
            dev = self.cuda.devices[self.device_index]
            dev.done_ms = max(dev.done_ms, self.t)

    def elapsed_time(self, end: "FakeEvent") -> float:
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self.t is None or end.t is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self.device_index != end.device_index:
            raise RuntimeError("Both events must be recorded on the same device")
        if not (self.query() and end.query()):
            raise RuntimeError("CUDA error: device not ready")
        return end.t - self.t
