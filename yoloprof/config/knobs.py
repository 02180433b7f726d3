"""The changes users try on a model, as settings (DESIGN.md section 3, "Changes as settings"):
the levels of each knob and the table of knobs, defined once.

One row per knob says what it applies to, how the capture applies it and what it costs once, so a
new knob is one row here, one field in config/capture_settings.py and one function in
capturing/builtin/knob_apply.py. The first level of each knob is its default (the eager, contiguous,
float32 reference the outputs check compares against, with `precision=float32`). Runtimes live in
`capturing/runtimes/`.

This module imports only the standard library: it sits in the lowest layer with the settings home.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# torch.compile of the family's network (train and infer); "none" = eager
COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# the memory format of the model and its inputs
MEMORY_FORMATS = ("contiguous", "channels_last")
# what runs the network at inference (the family's pre- and post-process stay): eager PyTorch,
# TorchScript (traced and frozen), ONNX Runtime (torch.onnx export), OpenVINO
RUNTIMES = ("eager", "torchscript", "onnxruntime", "openvino")
# torch.optim's implementation of the family's optimizer
OPTIMIZER_IMPLS = ("default", "foreach", "fused")

# Levels that need a CUDA device (CUDA graphs); anything else may also be refused where it runs
# (torch.compile needs a C++ compiler on CPU and Triton on a GPU: capturing/builtin/knob_apply.py).
CUDA_ONLY = {"compile": ("reduce-overhead",)}
# The arithmetic of the reference the outputs check compares against (DESIGN.md section 3).
REFERENCE_PRECISION = "float32"


@dataclass(frozen=True)
class Knob:
    """One knob: its setting's name, levels (the first is the default), the modes it applies to,
    what it changes, how the capture applies it, and what it costs once per capture (`setup_s`)."""

    name: str
    levels: tuple[str, ...]
    modes: tuple[str, ...]
    applies_to: str
    how: str
    one_time_cost: str

    @property
    def default(self) -> str:
        return self.levels[0]


KNOBS: tuple[Knob, ...] = (
    Knob("compile", COMPILE_MODES, ("train", "infer"), "the family's network (the module its forward calls)",
         "nn.Module.compile(mode=...) in place, when each trial's model is built",
         "compilation, paid by the first call(s)"),
    Knob("memory_format", MEMORY_FORMATS, ("train", "infer"), "the model's weights and its 4-D inputs",
         "model.to(memory_format=...); inputs converted in to_device / preprocess (timed, as a user would)",
         "the weights' one conversion (small)"),
    Knob("runtime", RUNTIMES, ("infer",), "the network only (the family's pre- and post-process stay)",
         "capturing.runtimes.load_runtime: export/convert the network, run it in the runtime",
         "export and conversion, plus the runtime's first call"),
    Knob("optimizer_impl", OPTIMIZER_IMPLS, ("train",), "the family's torch.optim optimizer",
         "rebuilt as type(opt)(param_groups, **defaults, foreach=True | fused=True)",
         "none beyond the first step"),
)
BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


def changed(values: Mapping[str, object], mode: str) -> dict[str, object]:
    """The knobs of `mode` away from their default in `values` (settings as a mapping)."""
    return {k.name: values[k.name] for k in KNOBS
            if mode in k.modes and k.name in values and values[k.name] != k.default}


def needs_output_check(values: Mapping[str, object], mode: str) -> bool:
    """Whether a capture differs from the eager, contiguous, float32 reference: a knob away from
    its default or a precision other than float32 (settings resolved: `auto` is gone)."""
    return bool(changed(values, mode)) or values.get("precision", REFERENCE_PRECISION) != REFERENCE_PRECISION
