"""`yoloprof ops`: the framework view, aten/autograd ops per step, as `key_averages()` counts them.

Self time is what the op itself spent, children (child ops and the runtime/driver calls it makes,
which are rows of their own, `kind` runtime/driver) subtracted by the trace engine; the share is of
the summed self time, which (unlike inclusive time) adds up to the CPU time in ops. Rows are one
per op name (phases joined), or per (name, input shapes) with `--shapes` when the trace recorded
shapes (`record_shapes=True`; torch's `group_by_input_shape`). When the trace has `[memory]`
events, each row has the bytes the op itself allocated and freed per step (`profile_memory`).
"""

from __future__ import annotations

from typing import Any

from yoloprof.errors import UsageError
from yoloprof.readers._common import choose, finite, metric_value, phases_present

KEYS = ("name", "kind", "phase", "self_ms_per_step", "total_ms_per_step", "count_per_step")
SUMMED = ("self_ms_per_step", "total_ms_per_step", "count_per_step", "alloc_bytes_per_step",
          "freed_bytes_per_step")
MEMORY_KEYS = ("alloc_bytes_per_step", "freed_bytes_per_step")
SORTS: dict[str, tuple[str, bool]] = {  # --sort value -> (row key, descending)
    "self": ("self_ms_per_step", True),
    "total": ("total_ms_per_step", True),
    "calls": ("count_per_step", True),
    "name": ("name", False),
}


def merge_rows(rows: list[dict], key: str) -> list[dict]:
    """One row per (name, `key`) value: phases are joined ("forward,backward"), figures summed."""
    merged: dict[tuple, dict] = {}
    for o in rows:
        k = (o.get("name"), o.get(key)) if key != "phase" else (o.get("name"),)
        m = merged.get(k)
        if m is None:
            m = merged[k] = {"name": o.get("name"), "kind": o.get("kind", "op"), key: o.get(key), "phases": []}
        for col in SUMMED:
            if finite(o.get(col)) is not None:
                m[col] = m.get(col, 0.0) + float(o[col])
        if o.get("phase") and o["phase"] not in m["phases"]:
            m["phases"].append(o["phase"])
    for m in merged.values():
        phases = m.pop("phases")
        if key == "phase":
            m["phase"] = ",".join(phases) or None
    return list(merged.values())


def _sorted(rows: list[dict], sort: str) -> list[dict]:
    col, desc = SORTS[sort]
    if not desc:
        return sorted(rows, key=lambda o: (str(o.get(col)).lower(), str(o.get("input_shapes"))))
    return sorted(rows, key=lambda o: (-(finite(o.get(col)) or 0.0), str(o.get("name"))))


def compute_ops(profile: dict, *, top: int = 20, phase: str | None = None, sort: str = "self",
                shapes: bool = False) -> dict[str, Any]:
    """Ops sorted by `sort`, optionally of one phase or per input shapes, cut to `top` rows
    (`top <= 0` = all)."""
    if sort not in SORTS:
        raise UsageError(f"unknown --sort {sort!r}; valid: {', '.join(SORTS)}")
    ops = [o for o in profile.get("ops") or [] if isinstance(o, dict)]
    choose(phase, phases_present(profile), "phase")
    warnings = [] if ops else ["no ops in this profile (the trace has no cpu_op events)"]
    if shapes:
        if phase is not None:
            raise UsageError("--shapes and --phase cannot be combined: shape rows span all phases")
        by_shape = [o for o in profile.get("ops_by_shape") or [] if isinstance(o, dict)]
        if not by_shape and ops:
            warnings.append("--shapes: this trace has no input shapes (recorded without "
                            "record_shapes); rows are per op name")
        rows = merge_rows(by_shape, "input_shapes") if by_shape else merge_rows(ops, "phase")
    else:
        rows = merge_rows([o for o in ops if phase is None or o.get("phase") == phase], "phase")
    rows = _sorted(rows, sort)
    self_total = sum(finite(o.get("self_ms_per_step")) or 0.0 for o in ops)
    matched_self = sum(finite(o.get("self_ms_per_step")) or 0.0 for o in rows)
    calls = sum(finite(o.get("count_per_step")) or 0.0 for o in rows)
    has_memory = any(k in o for o in ops for k in MEMORY_KEYS)
    out_rows = []
    for o in rows if top <= 0 else rows[:top]:
        row = {k: o.get(k) for k in KEYS}
        if shapes:
            row["input_shapes"] = o.get("input_shapes")
        if has_memory:
            row.update({k: o.get(k) for k in MEMORY_KEYS})
        self_ms = finite(o.get("self_ms_per_step")) or 0.0
        count = finite(o.get("count_per_step"))
        row["pct"] = 100.0 * self_ms / self_total if self_total else None
        row["mean_self_us"] = 1000.0 * self_ms / count if count else None
        out_rows.append(row)
    return {
        "kind": profile.get("kind"),
        "filters": {"phase": phase, "top": top, "sort": sort, "shapes": shapes},
        "ops": out_rows,
        "has_memory": has_memory,
        "matched": len(rows),
        "total": len(ops),
        "self_ms_per_step": self_total,
        "matched_self_ms_per_step": matched_self,
        "calls_per_step": calls,
        "mean_self_us": 1000.0 * matched_self / calls if calls else None,
        "step_ms": metric_value(profile, "step_ms"),
        "warnings": warnings,
    }
