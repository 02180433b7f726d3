"""The changes users try on a model, as settings (DESIGN.md section 3, "Changes as settings"):
the levels of each knob, defined once. The table of knobs (what each applies to, how it is applied,
what it costs once) is built around these; runtimes live in `capturing/runtimes/`.

This module imports only the standard library: it sits in the lowest layer with the settings home.
"""

from __future__ import annotations

# torch.compile of the family's network (train and infer); "none" = eager
COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# the memory format of the model and its inputs
MEMORY_FORMATS = ("contiguous", "channels_last")
# what runs the network at inference (the family's pre- and post-process stay): eager PyTorch,
# TorchScript (traced and frozen), ONNX Runtime (torch.onnx export), OpenVINO
RUNTIMES = ("eager", "torchscript", "onnxruntime", "openvino")
# torch.optim's implementation of the family's optimizer
OPTIMIZER_IMPLS = ("default", "foreach", "fused")
