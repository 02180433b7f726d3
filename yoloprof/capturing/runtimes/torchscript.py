"""TorchScript: the export form traced on the example (`torch.jit.trace`), frozen
(`torch.jit.freeze`: parameters become constants, conv + batch norm folded) and, where it helps,
`torch.jit.optimize_for_inference` (OPTIMIZE). Float16 / bfloat16 trace under `torch.autocast`,
so the graph holds autocast's casts. Two calls on the example run during setup: TorchScript's
profiling executor specialises the graph on them, so the timed calls meet the optimised graph."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import torch

from yoloprof.capturing.runtimes.flat import Flattened

AUTOCAST = {"float16": torch.float16, "bfloat16": torch.bfloat16}  # precision -> autocast dtype
# torch.jit.optimize_for_inference per device type: on CPU it swaps convolutions for MKLDNN ones,
# no faster on YOLOv8n at 320, 1 thread (two runs of bench/bench_runtimes.py: 0.914 and 0.882 of eager,
# against 0.927 and 0.862 without), so it is left off there; on CUDA it folds more (conv + add + relu)
OPTIMIZE = {"cpu": False, "cuda": True}
PROFILING_RUNS = 2  # calls the profiling executor needs before it runs the optimised graph


def _autocast(device: torch.device, precision: str) -> Any:
    dtype = AUTOCAST.get(precision)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


def load(flat: Flattened, example: torch.Tensor, device: torch.device, precision: str
         ) -> tuple[Callable[[torch.Tensor], Any], str | None]:
    with torch.no_grad(), _autocast(device, precision), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit's deprecation and tracer warnings: the outputs are checked instead
        traced = torch.jit.trace(flat, example, check_trace=False)
        module = torch.jit.freeze(traced)
        if OPTIMIZE.get(device.type, False):
            module = torch.jit.optimize_for_inference(module)
        for _ in range(PROFILING_RUNS):
            module(example)

    def run(x: torch.Tensor) -> Any:
        with torch.no_grad():
            return module(x)

    return run, None
