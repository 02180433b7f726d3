"""Beyond pairwise: the best configuration per metric (and whether it really beats the runner-up),
the Pareto set over throughput, latency and memory, and where throughput stops scaling along a
numeric axis.

The runner-up margin uses the raw p-value of one planned comparison (best vs second best), not
the sweep-wide correction: it answers "is the winner distinguishable from the next one?".
The scaling knee is the first level after which the next level improves throughput by no more
than the noise threshold d (geometric means), i.e. where adding more stops paying.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from yoloprof.analysis.configs import Configs, fmt_value
from yoloprof.metrics.nested import compare_nested

PARETO_AXES = (("img_per_s", "higher"), ("latency", "lower"), ("peak_mem_mb", "lower"))
THROUGHPUT = "img_per_s"


def best_per_metric(gm: pd.DataFrame, samples: dict, meta: dict, names: list[str], *,
                    alpha: float, noise: float) -> pd.DataFrame:
    rows = []
    for m in names:
        g = gm[gm["metric"] == m]
        better = meta.get(m, (None, None))[0]
        if g.empty or better is None:
            continue
        g = g.sort_values("gmean", ascending=(better == "lower"), kind="stable")
        top = g.iloc[0]
        row = {"metric": m, "better": better, "best": top["config"], "value": top["gmean"],
               "runner_up": None, "runner_up_value": None, "margin": None, "ci_low": None,
               "ci_high": None, "p": None, "significant": None, "verdict": "only configuration"}
        if len(g) > 1:
            second = g.iloc[1]
            r = compare_nested(samples[(second["group_hash"], m)], samples[(top["group_hash"], m)],
                                better=better, alpha=alpha, noise=noise)
            row.update(runner_up=second["config"], runner_up_value=second["gmean"], margin=r["ratio"],
                       ci_low=r["ci_low"], ci_high=r["ci_high"], p=r["p_welch"], verdict=r["verdict"],
                       significant=None if r["p_welch"] is None else bool(r["p_welch"] < alpha))
        rows.append(row)
    return pd.DataFrame(rows)


def latency_metric(gm: pd.DataFrame) -> str | None:
    """p50 when every configuration has it (inference sweeps), else the step time."""
    have = gm.groupby("metric")["group_hash"].nunique()
    n = gm["group_hash"].nunique()
    if have.get("p50_ms", 0) == n:
        return "p50_ms"
    return "step_ms" if "step_ms" in have else None


def pareto(gm: pd.DataFrame) -> pd.DataFrame:
    """Every configuration with its throughput/latency/memory and whether no other configuration
    is at least as good on all of them and better on one. Axes missing everywhere are dropped;
    configurations missing an axis that others have are left out of the set (and marked)."""
    lat = latency_metric(gm)
    wide = gm.pivot_table(index=["group_hash", "config"], columns="metric", values="gmean", sort=False)
    axes = [(THROUGHPUT, "higher"), (lat, "lower"), ("peak_mem_mb", "lower")]
    axes = [(m, b) for m, b in axes if m and m in wide]
    out = wide[[m for m, _ in axes]].reset_index() if axes else pd.DataFrame(columns=["group_hash", "config"])
    if len(axes) < 2:
        out["pareto"] = False
        return out
    complete = out[[m for m, _ in axes]].notna().all(axis=1).to_numpy()
    # orient so that larger is better on every axis
    X = np.column_stack([out[m].to_numpy(float) * (1 if b == "higher" else -1) for m, b in axes])
    Xc = X[complete]
    ge = (Xc[:, None, :] >= Xc[None, :, :]).all(axis=2)
    gt = (Xc[:, None, :] > Xc[None, :, :]).any(axis=2)
    dominated = (ge & gt).any(axis=0)
    front = np.zeros(len(out), bool)
    front[np.flatnonzero(complete)] = ~dominated
    out["pareto"] = front
    out["complete"] = complete
    out.attrs["axes"] = [m for m, _ in axes]
    return out


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
