"""OpenVINO: the ONNX export (onnx_export.py) read by `openvino.Core.read_model` (its ONNX
frontend: no conversion tool, no telemetry) and compiled for the plugin of the torch device (CPU;
Intel GPUs as torch's `xpu` on OpenVINO's GPU plugin; nothing for CUDA). The `precision` setting
is the plugin's INFERENCE_PRECISION_HINT (PRECISION_HINT): the CPU plugin's own default is bf16
on CPUs that have it, which would change the arithmetic behind float32's back; a hint the device
does not list in OPTIMIZATION_CAPABILITIES is not applicable. INFERENCE_NUM_THREADS = torch's
intra-op threads at setup; the LATENCY performance hint (one stream: one request at a time).

`import openvino` imports its conversion tool (`openvino.tools.ovc`), which sends a usage event
to Google Analytics from a forked process unless the user opted out: yoloprof never reaches the
network, so openvino is imported with `openvino_telemetry` unimportable, where OpenVINO falls back
to its own no-op stub (`telemetry_stub`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from yoloprof.capturing.runtimes.packages import require
from yoloprof.capturing.runtimes.flat import Flattened
from yoloprof.capturing.runtimes.onnx_export import exported
from yoloprof.errors import RuntimeNotApplicable

PLUGINS = {"cpu": "CPU", "xpu": "GPU"}  # torch device type -> OpenVINO device plugin
# precision setting -> (INFERENCE_PRECISION_HINT, the OPTIMIZATION_CAPABILITIES entry it needs)
PRECISION_HINT = {"float32": ("f32", "FP32"), "bfloat16": ("bf16", "BF16"), "float16": ("f16", "FP16")}


TELEMETRY = "openvino_telemetry"  # the package openvino's import would send a usage event with


def import_openvino() -> Any:
    """`openvino`, imported without its telemetry (module docstring)."""
    if sys.modules.get("openvino") is not None:
        return sys.modules["openvino"]
    blocked = TELEMETRY not in sys.modules
    if blocked:
        sys.modules[TELEMETRY] = None  # type: ignore[assignment]  # `import` raises ImportError
    try:
        return require("openvino", "openvino")
    finally:
        if blocked:
            sys.modules.pop(TELEMETRY, None)


def load(flat: Flattened, example: torch.Tensor, device: torch.device, precision: str
         ) -> tuple[Callable[[torch.Tensor], Any], str | None]:
    ov = import_openvino()
    plugin = PLUGINS.get(device.type)
    core = ov.Core()
    if plugin is None or plugin not in core.available_devices:
        raise RuntimeNotApplicable(f"runtime openvino: no OpenVINO device plugin for torch device {device} "
                                   f"(available: {', '.join(core.available_devices)})")
    hint, capability = PRECISION_HINT[precision]
    capabilities = core.get_property(plugin, "OPTIMIZATION_CAPABILITIES")
    if capability not in capabilities:
        raise RuntimeNotApplicable(f"runtime openvino: precision {precision}: the {plugin} plugin lacks {capability} "
                                   f"here (it has {', '.join(capabilities)})")
    config = {"INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": torch.get_num_threads(),
              "PERFORMANCE_HINT": "LATENCY"}
    with exported(flat, example, "openvino") as path:
        compiled = core.compile_model(core.read_model(str(path)), plugin, config)
    request = compiled.create_infer_request()
    ports = list(compiled.outputs)

    def run(x: torch.Tensor) -> list[torch.Tensor]:
        result = request.infer({0: x.detach().cpu().numpy()})  # copies out (share_outputs=False)
        return [torch.from_numpy(result[port]).to(device) for port in ports]

    run(example)  # the first inference allocates the plugin's buffers: setup, not a timed step
    return run, f"openvino {ov.__version__.split('-')[0]}, {plugin}, precision hint {hint}, {config['INFERENCE_NUM_THREADS']} threads"
