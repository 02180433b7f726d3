"""`--batch -1`: the largest batch that fits in about 70% of the device's memory (CUDA only).

Measure the allocator peak of one step at a few small batch sizes, fit peak = a + b * batch, and
solve for the target fraction; an out-of-memory at a probe size stops the probing early. The same
approach as Ultralytics' autobatch, with the fit and the probes kept visible in the warnings.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from yoloprof.capture.device import DeviceInfo
from yoloprof.config.settings import CaptureSettings
from yoloprof.errors import UsageError

TARGET_FRACTION = 0.70
PROBES = (1, 2, 4, 8, 16)


def _peak_of_one_step(settings: CaptureSettings, device: DeviceInfo, batch: int) -> float:
    """The allocator's peak (bytes) over one real step at `batch`."""
    from yoloprof.capture.build import build_infer_context, build_train_context, load_infer_sources
    from yoloprof.capture.steps import infer_call, no_phases, train_step
    from yoloprof.workloads.data import SyntheticDetection

    cuda = device.cuda
    probe = dataclasses.replace(settings, batch=batch, workers=0)
    cuda.empty_cache()
    cuda.reset_peak_memory_stats(device.torch_device)
    amp = settings.autocast  # settings arrive resolved: precision is the effective dtype
    if settings.mode == "train":
        data = SyntheticDetection(batch, settings.imgsz, settings.num_classes, settings.seed)
        train_step(build_train_context(probe, device, data, amp), no_phases())
    else:
        infer_call(build_infer_context(probe, device, load_infer_sources(probe)[0], amp), no_phases())
    cuda.synchronize(device.torch_device)
    return float(cuda.max_memory_allocated(device.torch_device))


def probe_peaks(measure: Callable[[int], float], oom: type[BaseException],
                probes: tuple[int, ...] = PROBES) -> tuple[list[int], list[float]]:
    """(batch sizes, peak bytes) measured in order until the first out-of-memory."""
    sizes: list[int] = []
    peaks: list[float] = []
    for batch in probes:
        try:
            peaks.append(measure(batch))
        except oom:
            break
        sizes.append(batch)
    return sizes, peaks


def fit_batch(sizes: list[int], peaks: list[float], total_bytes: float,
              target: float = TARGET_FRACTION) -> int:
    """The batch whose linear-fit peak (peak = a + b * batch, least squares) is `target` of the
    device memory; the largest probe when memory does not grow with the batch."""
    import numpy as np

    if not sizes:
        raise UsageError("--batch -1: even a batch of 1 does not fit on the device")
    if len(sizes) == 1:
        return 1
    slope, intercept = np.polyfit(np.asarray(sizes, float), np.asarray(peaks, float), 1)
    if slope <= 0:
        return sizes[-1]
    return max(1, int((target * total_bytes - intercept) / slope))


def largest_batch(settings: CaptureSettings, device: DeviceInfo) -> int:
    cuda = device.cuda
    total = cuda.get_device_properties(device.torch_device).total_memory
    sizes, peaks = probe_peaks(lambda b: _peak_of_one_step(settings, device, b), cuda.OutOfMemoryError)
    cuda.empty_cache()
    return fit_batch(sizes, peaks, total)
