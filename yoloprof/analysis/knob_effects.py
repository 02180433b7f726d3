"""Two columns of the comparison table for configurations that change a knob (docs/knobs.md):

- `outputs`: `same` when the configuration's outputs are within `output_tol` (relative) of the
  eager float32 reference's (its largest `output_max_rel_diff` over its jobs), else
  `differ (max rel X)`; empty where no job recorded the check (the configuration is the reference
  itself, or its profiles predate the check);
- `payback_calls` (on the per-call time rows, metrics/payback.py): the calls needed to pay the
  configuration's extra `setup_s` back from the time it saves, n/a unless it is significantly faster.

A faster configuration whose outputs differ is never reported as plainly "improved": its verdict
reads `faster, outputs differ (...)` with the verdict code `improved_outputs_differ`. The labels, the verdict and the payback rule are
`yoloprof compare`'s (readers/knob_costs.py), applied here per configuration.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from yoloprof.config.stat_defaults import OUTPUT_TOL
from yoloprof.readers.knob_costs import DIFFER_CODE, differ_verdict, outputs_label, row_payback

REL_DIFF, SETUP = "output_max_rel_diff", "setup_s"


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
        row_payback(m, code, setup.get(str(b)), setup.get(str(g)), before, after)
        for g, b, m, code, before, after in zip(cmp["group_hash"], cmp["baseline_hash"], cmp["metric"],
                                                 cmp["verdict_code"], cmp["baseline_value"], cmp["value"])]
    cmp["payback_calls"] = cmp["payback_calls"].astype(float)
    hit = (cmp["verdict_code"] == "improved") & cmp["outputs"].str.startswith("differ")
    cmp.loc[hit, "verdict"] = [differ_verdict(m, label) for m, label in zip(cmp.loc[hit, "metric"],
                                                                           cmp.loc[hit, "outputs"])]
    cmp.loc[hit, "verdict_code"] = DIFFER_CODE
    return cmp
