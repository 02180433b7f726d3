"""ONNX Runtime: the ONNX export (onnx_export.py) in an `InferenceSession`: the CPU execution
provider for a CPU device, the CUDA provider for a CUDA device (not applicable where the installed
onnxruntime lacks it: `onnxruntime-gpu` has it). Intra-op threads = torch's intra-op threads at
setup (the `threads` setting), one inter-op thread. Inputs and outputs are bound to torch tensors
on the device (I/O binding: no copy through numpy; outputs are fresh tensors each call).
Float32 only: ONNX Runtime runs the graph in the precision it was exported in."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from yoloprof.capturing.runtimes.packages import require
from yoloprof.capturing.runtimes.flat import Flattened
from yoloprof.capturing.runtimes.onnx_export import INPUT, exported
from yoloprof.errors import RuntimeNotApplicable

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}  # torch device type -> provider


@functools.cache
def _numpy_dtype(dtype: torch.dtype) -> Any:
    """Asked on every timed call (binding input and outputs): a tensor made once per dtype."""
    return torch.empty(0, dtype=dtype).numpy().dtype


def load(flat: Flattened, example: torch.Tensor, device: torch.device, precision: str
         ) -> tuple[Callable[[torch.Tensor], Any], str | None]:
    ort = require("onnxruntime", "onnxruntime")
    if precision != "float32":
        raise RuntimeNotApplicable(f"runtime onnxruntime: precision {precision}: it runs the float32 export "
                                   "(use precision=float32)")
    provider = PROVIDERS.get(device.type)
    if provider is None or provider not in ort.get_available_providers():
        raise RuntimeNotApplicable(f"runtime onnxruntime: no {provider or device.type} execution provider in the "
                                   "installed onnxruntime (CUDA needs onnxruntime-gpu)")
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    chosen: list[Any] = [(provider, {"device_id": device.index or 0})] if device.type == "cuda" else [provider]
    with exported(flat, example, "onnxruntime") as path:
        session = ort.InferenceSession(str(path), options, providers=chosen)
    names = [o.name for o in session.get_outputs()]
    where = ("cuda" if device.type == "cuda" else "cpu", device.index or 0)

    def run(x: torch.Tensor) -> list[torch.Tensor]:
        x = x.contiguous()
        if device.type == "cuda":
            torch.cuda.current_stream(device).synchronize()  # the input is written before ORT reads it
        binding = session.io_binding()
        binding.bind_input(INPUT, *where, _numpy_dtype(x.dtype), tuple(x.shape), x.data_ptr())
        outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in flat.outputs]
        for name, out in zip(names, outputs):
            binding.bind_output(name, *where, _numpy_dtype(out.dtype), tuple(out.shape), out.data_ptr())
        session.run_with_iobinding(binding)
        return outputs

    run(example)  # the first call allocates ORT's arenas: setup, not a timed step
    return run, f"onnxruntime {ort.__version__}, {provider}, {options.intra_op_num_threads} threads"
