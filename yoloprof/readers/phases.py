"""`yoloprof phases`: per phase (dataload, to_device, forward, backward, optimizer, ...) the wall
time, device time, kernels and ops per step, with each phase's share of the step.

Phases come from the trace engine (by CPU-side launch time, DESIGN.md section 5); the reader adds
the shares and the part of the step no phase covers, so that the rows visibly add up.
"""

from __future__ import annotations

from typing import Any

from yoloprof.readers._common import finite, has_device, metric_value

# Canonical order; phases the engine found beyond these follow in their own order.
PHASE_ORDER = ("dataload", "to_device", "preprocess", "forward", "backward", "clip", "optimizer", "ema",
               "postprocess")
FIELDS = ("wall_ms_per_step", "device_ms_per_step", "kernels_per_step", "ops_per_step")


def _order(name: str) -> tuple[int, str]:
    return (PHASE_ORDER.index(name) if name in PHASE_ORDER else len(PHASE_ORDER), "")


def compute_phases(profile: dict) -> dict[str, Any]:
    """Phase rows plus totals and the unattributed remainder of the step."""
    step_ms = metric_value(profile, "step_ms")
    device = has_device(profile)
    rows = []
    for p in sorted(profile.get("phases") or [], key=lambda p: _order(str(p.get("phase")))):
        row: dict[str, Any] = {"phase": p.get("phase")}
        for f in FIELDS:
            row[f] = finite(p.get(f))
        if not device:
            row["device_ms_per_step"] = None  # no device: "n/a", never 0
            row["kernels_per_step"] = None
        if not any(row[f] for f in FIELDS):
            continue  # an empty catch-all phase ("other" with nothing in it) is noise
        wall = row["wall_ms_per_step"]
        row["wall_share"] = wall / step_ms if wall is not None and step_ms else None
        rows.append(row)
    totals = {f: _sum(r[f] for r in rows) for f in FIELDS}
    warnings: list[str] = []
    other = None
    if step_ms is not None and totals["wall_ms_per_step"] is not None:
        other = step_ms - totals["wall_ms_per_step"]
        if other < -0.05 * step_ms:
            warnings.append("phase wall times add up to more than the step time: phases overlap "
                            "(e.g. backward on the autograd thread) or were measured in another pass")
    if not rows:
        warnings.append("no phases found: the trace has no yoloprof/<phase>, step/<phase>, ## forward ## or "
                        "optimizer annotations")
    if not device and rows:
        warnings.append("no device kernels: device ms and kernels per phase are n/a")
    return {"kind": profile.get("kind"), "step_ms": step_ms, "has_device": device, "phases": rows,
            "totals": totals, "unattributed_wall_ms": other, "warnings": warnings}


def _sum(values: Any) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None
