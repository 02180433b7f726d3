"""Small synthetic Kineto traces with known figures: one op launching one kernel per step."""

from __future__ import annotations

import json
from typing import Sequence

T0 = 1_700_000_000_000_000  # epoch microseconds, as Kineto writes them
STEP_US = 1000  # a step starts every STEP_US; each lasts 900 us


def step_trace(kernel_us: Sequence[float], rank: int = 0, first_step: int = 1) -> bytes:
    """ProfilerStep#(first_step + s) with one aten::mm launching one kernel of kernel_us[s]."""
    ev = []
    for s, k_us in enumerate(kernel_us):
        t0 = T0 + s * STEP_US
        ev += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{first_step + s}", "pid": 1,
                "tid": 1, "ts": t0, "dur": 900},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 50},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                "ts": t0 + 20, "dur": 5, "args": {"correlation": s + 1}},
               {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7,
                "ts": t0 + 30, "dur": k_us, "args": {"correlation": s + 1, "device": 0, "stream": 7}}]
    return json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "V100"}],
                       "traceEvents": ev, "distributedInfo": {"rank": rank}}).encode()
