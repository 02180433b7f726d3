"""Inference runtimes: the family's network moved to TorchScript, ONNX Runtime or OpenVINO
(DESIGN.md section 3, "Changes as settings"). Only the network moves; the family's pre- and
post-process stay and are timed as with eager PyTorch.

Interface (docs/CONTRACTS.md "Runtimes"):

    load_runtime(level, network, example, device, precision) -> RuntimeNetwork

`level` is one of `config.knobs.RUNTIMES`; `network` the family's network in its export form
(a module whose forward takes the pre-processed input tensor and returns tensors); `example` one
input of the shape that will run. A level that cannot apply raises `RuntimeNotApplicable` with one
line saying why (an op the exporter cannot handle, a missing extra).

`family_runtime(adapter, model, level, inputs, device, precision)` does the same for a family's
model: it takes the adapter's export form (`Adapter.export_network`, else the model), and its
`forward` takes what the adapter's `preprocess` returned and returns what its `postprocess` reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from yoloprof.config.knobs import RUNTIMES
from yoloprof.errors import RuntimeNotApplicable, UsageError, one_line

__all__ = ["RuntimeNetwork", "RuntimeNotApplicable", "export_form", "family_runtime", "load_runtime"]


@dataclass(frozen=True)
class RuntimeNetwork:
    """A network ready to run: `forward(x)` returns torch tensors on `x`'s device in the export
    form's structure; `setup_s` the wall time of export + conversion + session creation; `note`
    a line for the profile (e.g. which exporter ran), or None."""

    forward: Callable[[Any], Any]
    setup_s: float
    note: str | None = None


def _loaders() -> dict[str, Callable[..., tuple[Callable[[Any], Any], str | None]]]:
    from yoloprof.capturing.runtimes import onnx_runtime, openvino_runtime, torchscript

    return {"torchscript": torchscript.load, "onnxruntime": onnx_runtime.load, "openvino": openvino_runtime.load}


def load_runtime(level: str, network: Any, example: Any, device: Any, precision: str) -> RuntimeNetwork:
    """`network` (export form, put in eval mode) on the runtime `level`, specialised to `example`'s
    shape (a call with another shape is a RuntimeNotApplicable); `precision` one of the settings'
    precisions ("auto" = float32 on CPU, float16 on CUDA, as the settings resolve it)."""
    import torch

    from yoloprof.capturing.runtimes.flat import Flattened
    from yoloprof.config.capture_settings import effective_precision
    from yoloprof.config.device_spec import DeviceSpec

    if level not in RUNTIMES:
        raise UsageError(f"runtime {level!r}: expected one of {', '.join(RUNTIMES)}")
    if level == "eager":
        raise UsageError("runtime 'eager' runs the model itself: there is nothing to load")
    device = torch.device(device)
    precision = effective_precision(precision, DeviceSpec(device.type, device.index))
    start = time.perf_counter()
    network.eval()
    try:
        with torch.no_grad():
            flat = Flattened(network, example).eval()
        run, note = _loaders()[level](flat, example, device, precision)
    except RuntimeNotApplicable:
        raise
    except Exception as exc:  # noqa: BLE001 - an exporter's failure is the one line of a level that cannot apply
        raise RuntimeNotApplicable(f"runtime {level}: {type(exc).__name__}: {first_line(exc)}") from None
    setup_s = time.perf_counter() - start
    shape = tuple(example.shape)

    def forward(x: Any) -> Any:
        if tuple(x.shape) != shape:
            raise RuntimeNotApplicable(f"runtime {level} was built for input shape {list(shape)}, got {list(x.shape)}")
        return flat.rebuild(run(x))

    return RuntimeNetwork(forward, setup_s, note)


def family_runtime(adapter: Any, model: Any, level: str, inputs: Any, device: Any, precision: str) -> RuntimeNetwork:
    """The family's network on `level`: `forward(inputs)` takes the adapter's pre-processed
    `inputs` (the first of `preprocess`'s pair) and returns what its `postprocess` reads as `raw`;
    `setup_s` includes taking the export form."""
    start = time.perf_counter()
    form = export_form(adapter, model)
    loaded = load_runtime(level, form.network, form.tensor(inputs), device, precision)

    def forward(x: Any) -> Any:
        return form.raw(loaded.forward(form.tensor(x)), x)

    return RuntimeNetwork(forward, time.perf_counter() - start, loaded.note)


def export_form(adapter: Any, model: Any) -> Any:
    """The family's network as a runtime takes it: `Adapter.export_network(model)`, or the model
    itself (`ExportForm(model)`) for an adapter without one (workloads/family_api.py)."""
    from yoloprof.workloads.family_api import ExportForm

    export = getattr(adapter, "export_network", None)
    return export(model) if export is not None else ExportForm(model)


def first_line(exc: BaseException) -> str:
    """An exception's message as one line: its first non-blank line (exporters write pages)."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return one_line(lines[0]) if lines else type(exc).__name__
