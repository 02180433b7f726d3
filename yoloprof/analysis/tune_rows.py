"""The rows of `yoloprof tune` (docs/tune.md): one per knob=level, read from the analysis of the
trial=auto sweep that ran it against the baseline. Compute only; render/tune_table.py prints them.

A row's figures are that sweep's comparison of the level with the baseline on the decision
metric (`adaptive.metric`, step_ms by default): `ratio` > 1 is better, [ci_low, ci_high] the
sequential rule's repeated confidence interval, `verdict_code` its verdict. `outputs`,
`payback_calls` are the comparison table's own columns where this build writes them (None
otherwise); `setup_s` is the level's mean one-time setup (compile, export) where rows record it.
A level whose jobs all failed is a row `not applicable: <the first job's one-line error>`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from yoloprof.defs import files

NOT_APPLICABLE = "not applicable"
# the columns of tune.parquet, in order
COLUMNS = ("stage", "knob", "level", "config", "metric", "ratio", "ci_low", "ci_high", "verdict_code",
           "verdict", "outputs", "setup_s", "payback_calls", "n", "n_baseline", "reason", "sweep")
IMPROVED = "improved"


def empty_row(stage: str, knob: str, level: str, **values: Any) -> dict[str, Any]:
    return {**{c: None for c in COLUMNS}, "stage": stage, "knob": knob, "level": level,
            "config": f"{knob}={level}" if level else knob, **values}


def not_applicable(stage: str, knob: str, level: str, why: str, sweep: str | None = None) -> dict[str, Any]:
    return empty_row(stage, knob, level, verdict_code=NOT_APPLICABLE, verdict=f"{NOT_APPLICABLE}: {why}",
                     reason=why, sweep=sweep)


def _value_of(row: dict[str, Any], key: str) -> str | None:
    """The level a job ran for `key`: its override (what the user asked), else its row column."""
    try:
        items = json.loads(row.get("overrides") or "[]")
    except ValueError:
        items = []
    for item in items:
        k, sep, v = str(item).lstrip("+~").partition("=")
        if sep and k == key:
            return v
    value = row.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def knob_rows(sweep_dir: Path, knob: str, levels: list[str], metric: str, *, stage: str = "knob",
              labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per level of `knob` from its finished sweep (rows + analysis/comparisons.parquet).
    `labels` maps a level to the value its jobs carry under `knob` when that differs (the confirm
    sweep's `tune=combo`)."""
    from yoloprof.profiles.rows import read_rows

    rows = read_rows(sweep_dir).to_dict("records")
    comparisons = sweep_dir / files.ANALYSIS_DIR / "comparisons.parquet"
    cmp = pd.read_parquet(comparisons) if comparisons.is_file() else pd.DataFrame()
    rel = sweep_dir.name
    out = []
    for level in levels:
        value = (labels or {}).get(level, level)
        mine = [r for r in rows if _value_of(r, knob) == value]
        ok = [r for r in mine if r.get("status") == "ok"]
        if mine and not ok:
            error = next((str(r["error"]) for r in mine if r.get("error")), "every job failed")
            out.append(not_applicable(stage, knob, level, error.splitlines()[0], rel))
            continue
        row = empty_row(stage, knob, level, metric=metric, sweep=rel)
        groups = {r.get("group_hash") for r in ok}
        setup = [v for v in (_num(r.get("setup_s")) for r in ok) if v is not None]
        row["setup_s"] = sum(setup) / len(setup) if setup else None
        hit = cmp[(cmp["metric"] == metric) & cmp["group_hash"].isin(groups)] if len(cmp) and groups else cmp
        if not ok or hit.empty:
            row.update(verdict_code="not compared", verdict="not compared: no comparison with the baseline "
                       "(see the sweep's analysis)")
            out.append(row)
            continue
        c = hit.iloc[0].to_dict()
        row.update(ratio=_num(c.get("ratio")), ci_low=_num(c.get("ci_low")), ci_high=_num(c.get("ci_high")),
                   verdict_code=_text(c.get("verdict_code")), verdict=_text(c.get("verdict")),
                   outputs=_text(c.get("outputs")), payback_calls=_num(c.get("payback_calls")),
                   n=_num(c.get("n")), n_baseline=_num(c.get("n_baseline")))
        out.append(row)
    return out


def outputs_same(row: dict[str, Any]) -> bool:
    """A level changes nothing the model outputs: `same`, or not checked (no `outputs` figure:
    a capture that records no output check, analysis/knob_effects.outputs_label's "")."""
    text = row.get("outputs")
    return not text or str(text).startswith("same")


def decided_improvements(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """knob -> its best improved level whose outputs are the same (highest ratio)."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["verdict_code"] == IMPROVED and outputs_same(r) and r.get("ratio") is not None:
            if r["knob"] not in best or r["ratio"] > best[r["knob"]]["ratio"]:
                best[r["knob"]] = r
    return best


# rank: verdict groups in this order, then ratio (best first); not applicable last
_RANK = {IMPROVED: 0, "equivalent": 1, "inconclusive": 2, "regressed": 3, "not compared": 4, NOT_APPLICABLE: 5}


def ranked(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The table: confirmed combination first when improved, then every level best first,
    not-applicable rows last."""
    def key(r: dict[str, Any]) -> tuple[int, int, float]:
        group = _RANK.get(str(r.get("verdict_code")), 2)
        confirm = 0 if r["stage"] == "confirm" and group == 0 else 1
        return (confirm, group, -(r.get("ratio") or 0.0))

    return pd.DataFrame(sorted(rows, key=key), columns=list(COLUMNS))
