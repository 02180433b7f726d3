"""Which modules' time grows fastest along a swept axis (which layer scales worst with `imgsz`).

Per job, a module's time is its forward + backward inclusive ms per step from the profile's
`modules` section. Along each numeric varying axis, within every combination of the other varying
axes, a module's growth is the exponent k of time ~ level^k: the least-squares slope of log(ms) on
log(level) over its JOBS (each trial one point; k = 1: linear in the axis, k = 2: quadratic), with
the 95% t-interval of the slope (df = points - 2; `exponent_low`/`exponent_high`). Why per job and
an interval: an exponent from 2 levels x 1 trial is a line through two points, which fits any
law exactly ("batch^2.02" for a linear layer is noise); so with fewer than MIN_POINTS points there
is no exponent (n/a), only the measured ratio, and a fit over only 2 levels says the power law
itself is untested. `ms` and `ratio` are per-level means (jobs of one configuration averaged).
Modules below MIN_SHARE of the model's own time at the largest level are left out (a few
microseconds grow erratically), and so is the model itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from scipy import stats

from yoloprof.analysis.collect import Collected
from yoloprof.analysis.configs import Configs, fmt_value

MIN_SHARE = 0.01  # of the root module's time at the largest level
TOP_PER_SERIES = 10
MIN_POINTS = 3  # jobs: a slope with a residual (df >= 1) for its interval
CONFIDENCE = 0.95
COLUMNS = ["axis", "series", "module", "type", "depth", "exponent", "exponent_low", "exponent_high",
           "points", "ratio", "levels", "ms", "share_last"]


def module_times(c: Collected) -> pd.DataFrame:
    """(group_hash, job_id, module, type, depth, ms) per ok job that has a modules section."""
    records: list[dict[str, Any]] = []
    for row in c.ok[["job_id", "group_hash"]].itertuples(index=False):
        section = (c.profiles.get(row.job_id) or {}).get("modules")
        for m in (section or {}).get("rows") or [] if isinstance(section, dict) else []:
            ms = (m.get("forward_ms") or 0.0) + (m.get("backward_ms") or 0.0)
            records.append({"group_hash": row.group_hash, "job_id": row.job_id, "module": m.get("module", ""),
                            "type": m.get("type"), "depth": m.get("depth"), "ms": float(ms)})
    if not records:
        return pd.DataFrame(columns=["group_hash", "job_id", "module", "type", "depth", "ms"])
    return pd.DataFrame(records)


def _as_number(v: Any) -> float | None:
    """Axis levels as numbers: row columns are numbers already, override axes are strings."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def fit_exponent(levels: np.ndarray, ms: np.ndarray) -> tuple[float | None, float | None, float | None, int]:
    """(k, low, high, points): least-squares slope of log(ms) on log(level) and its CONFIDENCE
    t-interval, se = sqrt(SSR / (n - 2) / Sxx); (None, None, None, n) below MIN_POINTS points
    or with fewer than 2 levels."""
    keep = ms > 0
    x, y = np.log(levels[keep]), np.log(ms[keep])
    n = len(x)
    if n < MIN_POINTS or np.unique(x).size < 2:
        return None, None, None, n
    sxx = float(((x - x.mean()) ** 2).sum())
    k = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    resid = y - (y.mean() + k * (x - x.mean()))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 2)) * math.sqrt(float((resid ** 2).sum()) / (n - 2) / sxx)
    return k, k - half, k + half, n


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
            at_top = t[(t["depth"] == 0) & (t["level"] == last)]["ms"]
            root = at_top.mean() if len(at_top) else None  # the model's own time, jobs averaged
            floor = MIN_SHARE * float(root) if root is not None else 0.0
            found = []
            for (module, type_, depth), jobs in t[t["depth"] > 0].groupby(["module", "type", "depth"], sort=False):
                g = jobs.groupby("level", as_index=False)["ms"].mean().sort_values("level")
                at_last = g[g["level"] == last]["ms"]
                if not len(at_last) or float(at_last.iloc[0]) < floor or len(g) < 2:
                    continue
                k, lo, hi, points = fit_exponent(jobs["level"].to_numpy(float), jobs["ms"].to_numpy(float))
                first = float(g["ms"].iloc[0])
                found.append({"axis": axis, "series": series, "module": module, "type": type_, "depth": int(depth),
                              "exponent": k, "exponent_low": lo, "exponent_high": hi, "points": points,
                              "ratio": float(g["ms"].iloc[-1]) / first if first > 0 else None,
                              "levels": g["level"].tolist(), "ms": g["ms"].tolist(),
                              "share_last": float(at_last.iloc[0]) / float(root) if root else None})
            rows += sorted(found, key=_fastest)[:top]
    return pd.DataFrame(rows, columns=COLUMNS)


def _fastest(r: dict[str, Any]) -> tuple[float, float]:
    """Fitted exponents first (largest first), then rows without one by their ratio."""
    k, ratio = r["exponent"], r["ratio"] or 0.0
    return (0.0, -k) if k is not None else (1.0, -ratio)


def growth_notes(growth: pd.DataFrame) -> list[str]:
    """One line per axis and series: the module whose time grows fastest, with the exponent's
    interval, or only its ratio when the points are too few for an exponent."""
    notes = []
    for (axis, series), g in growth.groupby(["axis", "series"], sort=False):
        r = g.iloc[0]
        where = "" if series == "all" else f" ({series})"
        span = f"x{r['ratio']:.2f} from {fmt_value(r['levels'][0])} to {fmt_value(r['levels'][-1])}"
        if r["exponent"] is None or pd.isna(r["exponent"]):
            notes.append(f"fastest-growing module along {axis}{where}: {r['module']} ({r['type']}), {span}; "
                         f"no exponent from {int(r['points'])} point(s) (needs {MIN_POINTS}: more levels or trials)")
            continue
        untested = "; 2 levels: the power law itself is untested" if len(r["levels"]) < 3 else ""
        notes.append(f"fastest-growing module along {axis}{where}: {r['module']} ({r['type']}), time ~ "
                     f"{axis}^{r['exponent']:.2f} [{r['exponent_low']:.2f}, {r['exponent_high']:.2f}] "
                     f"({CONFIDENCE:.0%} CI, {int(r['points'])} jobs{untested}), {span}")
    return notes
