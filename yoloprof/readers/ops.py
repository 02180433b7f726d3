"""`yoloprof ops`: the framework view, aten/autograd ops by self (exclusive) CPU time per step.

Self time is what the op itself spent, children subtracted by the trace engine; the share is of
the summed self time, which (unlike inclusive time) adds up to the CPU time in ops.
"""

from __future__ import annotations

from typing import Any

from yoloprof.readers._common import choose, finite, metric_value, phases_present

KEYS = ("name", "phase", "self_ms_per_step", "total_ms_per_step", "count_per_step")


def compute_ops(profile: dict, *, top: int = 20, phase: str | None = None) -> dict[str, Any]:
    """Ops sorted by self time, optionally of one phase, cut to `top` rows (`top <= 0` = all)."""
    ops = [o for o in profile.get("ops") or [] if isinstance(o, dict)]
    choose(phase, phases_present(profile), "phase")
    rows = [o for o in ops if phase is None or o.get("phase") == phase]
    rows.sort(key=lambda o: -(finite(o.get("self_ms_per_step")) or 0.0))
    self_total = sum(finite(o.get("self_ms_per_step")) or 0.0 for o in ops)
    matched_self = sum(finite(o.get("self_ms_per_step")) or 0.0 for o in rows)
    calls = sum(finite(o.get("count_per_step")) or 0.0 for o in rows)
    out_rows = []
    for o in rows if top <= 0 else rows[:top]:
        row = {k: o.get(k) for k in KEYS}
        self_ms = finite(o.get("self_ms_per_step")) or 0.0
        count = finite(o.get("count_per_step"))
        row["pct"] = 100.0 * self_ms / self_total if self_total else None
        row["mean_self_us"] = 1000.0 * self_ms / count if count else None
        out_rows.append(row)
    warnings = [] if ops else ["no ops in this profile (the trace has no cpu_op events)"]
    return {
        "kind": profile.get("kind"),
        "filters": {"phase": phase, "top": top},
        "ops": out_rows,
        "matched": len(rows),
        "total": len(ops),
        "self_ms_per_step": self_total,
        "matched_self_ms_per_step": matched_self,
        "calls_per_step": calls,
        "mean_self_us": 1000.0 * matched_self / calls if calls else None,
        "step_ms": metric_value(profile, "step_ms"),
        "warnings": warnings,
    }
