"""GPU scenarios built from the real fixture traces: each one induces (or removes) a bottleneck
by editing the trace the way the change would show in it, then reads it with the same engine."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}


def load(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def scale_kernels(factor: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Every device activity `factor` times as long, starting where it started: a device that got
    faster (factor < 1) leaves gaps the host does not fill; a slower one (> 1) fills them."""
    def edit(doc: dict[str, Any]) -> dict[str, Any]:
        for e in doc["traceEvents"]:
            if e.get("cat") in DEVICE_CATS and isinstance(e.get("dur"), (int, float)):
                e["dur"] = e["dur"] * factor
        return doc
    return edit


def drop_kernels(pattern: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Remove the device activities whose name contains `pattern` (e.g. the NCCL collectives)."""
    def edit(doc: dict[str, Any]) -> dict[str, Any]:
        doc["traceEvents"] = [e for e in doc["traceEvents"]
                              if not (e.get("cat") in DEVICE_CATS and pattern in str(e.get("name", "")).lower())]
        return doc
    return edit


def profile_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    from yoloprof.traces.to_profile import profile_from_trace_bytes

    return profile_from_trace_bytes(json.dumps(doc).encode(), name)


def launch_bound(v: dict[str, Any]) -> bool:
    return v["bound"] == "host" and bool(v["evidence"].get("launch_bound"))


def host_not_launch(v: dict[str, Any]) -> bool:
    return v["bound"] == "host" and not v["evidence"].get("launch_bound")


def bound_is(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda v: v["bound"] == name


# Each scenario: the fixture, the edit that induces the bottleneck (None: the trace has it as
# recorded), what the verdict must say, the words its reason must name, and the edit that removes
# the bottleneck with what the verdict must say then.
GPU_SCENARIOS: dict[str, dict[str, Any]] = {
    "device-bound": {"fixture": "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "induce": None,
                     "expect": bound_is("device"), "names": ("gemm/conv",),
                     "remove": scale_kernels(0.1), "after": host_not_launch},
    "host-bound": {"fixture": "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "induce": scale_kernels(0.1),
                   "expect": host_not_launch, "names": ("host-bound",),
                   "remove": None, "after": bound_is("device")},
    "launch-bound": {"fixture": "mi250_minitoy_train_ROCm6_2_kineto.json.gz", "induce": None,
                     "expect": launch_bound, "names": ("launch-bound", "Cijk_"),
                     "remove": scale_kernels(200.0), "after": host_not_launch},
    "communication": {"fixture": "trace_diff_test.json.gz", "induce": None,
                      "expect": bound_is("communication"), "names": ("collectives", "ncclKernel"),
                      "remove": drop_kernels("nccl"), "after": bound_is("device")},
}
