"""Beyond pairwise: where throughput stops scaling along a numeric axis, and the memory axis of
the Pareto set (the best configuration per metric and the Pareto set themselves are decided
within a mode with the comparisons' statistics: `analysis.dominance`).

The scaling knee is the first level after which the next level improves throughput by no more
than the noise threshold d (geometric means), i.e. where adding more stops paying.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from yoloprof.analysis.configs import Configs, fmt_value

THROUGHPUT = "img_per_s"


def pareto_memory(names: list[str], metrics: pd.DataFrame, devices: list[str]) -> str:
    """The memory axis of the Pareto set: the memory metric the comparisons use (the job's own
    growth on CPU sweeps), else the one they would use by default."""
    from yoloprof.analysis.compare_configs import MEM_ABSOLUTE, MEM_GROWTH, _memory_metric

    chosen = [m for m in names if m in (MEM_GROWTH, MEM_ABSOLUTE)]
    return chosen[0] if chosen else _memory_metric(sorted(metrics["metric"].unique()), devices)[0]


def _numeric_axes(cfg: Configs) -> list[str]:
    return [a for a in cfg.varying
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in cfg.table[a].dropna())
            and cfg.table[a].notna().all()]


def scaling(gm: pd.DataFrame, cfg: Configs, *, noise: float) -> pd.DataFrame:
    """Throughput along each numeric varying axis, per combination of the other axes, with the
    knee (see module docstring)."""
    tp = gm[gm["metric"] == THROUGHPUT].set_index("group_hash")["gmean"]
    rows = []
    for axis in _numeric_axes(cfg):
        others = [a for a in cfg.varying if a != axis]
        t = cfg.table.assign(tp=cfg.table.index.map(tp)).dropna(subset=["tp"])
        keys = t[others].apply(lambda r: ", ".join(f"{a}={fmt_value(r[a])}" for a in others), axis=1) \
            if others else pd.Series("all", index=t.index)
        for series, sub in t.groupby(keys, sort=False):
            sub = sub.sort_values(axis)
            if len(sub) < 2:
                continue
            levels, vals = sub[axis].tolist(), sub["tp"].to_numpy(float)
            gains = vals[1:] / vals[:-1] - 1
            stop = np.flatnonzero(gains <= noise)
            knee = levels[stop[0]] if stop.size else None
            rows.append({"axis": axis, "series": series, "levels": [float(x) for x in levels],
                         "img_per_s": vals.tolist(), "gains_pct": (gains * 100).tolist(), "knee": knee,
                         "note": (f"throughput stops improving by more than {noise:.0%} after {axis}={fmt_value(knee)}"
                                  if knee is not None else f"still scaling at {axis}={fmt_value(levels[-1])}")})
    return pd.DataFrame(rows, columns=["axis", "series", "levels", "img_per_s", "gains_pct", "knee", "note"])
