"""The export to ONNX that ONNX Runtime and OpenVINO both read: `torch.onnx.export` with the
TorchScript-based exporter (`dynamo=False`), to a file in a temporary directory.

Why not the default `dynamo=True` exporter (torch 2.14): on YOLOv8n at 64x64 it took 6.1 s where
the TorchScript exporter took 0.95 s (same outputs within 3e-5), and it failed ("The size of
tensor a (64) must match ...") on a model that had already run at another shape in the process,
which a capture always does; it also needs onnxscript. Both exporters need the onnx package."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from tempfile import TemporaryDirectory

import torch

from yoloprof.capturing.runtimes.flat import Flattened
from yoloprof.capturing.runtimes.packages import require

INPUT = "images"  # the graph's input name
FILE = "network.onnx"


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """File descriptor 1 on the null device: the TorchScript exporter's C++ log prints the whole
    graph to stdout when an op fails to export (torch 2.14 turns that log on whatever `verbose`
    says), where yoloprof's own output goes; the error itself is kept as one line."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def exported(flat: Flattened, example: torch.Tensor, level: str) -> Iterator[Path]:
    """The network exported to an ONNX file that exists inside the `with` (for runtime `level`,
    whose extra is named when the onnx package is missing)."""
    require("onnx", level)
    with TemporaryDirectory(prefix="yoloprof-onnx-") as tmp:
        path = Path(tmp) / FILE
        names = [f"output{i}" for i in range(flat.count)]
        with torch.no_grad(), warnings.catch_warnings(), _quiet_stdout():
            warnings.simplefilter("ignore")  # tracer and deprecation warnings: the outputs are checked instead
            torch.onnx.export(flat, (example,), str(path), dynamo=False, input_names=[INPUT], output_names=names)
        yield path
