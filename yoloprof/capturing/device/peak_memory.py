"""Peak memory per trial, and FLOPs per step (the GPU peak table for MFU is yoloprof/defs/gpus.py).

CUDA: the caching allocator's peaks, reset at the start of every trial so that trials are
independent samples. CPU: the process's peak resident set (VmHWM), which Linux lets us reset by
writing "5" to /proc/self/clear_refs; where that is not possible the peak is process-wide and the
profile says so. The CPU allocator's own peak comes from the trace pass ([memory] events).
"""

from __future__ import annotations

import resource
import sys
from typing import Any, Callable

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.defs.metrics import BYTES_PER_MIB


def proc_status_mib(field: str) -> float | None:
    """A memory line of Linux's /proc/self/status (`VmRSS` resident now, `VmHWM` its peak) in MiB;
    None where the file does not exist (other systems)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None

class PeakMemory:
    """Reset at trial start, read at trial end."""

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self.rss_resettable = self._reset_rss()

    @staticmethod
    def _reset_rss() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            return True
        except OSError:
            return False

    def reset(self) -> None:
        self._reset_rss()
        if self.device.is_cuda:
            self.device.cuda.reset_peak_memory_stats(self.device.torch_device)

    @staticmethod
    def peak_rss_mb() -> float:
        peak = proc_status_mib("VmHWM")
        if peak is not None:
            return peak
        # ru_maxrss is KiB on Linux, bytes on macOS.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (BYTES_PER_MIB if sys.platform == "darwin" else 1024.0)

    def read(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {"peak_rss_mb": self.peak_rss_mb(), "peak_mem_mb": None,
                                        "peak_reserved_mb": None}
        if self.device.is_cuda:
            cuda, dev = self.device.cuda, self.device.torch_device
            out["peak_mem_mb"] = cuda.max_memory_allocated(dev) / BYTES_PER_MIB
            out["peak_reserved_mb"] = cuda.max_memory_reserved(dev) / BYTES_PER_MIB
        return out


def count_flops(fn: Callable[[], Any]) -> float | None:
    """FLOPs of one call of `fn` (see capturing/device/flop_count.py, which also splits them by dtype)."""
    from yoloprof.capturing.device.flop_count import count_flop_mix

    mix = count_flop_mix(fn)
    return mix.total if mix is not None else None
