"""`--batch -1`: the largest batch that fits in about 70% of the device's memory (CUDA only).

Measure the allocator peak of one step at a few small batch sizes, fit peak = a + b * batch, and
solve for the target fraction; an out-of-memory at a probe size stops the probing early. The same
approach as Ultralytics' autobatch, with the fit and the probes kept visible in the warnings.
"""

from __future__ import annotations

import dataclasses

from yoloprof.capture.device import DeviceInfo
from yoloprof.config.settings import CaptureSettings
from yoloprof.errors import UsageError

TARGET_FRACTION = 0.70
PROBES = (1, 2, 4, 8, 16)


def _peak_of_one_step(settings: CaptureSettings, device: DeviceInfo, batch: int) -> float:
    import torch

    from yoloprof.capture.build import build_infer_context, build_train_context, load_infer_sources
    from yoloprof.capture.steps import infer_call, no_phases, train_step
    from yoloprof.workloads.data import SyntheticDetection

    probe = dataclasses.replace(settings, batch=batch, workers=0)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device.torch_device)
    amp = settings.autocast  # settings arrive resolved: precision is the effective dtype
    if settings.mode == "train":
        data = SyntheticDetection(batch, settings.imgsz, settings.num_classes, settings.seed)
        train_step(build_train_context(probe, device, data, amp), no_phases())
    else:
        infer_call(build_infer_context(probe, device, load_infer_sources(probe)[0], amp), no_phases())
    torch.cuda.synchronize(device.torch_device)
    return float(torch.cuda.max_memory_allocated(device.torch_device))


def largest_batch(settings: CaptureSettings, device: DeviceInfo) -> int:
    import numpy as np
    import torch

    total = torch.cuda.get_device_properties(device.torch_device).total_memory
    sizes: list[int] = []
    peaks: list[float] = []
    for batch in PROBES:
        try:
            peaks.append(_peak_of_one_step(settings, device, batch))
            sizes.append(batch)
        except torch.cuda.OutOfMemoryError:
            break
    torch.cuda.empty_cache()
    if not sizes:
        raise UsageError("--batch -1: even a batch of 1 does not fit on the device")
    if len(sizes) == 1:
        return 1
    slope, intercept = np.polyfit(np.asarray(sizes, float), np.asarray(peaks, float), 1)
    if slope <= 0:
        return sizes[-1]
    return max(1, int((TARGET_FRACTION * total - intercept) / slope))

