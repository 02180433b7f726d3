"""Which modules' time grows fastest along a swept axis (which layer scales worst with `imgsz`).

Per job, a module's time is its forward + backward inclusive ms per step from the profile's
`modules` section; jobs of one configuration (group_hash) are averaged. Along each numeric varying
axis, within every combination of the other varying axes, a module's growth is the exponent k of
time ~ level^k: the least-squares slope of log(ms) on log(level) over the levels it was seen at
(k = 1: linear in the axis, k = 2: quadratic). Modules below MIN_SHARE of the model's own time at
the largest level are left out (a few microseconds grow erratically), and so is the model itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from yoloprof.analysis.collect import Collected
from yoloprof.analysis.configs import Configs, fmt_value

MIN_SHARE = 0.01  # of the root module's time at the largest level
TOP_PER_SERIES = 10
COLUMNS = ["axis", "series", "module", "type", "depth", "exponent", "ratio", "levels", "ms", "share_last"]


def module_times(c: Collected) -> pd.DataFrame:
    """(group_hash, module, type, depth, ms) means over the ok jobs that have a modules section."""
    records: list[dict[str, Any]] = []
    for row in c.ok[["job_id", "group_hash"]].itertuples(index=False):
        section = (c.profiles.get(row.job_id) or {}).get("modules")
        for m in (section or {}).get("rows") or [] if isinstance(section, dict) else []:
            ms = (m.get("forward_ms") or 0.0) + (m.get("backward_ms") or 0.0)
            records.append({"group_hash": row.group_hash, "module": m.get("module", ""),
                            "type": m.get("type"), "depth": m.get("depth"), "ms": float(ms)})
    if not records:
        return pd.DataFrame(columns=["group_hash", "module", "type", "depth", "ms"])
    df = pd.DataFrame(records)
    return df.groupby(["group_hash", "module"], as_index=False, sort=False).agg(
        type=("type", "first"), depth=("depth", "first"), ms=("ms", "mean"))


def _as_number(v: Any) -> float | None:
    """Axis levels as numbers: row columns are numbers already, override axes are strings."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def _exponent(levels: np.ndarray, ms: np.ndarray) -> float | None:
    keep = ms > 0
    if keep.sum() < 2 or np.unique(levels[keep]).size < 2:
        return None
    slope, _ = np.polyfit(np.log(levels[keep]), np.log(ms[keep]), 1)
    return float(slope)


def _series(cfg: Configs, axis: str) -> list[tuple[str, pd.DataFrame]]:
    others = [a for a in cfg.varying if a != axis]
    t = cfg.table.assign(level=cfg.table[axis].map(_as_number)).dropna(subset=["level"])
    if others:
        keys = t[others].apply(lambda r: ", ".join(f"{a}={fmt_value(r[a])}" for a in others), axis=1)
    else:
        keys = pd.Series("all", index=t.index)
    return [(str(k), sub) for k, sub in t.groupby(keys, sort=False) if sub["level"].nunique() >= 2]


def module_growth(c: Collected, cfg: Configs, *, top: int = TOP_PER_SERIES) -> pd.DataFrame:
    """The fastest-growing modules per numeric varying axis and series (COLUMNS)."""
    times = module_times(c)
    rows: list[dict[str, Any]] = []
    if times.empty:
        return pd.DataFrame(columns=COLUMNS)
    for axis in cfg.varying:
        for series, sub in _series(cfg, axis):
            level_of = sub["level"].to_dict()
            t = times[times["group_hash"].isin(level_of)].assign(level=lambda d: d["group_hash"].map(level_of))
            last = max(level_of.values())
            root = t[(t["depth"] == 0) & (t["level"] == last)]["ms"]
            floor = MIN_SHARE * float(root.iloc[0]) if len(root) else 0.0
            found = []
            for (module, type_, depth), g in t[t["depth"] > 0].groupby(["module", "type", "depth"], sort=False):
                g = g.groupby("level", as_index=False)["ms"].mean().sort_values("level")
                at_last = g[g["level"] == last]["ms"]
                if not len(at_last) or float(at_last.iloc[0]) < floor:
                    continue
                k = _exponent(g["level"].to_numpy(float), g["ms"].to_numpy(float))
                if k is None:
                    continue
                first = float(g["ms"].iloc[0])
                found.append({"axis": axis, "series": series, "module": module, "type": type_, "depth": int(depth),
                              "exponent": k, "ratio": float(g["ms"].iloc[-1]) / first if first > 0 else None,
                              "levels": g["level"].tolist(), "ms": g["ms"].tolist(),
                              "share_last": float(at_last.iloc[0]) / float(root.iloc[0]) if len(root) and
                              float(root.iloc[0]) > 0 else None})
            rows += sorted(found, key=lambda r: -r["exponent"])[:top]
    return pd.DataFrame(rows, columns=COLUMNS)


def growth_notes(growth: pd.DataFrame) -> list[str]:
    """One line per axis and series: the module whose time grows fastest."""
    notes = []
    for (axis, series), g in growth.groupby(["axis", "series"], sort=False):
        r = g.iloc[0]
        where = "" if series == "all" else f" ({series})"
        notes.append(f"fastest-growing module along {axis}{where}: {r['module']} ({r['type']}), time ~ "
                     f"{axis}^{r['exponent']:.2f}, x{r['ratio']:.2f} from {fmt_value(r['levels'][0])} to "
                     f"{fmt_value(r['levels'][-1])}")
    return notes
