"""`yoloprof compare`'s view of a knob's one-time cost and of its outputs (docs/knobs.md):
`payback_calls` on the per-call time rows (metrics/payback.py), each side's largest
`output_max_rel_diff` against eager float32, and an improved verdict of an "after" side whose
outputs differ relabelled `faster, outputs differ (...)` (code `improved_outputs_differ`), defined here
once for the analysis' comparison table too (analysis/knob_effects.py). On the fast path: nothing heavy.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from yoloprof.config.stat_defaults import OUTPUT_TOL
from yoloprof.metrics.payback import TIME_METRICS, payback_calls
from yoloprof.readers._common import finite, metric_entry

DIFFER_CODE = "improved_outputs_differ"
SPEED = (*TIME_METRICS, "img_per_s")  # an improvement in these reads "faster"


def outputs_label(rel: float | None, tol: float = OUTPUT_TOL) -> str:
    """`same`, `differ (max rel X)`, or "" when not checked."""
    if rel is None or not math.isfinite(rel):
        return ""
    return "same" if rel <= tol else f"differ (max rel {rel:.3g})"


def differ_verdict(metric: str, label: str) -> str:
    """The verdict of an improvement whose outputs differ (`label`): never plainly "improved"."""
    return f"{'faster' if metric in SPEED else 'better'}, outputs {label}"


def row_payback(metric: str, verdict_code: Any, setup_before_s: float | None, setup_after_s: float | None,
                before: float | None, after: float | None) -> float | None:
    """`payback_calls` on a per-call time row whose verdict is improved; None on any other row."""
    if metric not in TIME_METRICS or verdict_code != "improved":
        return None
    return payback_calls(setup_before_s, setup_after_s, before, after)


def _values(side: list[dict], name: str) -> list[float]:
    vals = [finite((metric_entry(p, name) or {}).get("value")) for p in side]
    return [v for v in vals if v is not None]


def outputs_of(side: list[dict], tol: float = OUTPUT_TOL) -> dict[str, Any]:
    """{"max_rel_diff", "label"} of one side: the worst over its profiles; label "" = not checked."""
    rel = _values(side, "output_max_rel_diff")
    worst = max(rel) if rel else None
    return {"max_rel_diff": worst, "label": outputs_label(worst, tol)}


def apply_one_time(rows: list[dict[str, Any]], before: list[dict], after: list[dict],
                   tol: float = OUTPUT_TOL) -> dict[str, Any]:
    """Adds `payback_calls` to each compared row (None off the time rows or when not faster) and
    relabels improved verdicts of an after side whose outputs differ; returns the section
    {"setup_s": [before, after], "outputs": [before, after]} for the result."""
    sb, sa = _values(before, "setup_s"), _values(after, "setup_s")
    setup_b = statistics.fmean(sb) if sb else None
    setup_a = statistics.fmean(sa) if sa else None
    out_b, out_a = outputs_of(before, tol), outputs_of(after, tol)
    for row in rows:
        row["payback_calls"] = row_payback(row["metric"], row.get("verdict_code"), setup_b, setup_a,
                                           row["before"]["value"], row["after"]["value"])
        if row.get("verdict_code") == "improved" and out_a["label"].startswith("differ"):
            row["verdict"], row["verdict_code"] = differ_verdict(row["metric"], out_a["label"]), DIFFER_CODE
    return {"setup_s": [setup_b, setup_a], "outputs": [out_b, out_a]}
