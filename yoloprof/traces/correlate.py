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
    host_time: np.ndarray    # CPU time of the launch (own GPU start for orphans)
    launch_mask: np.ndarray  # over all events: kernel-launch API calls
    sync_mask: np.ndarray
    malloc_mask: np.ndarray
    launches_without_work: np.ndarray  # event indices of launch calls with no device activity

    @property
    def orphan(self) -> np.ndarray:
        return self.host_idx < 0


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
    host_time = np.where(matched, ev.ts[np.clip(host_idx, 0, None)], ev.ts[dev])
    launch = host_api & ev.names_matching(_LAUNCH)
    served = np.zeros(len(ev), bool)
    served[host_idx[host_idx >= 0]] = True
    return Join(device_idx=dev, host_idx=host_idx, host_time=host_time, launch_mask=launch,
                sync_mask=host_api & ev.names_matching(SYNC_APIS_PATTERN),
                malloc_mask=host_api & ev.names_matching(MALLOC_APIS_PATTERN),
                launches_without_work=np.flatnonzero(launch & ~served))
