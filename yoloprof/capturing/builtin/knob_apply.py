"""Applying the knobs (config/knobs.py KNOBS) to a trial's model, inputs and optimizer.

Each function takes a level and does what that row of the table says; a level that cannot apply
here raises `NotApplicableError` with one line naming the flag and why, before anything is timed,
so that a planner (`tune`) can skip it. Knobs are applied when a trial's context is built
(capturing/builtin/trial_context.py), so every trial pays its own conversion and `setup_s`
(capturing/passes/one_time.py) can measure it.
"""

from __future__ import annotations

import functools
from typing import Any

from yoloprof.config.knobs import CUDA_ONLY, OPTIMIZER_IMPLS
from yoloprof.errors import NotApplicableError, one_line

CHANNELS_LAST = "channels_last"
# the optimizer_impl levels after the default ("default") are the torch.optim keywords they set to True
IMPL_KEYWORDS = OPTIMIZER_IMPLS[1:]


def not_applicable(flag: str, level: str, why: str) -> NotApplicableError:
    return NotApplicableError(f"{flag} {level}: not applicable: {one_line(why)}")


def check_knobs(settings: Any, is_cuda: bool) -> None:
    """What can be refused before any work (the capture's pre-flight): a compile mode this machine
    cannot run, compile combined with a runtime. Runtimes and optimizers are refused when built."""
    if settings.compile != "none":
        check_compile(settings.compile, is_cuda)
        if settings.mode == "infer" and settings.runtime != "eager":
            raise not_applicable("--compile", settings.compile, f"torch.compile runs eager PyTorch; --runtime "
                                 f"{settings.runtime} runs the network elsewhere (choose one)")


def check_compile(mode: str, is_cuda: bool) -> None:
    """torch.compile needs dynamo on this Python, a C++ compiler for CPU code and Triton for GPU
    code; CUDA-graph modes need a CUDA device."""
    if mode in CUDA_ONLY["compile"] and not is_cuda:
        raise not_applicable("--compile", mode, "this mode captures CUDA graphs and needs a CUDA device")
    why = _compile_missing(is_cuda)
    if why:
        raise not_applicable("--compile", mode, why)


@functools.lru_cache(maxsize=2)
def _compile_missing(is_cuda: bool) -> str | None:
    """Why torch.compile's default backend cannot run here, or None (asked once per process)."""
    import torch._dynamo

    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile (dynamo) is not supported on this Python / platform"
    if is_cuda:
        from torch.utils._triton import has_triton

        return None if has_triton() else "Triton is not installed (inductor generates GPU code with it)"
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001 - any failure to find one means the same to a user
        return f"no working C++ compiler for inductor's CPU code ({type(exc).__name__}); install g++ or set CXX"
    return None


def compile_model(model: Any, mode: str, is_cuda: bool) -> Any:
    """`nn.Module.compile` in place: the module keeps its identity and attributes (a family's
    adapter still finds its head, criterion and wrapper), and every call of it is compiled.
    Compilation itself happens on the first call (its cost lands in `first_call_ms`)."""
    if mode == "none":
        return model
    check_compile(mode, is_cuda)
    model.compile(mode=mode)
    return model


def memory_format_model(model: Any, fmt: str) -> Any:
    import torch

    if fmt != CHANNELS_LAST:
        return model
    return model.to(memory_format=torch.channels_last)


def memory_format_input(x: Any, fmt: str) -> Any:
    """A 4-D image batch in the chosen format; anything else (a family's ImageList, a dict) as it is."""
    import torch

    if fmt == CHANNELS_LAST and isinstance(x, torch.Tensor) and x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x


def rebuild_optimizer(optimizer: Any, impl: str) -> Any:
    """The same torch.optim optimizer over the same parameter groups with `foreach=True` or
    `fused=True` (every other hyper-parameter kept); `default` returns it unchanged (torch's own
    choice: foreach on CUDA, the for-loop on CPU). Built before the first step: no state to move."""
    if impl == "default":
        return optimizer
    import torch

    if not isinstance(optimizer, torch.optim.Optimizer):
        raise not_applicable("--optimizer-impl", impl, f"the optimizer is a {type(optimizer).__name__}, "
                             "not a torch.optim.Optimizer")
    keep = {k: v for k, v in optimizer.defaults.items() if k not in IMPL_KEYWORDS}
    groups = [{k: v for k, v in g.items() if k not in IMPL_KEYWORDS} for g in optimizer.param_groups]
    try:
        return type(optimizer)(groups, **keep, **{impl: True})
    except (TypeError, RuntimeError, ValueError) as exc:
        raise not_applicable("--optimizer-impl", impl,
                             f"torch.optim.{type(optimizer).__name__} here: {exc}") from None
