"""What differs between the two sides of each comparison besides the swept axes: device model,
thread count, torch version, precision, batch, the runtime settings (defs/envfields.py) and
capture time (the fields and the rule for a
"big" difference are `yoloprof.metrics.sides`, shared with `yoloprof compare`).

A side is every ok job of one configuration. A field whose jobs disagree inside a side reads
`mixed: a, b`. Capture time is the gap between the sides' windows of job start times (none when
the windows overlap, as in an interleaved sweep). A difference in a field that the compared pair
differs in on purpose (batch when batch is swept, precision when precision is: `SWEPT_CAUSES`, from
the settings' axes) is listed but never flags. Any other big difference turns a verdict into a flagged one (verdict code
`flagged`, never counted as a regression), with the reasons in the `flagged` column.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pandas as pd

from yoloprof.analysis.configs import Configs, fmt_value
from yoloprof.config.axes import causes
from yoloprof.defs.envfields import RUNTIME_KEYS
from yoloprof.metrics.sides import differences, side_facts

# A sides field -> the axes that, when the pair differs in them, make that field differ on purpose
# (each axis its own field unless its `Axis.causes` says otherwise; old names too: config/axes.py).
SWEPT_CAUSES = causes()
FLAGGABLE = ("improved", "regressed", "within_noise", "equivalent")
DIFF_COLUMNS = ["config", "baseline_config", "field", "label", "before", "after", "big", "expected", "why",
                "group_hash", "baseline_hash"]


def _job_facts(row: dict[str, Any]) -> dict[str, Any]:
    env = {"device_name": row.get("device_name"), "torch": row.get("torch_version"),
           **{k: row.get(k) for k in RUNTIME_KEYS if _known(row.get(k))}}
    cfg = {k: row.get(k) for k in ("precision", "amp", "amp_dtype", "batch", "threads") if _known(row.get(k))}
    if "amp" in cfg:
        cfg["amp"] = bool(cfg["amp"])
    return side_facts(env, cfg)


def _known(v: Any) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and v != v)


def _merge(values: list[Any]) -> Any:
    seen = list(dict.fromkeys(fmt_value(v) if not isinstance(v, str) else v for v in values if _known(v)))
    if not seen:
        return None
    return seen[0] if len(seen) == 1 else "mixed: " + ", ".join(seen)


FACT_COLUMNS = ("device_name", "torch_version", "amp", "amp_dtype", "batch", "threads", *RUNTIME_KEYS)


def side_table(ok: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """group_hash -> the merged facts of its jobs, plus its window of start times. (Only the fact
    columns are taken out of the row table: 2,000 rows of every column cost seconds.)"""
    cols = [c for c in FACT_COLUMNS if c in ok]
    small = ok[cols].astype(object).where(ok[cols].notna(), None) if cols else pd.DataFrame(index=ok.index)
    records = small.to_dict("records")
    starts = (pd.to_datetime(ok["started_at"], utc=True) if "started_at" in ok
              else pd.Series(pd.NaT, index=ok.index, dtype="datetime64[ns, UTC]"))
    by_group: dict[str, list[int]] = {}
    for i, g in enumerate(ok["group_hash"].astype(str).tolist()):
        by_group.setdefault(g, []).append(i)
    facts: dict[str, dict[str, Any]] = {}
    for g, rows in by_group.items():
        jobs = [_job_facts(records[i]) for i in rows]
        merged = {k: _merge([j[k] for j in jobs]) for k in jobs[0] if k != "captured_at"}
        t = starts.iloc[rows].dropna()
        merged["window"] = (t.min(), t.max()) if len(t) else None
        facts[g] = merged
    return facts


def _iso(t: Any) -> str:
    return t.to_pydatetime().astimezone(_dt.timezone.utc).isoformat()


def pair_differences(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """sides.differences over two merged sides; capture time from the gap between their windows."""
    b, a = dict(before), dict(after)
    wb, wa = b.pop("window"), a.pop("window")
    if wb and wa and wb[1] < wa[0]:  # disjoint windows: their nearest ends
        b["captured_at"], a["captured_at"] = _iso(wb[1]), _iso(wa[0])
    elif wb and wa and wa[1] < wb[0]:
        b["captured_at"], a["captured_at"] = _iso(wb[0]), _iso(wa[1])
    return differences(b, a)


def _expected(field: str, cfg: Configs, g: str, base: str) -> bool:
    t = cfg.table
    return any(ax in cfg.varying and fmt_value(t.at[g, ax]) != fmt_value(t.at[base, ax])
               for ax in SWEPT_CAUSES.get(field, ()))


def env_differences(ok: pd.DataFrame, cfg: Configs, pairs: dict[str, str]) -> pd.DataFrame:
    """One row per (compared pair, differing field)."""
    sides = side_table(ok)
    rows = []
    for g, base in pairs.items():
        if g not in sides or base not in sides:
            continue
        for d in pair_differences(sides[base], sides[g]):
            rows.append({"config": cfg.label(g), "baseline_config": cfg.label(base), "field": d["field"],
                         "label": d["label"], "before": None if d["before"] is None else str(d["before"]),
                         "after": None if d["after"] is None else str(d["after"]), "big": bool(d["big"]),
                         "expected": _expected(d["field"], cfg, g, base), "why": d["why"],
                         "group_hash": g, "baseline_hash": base})
    return pd.DataFrame(rows, columns=DIFF_COLUMNS)


def apply_env_flags(cmp: pd.DataFrame, diffs: pd.DataFrame) -> pd.DataFrame:
    """The comparison table with `env_diff` (every difference, as text) and `flagged` (the big
    unexpected ones); verdicts across a big difference become `flagged`."""
    cmp = cmp.copy()
    cmp["env_diff"], cmp["flagged"] = "", ""
    if diffs.empty or cmp.empty:
        return cmp
    text, flags = {}, {}
    for (g, base), d in diffs.groupby(["group_hash", "baseline_hash"], sort=False):
        text[(g, base)] = "; ".join(f"{r.label} {r.before} vs {r.after}" + (" (swept)" if r.expected else "")
                                    for r in d.itertuples())
        flags[(g, base)] = "; ".join(f"{r.why} ({r.before} vs {r.after})"
                                     for r in d[d["big"] & ~d["expected"]].itertuples())
    keys = list(zip(cmp["group_hash"], cmp["baseline_hash"]))
    cmp["env_diff"] = [text.get(k, "") for k in keys]
    cmp["flagged"] = [flags.get(k, "") for k in keys]
    hit = (cmp["flagged"] != "") & cmp["verdict_code"].isin(FLAGGABLE)
    cmp.loc[hit, "verdict"] = "flagged: " + cmp.loc[hit, "verdict"] + " across " + cmp.loc[hit, "flagged"]
    cmp.loc[hit, "verdict_code"] = "flagged"
    return cmp


def env_warnings(diffs: pd.DataFrame) -> list[str]:
    big = diffs[diffs["big"] & ~diffs["expected"]] if not diffs.empty else diffs
    out = []
    for (c, b), d in big.groupby(["config", "baseline_config"], sort=False):
        out.append(f"{c} vs {b}: the sides differ in more than the swept axes ("
                   + "; ".join(f"{r.why}: {r.before} vs {r.after}" for r in d.itertuples()) + "); verdicts flagged")
    return out
