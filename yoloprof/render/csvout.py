"""CSV output of the analysis comparison table: plain numbers (no formatting), one row per
comparison, so spreadsheets and pandas read it back without parsing strings like "1.05 [1.01, 1.09]"."""

from __future__ import annotations

import pandas as pd

CSV_COLUMNS = ["config", "metric", "baseline_config", "baseline_value", "value", "unit", "better",
               "ratio", "ci_low", "ci_high", "p", "p_adj", "p_mannwhitney", "verdict", "n_baseline",
               "n", "cv_baseline", "cv", "mde_pct", "trials_needed", "drift_pct", "drift_p", "drift_adj_ratio",
               "env_diff", "flagged", "warnings",
               # the stable verdict code and the processes (jobs) behind each verdict (issue 23)
               "verdict_code", "k_baseline", "k", "processes_needed",
               # outputs against eager float32 and the calls that pay a one-time cost back (docs/knobs.md)
               "outputs", "payback_calls"]


def comparison_csv(comparisons: pd.DataFrame) -> str:
    cols = [c for c in CSV_COLUMNS if c in comparisons]
    return comparisons.reindex(columns=cols).to_csv(index=False, float_format="%.6g", lineterminator="\n")
