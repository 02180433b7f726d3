"""Launch-to-device-activity join by CUPTI/roctracer `correlation` id.

Why by correlation and not by flow events: every runtime/driver call and every kernel, memcpy
and memset carries it in `args` in all schema versions, while flow events (`ac2g`,
`async_cpu_to_gpu`) changed name and are sometimes dropped. One `cudaGraphLaunch` has one
correlation id shared by all kernels of the graph, so the join is one launch -> many kernels.
Device activity without a matching host call ("orphans", e.g. launched before the profiler
started) keeps its own GPU start time as its time on the host timeline, and is counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from yoloprof.traces.parse import DEVICE_CATS, HOST_API_CATS, Events

# Host API calls that launch kernels (CUDA runtime/driver, HIP). Data, not code: extend here.
KERNEL_LAUNCH_APIS = (
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchKernelEx", "cudaLaunchCooperativeKernel",
    "cudaLaunchCooperativeKernelMultiDevice", "cudaLaunchHostFunc", "cudaGraphLaunch",
    "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuLaunchGrid",
    "cuLaunchGridAsync", "cuGraphLaunch",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel",
    "hipLaunchCooperativeKernel", "hipHccModuleLaunchKernel", "hipGraphLaunch",
    "hipExtLaunchMultiKernelMultiDevice",
)
SYNC_APIS_PATTERN = re.compile(r"^(cuda|cu|hip)(Device|Stream|Event|Ctx)Synchronize$")
MALLOC_APIS_PATTERN = re.compile(r"^(cuda|cu|hip)(Malloc|Free|MemAlloc|MemFree)(Async|Managed|_v2)?$")
_LAUNCH = re.compile("^(" + "|".join(map(re.escape, KERNEL_LAUNCH_APIS)) + r")(_v\d+|_ptsz)?$")


@dataclass
class Join:
    device_idx: np.ndarray   # event indices of kernels, memcpys, memsets
    host_idx: np.ndarray     # matching runtime/driver event per device event, -1 for orphans
    launch_mask: np.ndarray  # over all events: kernel-launch API calls
    sync_mask: np.ndarray
    malloc_mask: np.ndarray
    launches_without_work: np.ndarray  # event indices of launch calls with no device activity

    @property
    def orphan(self) -> np.ndarray:
        return self.host_idx < 0

    @property
    def launch_event(self) -> np.ndarray:
        """Per device event, the event whose start is its time on the host timeline: its launch
        call, or itself for an orphan (its own GPU start time)."""
        return np.where(self.host_idx < 0, self.device_idx, self.host_idx)


# Bits of a name's flags (`_name_flags`): which host API masks of `Join` it belongs to.
_FLAG_RULES = ((1, _LAUNCH), (2, SYNC_APIS_PATTERN), (4, MALLOC_APIS_PATTERN))


def _api_masks(ev: Events, host_api: np.ndarray) -> list[np.ndarray]:
    """(launch, sync, malloc) masks over all events: host API calls whose names match. The
    names are matched once each, and only the host API calls' names are looked up."""
    n_names = len(ev.strings)
    flags = np.zeros(n_names, np.uint8)
    for bit, pattern in _FLAG_RULES:
        flags |= np.fromiter((bit if pattern.search(s) else 0 for s in ev.strings), np.uint8, n_names)
    api = np.flatnonzero(host_api)
    api_flags = flags[ev.name[api]]
    masks = []
    for bit, _ in _FLAG_RULES:
        mask = np.zeros(len(ev), bool)
        mask[api[(api_flags & bit) != 0]] = True
        masks.append(mask)
    return masks


def join(ev: Events) -> Join:
    host_api = ev.is_cat(*HOST_API_CATS)
    host = np.flatnonzero(host_api & (ev.corr >= 0))
    dev = np.flatnonzero(ev.is_cat(*DEVICE_CATS))
    host = host[np.argsort(ev.corr[host], kind="stable")]
    hc = ev.corr[host]
    first = np.concatenate(([True], hc[1:] != hc[:-1])) if len(hc) else np.zeros(0, bool)
    host, hc = host[first], hc[first]
    dc = ev.corr[dev]
    pos = np.clip(np.searchsorted(hc, dc), 0, max(len(hc) - 1, 0))
    matched = (dc >= 0) & (len(hc) > 0) & (hc[pos] == dc if len(hc) else False)
    host_idx = np.where(matched, host[pos] if len(hc) else -1, -1)
    launch, sync, malloc = _api_masks(ev, host_api)
    served = np.zeros(len(ev), bool)
    served[host_idx[host_idx >= 0]] = True
    return Join(device_idx=dev, host_idx=host_idx, launch_mask=launch, sync_mask=sync, malloc_mask=malloc,
                launches_without_work=np.flatnonzero(launch & ~served))
