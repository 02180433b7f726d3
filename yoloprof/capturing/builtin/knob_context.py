"""The knobs applied to a freshly built trial context (one hook each in
capturing/builtin/trial_context.py): model first (memory format, then compile), then the inputs'
conversion wrapped around the family's own `to_device` / `preprocess` (inside the timed phase, as
a user's code would do it), then the optimizer (training) or the runtime (inference).

A runtime moves only the network: `forward` becomes the runtime's, while the family's pre- and
post-process stay and are timed as with eager PyTorch. The runtimes themselves live in
`capturing/runtimes/` (`load_runtime`), imported only when a runtime other than eager is chosen.
"""

from __future__ import annotations

from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.builtin.knob_apply import (check_knobs, compile_model, memory_format_input,
                                                   memory_format_model, not_applicable, rebuild_optimizer)
from yoloprof.capturing.passes.step_calls import InferContext, TrainContext
from yoloprof.config.capture_settings import CaptureSettings


def apply_model_knobs(settings: CaptureSettings, device: DeviceInfo, model: Any) -> Any:
    """memory_format, then compile (compiling a channels_last model specialises on that layout)."""
    model = memory_format_model(model, settings.memory_format)
    return compile_model(model, settings.compile, device.is_cuda)


def apply_train_knobs(settings: CaptureSettings, device: DeviceInfo, ctx: TrainContext) -> TrainContext:
    apply_model_knobs(settings, device, ctx.model)  # in place: the context's closures hold this module
    fmt = settings.memory_format
    if ctx.to_device is not None and fmt != "contiguous":
        inner = ctx.to_device

        def to_device(images: Any, targets: Any) -> tuple[Any, Any]:
            inputs, targets = inner(images, targets)
            return memory_format_input(inputs, fmt), targets
        ctx.to_device = to_device
    ctx.optimizer = rebuild_optimizer(ctx.optimizer, settings.optimizer_impl)
    return ctx


def apply_infer_knobs(settings: CaptureSettings, device: DeviceInfo, ctx: InferContext, adapter: Any = None
                      ) -> InferContext:
    """`adapter`: the family's (its network's export form for a runtime; None = the model itself)."""
    check_knobs(settings, device.is_cuda)  # compile with a runtime (also the capture's pre-flight)
    apply_model_knobs(settings, device, ctx.model)
    fmt, inner = settings.memory_format, ctx.preprocess
    if fmt != "contiguous":
        def preprocess(images: Any, imgsz: int, dev: Any) -> tuple[Any, Any]:
            x, meta = inner(images, imgsz, dev)
            return memory_format_input(x, fmt), meta
        ctx.preprocess = preprocess
    if settings.runtime != "eager":
        _load_runtime(settings, device, ctx, adapter)
    return ctx


def _load_runtime(settings: CaptureSettings, device: DeviceInfo, ctx: InferContext, adapter: Any) -> None:
    """Move the network to the runtime: converted on one input of the shape that will run (the
    first batch, pre-processed outside the timed calls); its conversion time is the context's
    `setup_s`, its note a warning of the profile."""
    import torch

    from yoloprof.capturing.runtimes import family_runtime
    from yoloprof.errors import RuntimeNotApplicable

    first = [ctx.sources[i % len(ctx.sources)] for i in range(ctx.batch)]  # the first call's inputs
    with torch.inference_mode():
        example, _ = ctx.preprocess(first, ctx.imgsz, ctx.device)
    try:  # the family's network in its export form; its post-process reads what this returns
        rt = family_runtime(adapter, ctx.model, settings.runtime, example, device.torch_device, settings.precision)
    except RuntimeNotApplicable as exc:
        raise not_applicable("--runtime", settings.runtime, str(exc)) from None
    ctx.forward = lambda model, x: rt.forward(x)
    ctx.setup_s = float(rt.setup_s)
    if rt.note:
        import warnings

        warnings.warn(f"--runtime {settings.runtime}: {rt.note}", stacklevel=2)  # once per capture (warn.py)
