"""The capture's extra sections, measured after the timed trials and the trace, on a fresh context:
model and data facts (always), the per-module breakdown (`--modules`, on by default) and Python
hotspots (`--python-hotspots`). Each runs one unrecorded warm step first (a fresh model's first
step pays for lazy initialisation and allocator growth), then its own recorded steps; none of them
touches the timed steps.
"""

from __future__ import annotations

from typing import Any, Callable

from yoloprof.capturing.device.torch_device import DeviceInfo, synchronize
from yoloprof.capturing.extras.model_facts import facts_section
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.capturing.passes.step_calls import no_phases

MODULE_STEPS = 2  # steps recorded with module hooks (per-step means are kept)
HOTSPOT_STEPS = 3  # steps recorded under cProfile


def _context(settings: CaptureSettings, device: DeviceInfo, amp: bool, inputs: Any
             ) -> tuple[Any, Callable[[], Any], Any]:
    """(model, one step, one input batch) for the mode."""
    if settings.mode == "train":
        from yoloprof.capturing.builtin.trial_context import build_train_context
        from yoloprof.capturing.passes.step_calls import train_step

        ctx = build_train_context(settings, device, inputs, amp)
        batch = ctx.next_batch(cycle=True)
        return ctx.model, lambda: train_step(ctx, no_phases(), cycle=True), batch
    from yoloprof.capturing.builtin.trial_context import build_infer_context
    from yoloprof.capturing.passes.step_calls import infer_call

    ictx = build_infer_context(settings, device, inputs, amp)
    x, _meta = ictx.preprocess(ictx.next_inputs(), ictx.imgsz, ictx.device)
    return ictx.model, lambda: infer_call(ictx, no_phases()), x


def _steps(step: Callable[[], Any], device: DeviceInfo, n: int, before: Callable[[], None],
           after: Callable[[], None]) -> None:
    for _ in range(n):
        before()
        step()
        synchronize(device)
        after()


def _modules_apply(settings: CaptureSettings) -> bool:
    """Per-module times mean nothing where the modules do not run one by one: a compiled graph
    fuses across them (and hooks would recompile it), a runtime runs none of them (docs/knobs.md)."""
    why = ("--compile fuses the modules into graphs" if settings.compile != "none" else
           f"--runtime {settings.runtime} runs the network outside PyTorch" if settings.runtime != "eager" else None)
    if why:
        import warnings

        warnings.warn(f"per-module times not recorded: {why}", stacklevel=2)
    return why is None


def measure_extras(settings: CaptureSettings, device: DeviceInfo, amp: bool, inputs: Any) -> dict[str, Any]:
    """{"model": facts, "modules": section or None, "hotspots": section or None}."""
    model, step, batch = _context(settings, device, amp, inputs)
    sections: dict[str, Any] = {"model": facts_section(model, batch), "modules": None, "hotspots": None}
    modules = settings.modules and _modules_apply(settings)
    if not (modules or settings.python_hotspots):
        return sections
    step()  # warm step, unrecorded
    synchronize(device)
    if modules:
        from yoloprof.capturing.extras.module_recorder import ModuleRecorder

        rec = ModuleRecorder(model, device).attach()
        try:
            _steps(step, device, MODULE_STEPS, rec.begin_step, rec.end_step)
        finally:
            rec.detach()
        sections["modules"] = rec.section()
    if settings.python_hotspots:
        from yoloprof.capturing.extras.hotspot_recorder import HotspotRecorder

        hot = HotspotRecorder()
        _steps(step, device, HOTSPOT_STEPS, hot.start, hot.stop)
        sections["hotspots"] = hot.section(HOTSPOT_STEPS)
    return sections
