"""Outputs checked (DESIGN.md section 3): a capture whose knobs or precision differ from eager,
contiguous float32 runs one fixed input through its own network and through an eager float32
copy of the same weights (built the same way from the same seed or checkpoint), in the same
process, after the timed trials; the figures are metrics/agreement.py's.

The fixed input is the first batch the timed steps see: inference, the first `batch` sources
through each side's own pre-process; training, the loader's first batch (seeded, unshuffled)
through each side's own `to_device`. Inference compares the network's raw outputs and, for a
detector, the detections after the family's post-process; training compares the training-mode
forward's outputs (the family's `forward`, grad enabled), or, where that forward needs the
targets (torchvision's detectors), the loss and its parts. `optimizer_impl` does not change a
forward, so it alone gives differences of 0.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.config.knobs import BY_NAME, REFERENCE_PRECISION, needs_output_check
from yoloprof.metrics.agreement import matched_pct, tensor_diffs
from yoloprof.warn import one_line

REFERENCE = "eager, contiguous, float32"
NA_KEY = "na"  # the section's {metric: why it is n/a}; readers' na_reason reads it


def reference_settings(settings: CaptureSettings) -> CaptureSettings:
    """The same capture with every knob at its default and float32 arithmetic."""
    knobs: dict[str, Any] = {name: knob.default for name, knob in BY_NAME.items()}
    return dataclasses.replace(settings, precision=REFERENCE_PRECISION, **knobs)


def check_outputs(settings: CaptureSettings, device: DeviceInfo, amp: bool, inputs: Any
                  ) -> tuple[dict[str, Any] | None, dict[str, list[float]]]:
    """(the profile's `outputs` section, metric samples), or (None, {}) for a capture that is
    itself the reference."""
    if not needs_output_check(settings.to_dict(), settings.mode):
        return None, {}
    run = _infer_pair if settings.mode == "infer" else _train_pair
    section: dict[str, Any] = {"reference": REFERENCE, NA_KEY: {}}
    try:
        figures = run(settings, device, amp, inputs)
    except Exception as exc:  # noqa: BLE001 - the check reports; it never fails a finished capture
        why = f"the check failed: {type(exc).__name__}: {one_line(exc)[:200]}"
        section[NA_KEY] = dict.fromkeys(("output_max_abs_diff", "output_max_rel_diff"), why)
        return section, {}
    samples = {}
    for name, (value, reason) in figures.items():
        if value is None:
            section[NA_KEY][name] = reason
        else:
            section[name] = value
            samples[name] = [value]
    return section, samples


def _arrays(obj: Any) -> list[Any]:
    """Every tensor in an output (nested tuples, lists, dicts in key order), as float numpy arrays."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj.detach().float().cpu().contiguous().numpy()]
    if isinstance(obj, dict):
        return [a for key in sorted(obj, key=str) for a in _arrays(obj[key])]
    if isinstance(obj, (list, tuple)):
        return [a for item in obj for a in _arrays(item)]
    if hasattr(obj, "__array__"):  # a runtime's numpy output
        import numpy as np

        return [np.asarray(obj, dtype=np.float32)]
    return []


def _diffs(cand: Any, ref: Any) -> dict[str, tuple[float | None, str | None]]:
    a, b = _arrays(cand), _arrays(ref)
    if not b or len(a) != len(b):
        why = f"the outputs hold {len(a)} tensor(s), the reference {len(b)}: not comparable"
        return {"output_max_abs_diff": (None, why), "output_max_rel_diff": (None, why)}
    abs_diff, rel_diff = tensor_diffs(list(zip(a, b)))
    if not math.isfinite(rel_diff):
        return {"output_max_abs_diff": (abs_diff, None),
                "output_max_rel_diff": (None, "a reference output tensor is all zeros where the configuration's is not")}
    return {"output_max_abs_diff": (abs_diff, None), "output_max_rel_diff": (rel_diff, None)}


def _infer_pair(settings: CaptureSettings, device: DeviceInfo, amp: bool, sources: Any
                ) -> dict[str, tuple[float | None, str | None]]:
    import torch

    from yoloprof.capturing.builtin.trial_context import build_infer_context

    out: dict[str, Any] = {}
    for side, (s, autocast) in {"cand": (settings, amp), "ref": (reference_settings(settings), False)}.items():
        ctx = build_infer_context(s, device, sources, autocast)
        with torch.inference_mode():
            x, meta = ctx.preprocess(ctx.next_inputs(), ctx.imgsz, ctx.device)
            with ctx.autocast():
                if side == "ref" and settings.runtime != "eager":  # the runtime's network is the export form
                    raw = _export_form_outputs(settings, ctx.model, x)
                else:
                    raw = ctx.model(x) if ctx.forward is None else ctx.forward(ctx.model, x)
            dets = ctx.postprocess(raw, meta, ctx.conf, ctx.iou, ctx.max_det)
        out[side] = (raw, dets)
        del ctx
    figures = _diffs(out["cand"][0], out["ref"][0])
    images = _detections(out["cand"][1], out["ref"][1])
    if images is not None:
        figures["detections_matched_pct"] = matched_pct(images)
    return figures


def _export_form_outputs(settings: CaptureSettings, model: Any, x: Any) -> Any:
    """The eager network's outputs in the form a runtime runs it (`Adapter.export_network`: e.g.
    Ultralytics' head in export mode, one tensor), rebuilt as the post-process reads them: the
    reference of a runtime's outputs, tensor for tensor."""
    from yoloprof.capturing.runtimes import export_form
    from yoloprof.workloads.families import workload

    form = export_form(workload(settings).adapter, model)
    return form.raw(form.network(form.tensor(x)), x)


class _NeedsTargets(Exception):
    """A training-mode forward that does not run without the targets (torchvision's detectors)."""


def _train_pair(settings: CaptureSettings, device: DeviceInfo, amp: bool, dataset: Any
                ) -> dict[str, tuple[float | None, str | None]]:
    """The training-mode forward's outputs on both sides, or both sides' loss and parts where that
    forward needs the targets. Grad stays enabled, as in the timed steps, so a compiled network's
    graph is reused rather than recompiled for no_grad (minutes on a CPU); outputs are detached
    when read."""
    try:
        return _train_compare(settings, device, amp, dataset, _forward_outputs)
    except _NeedsTargets:
        return _train_compare(settings, device, amp, dataset, _loss_outputs)


def _train_compare(settings: CaptureSettings, device: DeviceInfo, amp: bool, dataset: Any,
                   read: Any) -> dict[str, tuple[float | None, str | None]]:
    from yoloprof.capturing.builtin.trial_context import build_train_context
    from yoloprof.capturing.passes.step_calls import train_step_inputs

    out: dict[str, Any] = {}
    for side, (s, autocast) in {"cand": (settings, amp), "ref": (reference_settings(settings), False)}.items():
        ctx = build_train_context(s, device, dataset, autocast)
        try:
            inputs, targets = train_step_inputs(ctx)
            with ctx.autocast():
                out[side] = read(ctx, s, inputs, targets)
        finally:
            ctx.close()
    return _diffs(out["cand"], out["ref"])


def _forward_outputs(ctx: Any, settings: CaptureSettings, inputs: Any, targets: Any) -> Any:
    from yoloprof.workloads.families import workload

    try:
        return workload(settings).adapter.forward(ctx.model, inputs)
    except Exception as exc:  # noqa: BLE001 - whatever the family raises without its targets
        raise _NeedsTargets(str(exc)) from exc


def _loss_outputs(ctx: Any, settings: CaptureSettings, inputs: Any, targets: Any) -> list[Any]:
    loss, parts = ctx.forward_loss(ctx.model, inputs, targets)
    return [loss, *(parts[k] for k in sorted(parts))]


def _detections(cand: Any, ref: Any) -> list[tuple[Any, Any, Any, Any]] | None:
    """Per image (cand boxes, cand classes, ref boxes, ref classes) as numpy, or None where the
    post-process does not return boxes (a classifier's top-k, a user's identity)."""
    a, b = _boxes_per_image(cand), _boxes_per_image(ref)
    if a is None or b is None or len(a) != len(b):
        return None
    return [(ab, ac, bb, bc) for (ab, ac), (bb, bc) in zip(a, b)]


def _boxes_per_image(dets: Any) -> list[tuple[Any, Any]] | None:
    """A family's detections ([K, 6] x1 y1 x2 y2 score class tensors, or dicts with `boxes` and
    `labels`/`classes`) as per-image (boxes [K, 4], classes [K])."""
    import torch

    if not isinstance(dets, (list, tuple)) or not dets:
        return None
    out = []
    for d in dets:
        if isinstance(d, torch.Tensor) and d.dim() == 2 and d.shape[1] >= 6:
            t = d.detach().float().cpu().numpy()
            out.append((t[:, :4], t[:, 5].round()))
        elif isinstance(d, dict) and "boxes" in d and ("labels" in d or "classes" in d):
            labels = d.get("labels", d.get("classes"))
            out.append((torch.as_tensor(d["boxes"]).detach().float().cpu().numpy().reshape(-1, 4),
                        torch.as_tensor(labels).detach().float().cpu().numpy().reshape(-1)))
        else:
            return None
    return out
