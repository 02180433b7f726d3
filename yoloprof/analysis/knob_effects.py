"""Two columns of the comparison table for configurations that change a knob (docs/knobs.md):

- `outputs`: `same` when the configuration's outputs are within `output_tol` (relative) of the
  eager float32 reference's (its largest `output_max_rel_diff` over its jobs), else
  `differ (max rel X)`; empty where no job recorded the check (the configuration is the reference
  itself, or its profiles predate the check);
- `payback_calls` (on the per-call time rows, metrics/payback.py): the calls needed to pay the
  configuration's extra `setup_s` back from the time it saves, n/a unless it is significantly faster.

A faster configuration whose outputs differ is never reported as plainly "improved": its verdict
reads `faster, outputs differ (...)` with the verdict code `improved_outputs_differ`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from yoloprof.config.stat_defaults import OUTPUT_TOL
from yoloprof.metrics.payback import TIME_METRICS, payback_calls

REL_DIFF, SETUP = "output_max_rel_diff", "setup_s"
DIFFER_CODE = "improved_outputs_differ"
SPEED = (*TIME_METRICS, "img_per_s")  # an improvement in these reads "faster"


def outputs_label(rel: float | None, tol: float = OUTPUT_TOL) -> str:
    """`same`, `differ (max rel X)`, or "" when not checked."""
    if rel is None or not np.isfinite(rel):
        return ""
    return "same" if rel <= tol else f"differ (max rel {rel:.3g})"


def _per_group(metrics: pd.DataFrame, name: str, how: str) -> dict[str, float]:
    rows = metrics[metrics["metric"] == name]
    if rows.empty:
        return {}
    return {str(k): float(v) for k, v in rows.groupby("group_hash")["value"].agg(how).items()}


def apply_knob_effects(cmp: pd.DataFrame, metrics: pd.DataFrame, output_tol: float = OUTPUT_TOL) -> pd.DataFrame:
    """The comparison table with `outputs` and `payback_calls`; improved verdicts of configurations
    whose outputs differ relabelled (module doc)."""
    cmp = cmp.copy()
    cmp["outputs"], cmp["payback_calls"] = "", np.nan
    if cmp.empty:
        return cmp
    rel, setup = _per_group(metrics, REL_DIFF, "max"), _per_group(metrics, SETUP, "mean")
    cmp["outputs"] = [outputs_label(rel.get(str(g)), output_tol) for g in cmp["group_hash"]]
    cmp["payback_calls"] = [
        payback_calls(setup.get(str(b)), setup.get(str(g)), before, after)
        if m in TIME_METRICS and code == "improved" else None
        for g, b, m, code, before, after in zip(cmp["group_hash"], cmp["baseline_hash"], cmp["metric"],
                                                 cmp["verdict_code"], cmp["baseline_value"], cmp["value"])]
    cmp["payback_calls"] = cmp["payback_calls"].astype(float)
    hit = (cmp["verdict_code"] == "improved") & cmp["outputs"].str.startswith("differ")
    word = cmp["metric"].map(lambda m: "faster" if m in SPEED else "better")
    cmp.loc[hit, "verdict"] = word[hit] + ", outputs " + cmp.loc[hit, "outputs"]
    cmp.loc[hit, "verdict_code"] = DIFFER_CODE
    return cmp
