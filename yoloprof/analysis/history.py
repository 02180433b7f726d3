"""`yoloprof history`: each configuration's series on each machine, ordered by commit, with its
change points attributed to commits (docs/history.md). Computes only; render/history_report.py prints.

A series is one configuration (`config_key`) on one machine (the store's `machine` partition,
a hash of the fingerprint: CPU and device model, torch and CUDA versions, threads). Series from
different machines are never pooled. Each stored row is one process (one capture), and its value
is the row's metric (the mean of that process's trials): the spread of these values is the
process-to-process noise the change-point test and the gate use; trials are never pooled.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from yoloprof.config.axes import history_axes
from yoloprof.config.stat_defaults import NOISE
from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics.changepoints import ALPHA, detectable, find_splits, screen, step_effects
from yoloprof.profiles import store

DEFAULT_METRIC = "step_ms"
# Columns that describe a configuration in words (the first row's non-null values); the axes are
# those declared to (`Axis.history`, config/axes.py).
LABEL_COLUMNS = ("source", *history_axes(), "sweep_name", "swept")
READ_COLUMNS = ("status", "config_key", "git_commit", "git_dirty", "started_at", "recorded_at",
                "profile_created_at", "hostname")
# Read for every row but kept in Arrow: only each series' first row becomes Python values.
FIRST_ROW_COLUMNS = (*store.FINGERPRINT, *LABEL_COLUMNS)


@dataclass
class HistoryQuery:
    project: Path
    metric: str = DEFAULT_METRIC
    where: Sequence[str] = ()
    repo: Path | None = None
    dirty: bool = False
    alpha: float = ALPHA
    # the asked size: the step a series without a change point is checked against (what it could
    # have found, the captures per commit that would find this size); gate's noise band
    detect: float = NOISE


@dataclass
class Excluded:
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, why: str, n: int) -> None:
        if n:
            self.counts[why] = self.counts.get(why, 0) + int(n)


def parse_where(items: Sequence[str], columns: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--where {item!r}: give key=value, e.g. --where batch=4")
        if key not in columns:
            raise UsageError(f"--where {key}: not a results column; valid: {', '.join(sorted(columns))}")
        out.append((key, value))
    return out


def _matches(series: Any, value: str) -> Any:
    """Column == value, typed: numbers compare as numbers, booleans as true/false, 'null' is null."""
    import pandas as pd

    if value.lower() in ("null", "none"):
        return series.isna()
    if pd.api.types.is_bool_dtype(series):
        return series == (value.lower() in ("1", "true", "yes"))
    if pd.api.types.is_numeric_dtype(series):
        try:
            return series == float(value)
        except ValueError:
            raise UsageError(f"--where: {value!r} is not a number") from None
    return series.astype("string") == value


def read_frame(q: HistoryQuery, extra: Sequence[str] = ()) -> tuple[Any, Excluded]:
    """The ok rows with a positive value of the metric, filtered; what was left out, counted."""
    df, gone, _ = read_rows(q, extra)
    return df, gone


def read_rows(q: HistoryQuery, extra: Sequence[str] = ()) -> tuple[Any, Excluded, Any]:
    """read_frame's frame and counts, and the Arrow table the frame's index points into, which
    also holds FIRST_ROW_COLUMNS (converted only for the rows `first_rows` asks for)."""
    from yoloprof.profiles.rows import to_pandas

    if q.metric not in store.STORE_SCHEMA.names or q.metric.endswith("_samples"):
        valid = [m for m in store.STORE_SCHEMA.names if m in registry.names("row") or m == "peak_mem_growth_mib"]
        raise UsageError(f"--metric {q.metric}: not a stored metric; valid: {', '.join(valid)}")
    if not store.store_dir(q.project).is_dir():
        raise UsageError(f"{q.project}: no results store ({store.store_dir(q.project)} is missing); "
                         "captures with --project PROJECT and sweeps with project=PROJECT add to it")
    filters = parse_where(q.where, [*store.STORE_SCHEMA.names, store.PARTITION])
    cols = list(dict.fromkeys([*READ_COLUMNS, q.metric, *extra, *(k for k, _ in filters)]))
    table = store.read_store(q.project, [c for c in dict.fromkeys([*cols, *FIRST_ROW_COLUMNS]) if c != store.PARTITION])
    df = to_pandas(table.select([*(c for c in cols if c != store.PARTITION), store.PARTITION]))
    gone = Excluded()
    keep = np.ones(len(df), bool)
    for key, value in filters:
        keep &= _matches(df[key], value).fillna(False).to_numpy(bool)
    ok = (df["status"] == "ok").fillna(False).to_numpy(bool)
    gone.add("not ok", (keep & ~ok).sum())
    keep &= ok
    has = ((df[q.metric] > 0).fillna(False) & df["config_key"].notna()).to_numpy(bool)
    gone.add(f"no {q.metric}", (keep & ~has).sum())
    keep &= has
    if not q.dirty:
        dirty = df["git_dirty"].fillna(False).to_numpy(bool)
        gone.add("dirty working tree (--dirty keeps them)", (keep & dirty).sum())
        keep &= ~dirty
    return df[keep], gone, table


def first_rows(df: Any, table: Any, index: Sequence[int]) -> list[dict[str, Any]]:
    """The rows at these frame index labels, every column (FIRST_ROW_COLUMNS from the Arrow table)."""
    import pyarrow as pa

    idx = pa.array(np.asarray(index, dtype=np.int64))
    rows = table.select(list(FIRST_ROW_COLUMNS)).take(idx).to_pylist()
    light = df.loc[list(index)].to_dict("records")
    return [{**a, **b} for a, b in zip(light, rows)]


def git_positions(repo: Path | None) -> dict[str, int] | None:
    """Each commit of the repository -> its place in topological order (parents first); None when
    there is no repository to ask."""
    from yoloprof.capturing.device.environment import _git

    where = str(repo) if repo is not None else os.getcwd()
    out = _git(where, "rev-list", "--topo-order", "--reverse", "--all")
    if not out:
        return None
    return {sha: i for i, sha in enumerate(out.split())}


def commits_between(repo: Path | None, before: str, after: str) -> int | None:
    """Commits in before..after (after included): 1 = `after` is the only new commit."""
    from yoloprof.capturing.device.environment import _git

    out = _git(str(repo) if repo is not None else os.getcwd(), "rev-list", "--count", f"{before}..{after}")
    try:
        return int(out.strip()) if out else None
    except ValueError:
        return None


def _ordered(df: Any, positions: dict[str, int] | None) -> Any:
    """Rows sorted by machine, configuration, then commit order: git order for a series whose every
    commit is in the repository, else the time of each commit's first capture (`_how` says which);
    a row without a commit is a point of its own at its capture time."""
    time = df["started_at"].fillna(df["recorded_at"])
    commit = df["git_commit"].copy()
    loose = commit.isna()
    if loose.any():  # formatting times is slow: only for the rows that need a name
        commit[loose] = "capture@" + time[loose].astype("string")
    df = df.assign(_commit=commit, _time=time)
    keys = ["machine", "config_key"]
    first = df.groupby([*keys, "_commit"])["_time"].transform("min").astype("int64").astype(float)
    known = df["git_commit"].isin(positions) if positions else df["git_commit"].isna() & False
    all_known = known.groupby([df[k] for k in keys]).transform("all").astype(bool)
    gitpos = df["git_commit"].map(positions).astype(float) if positions else first
    df = df.assign(_pos=np.where(all_known, gitpos, first), _how=np.where(all_known, "git", "capture time"))
    return df.sort_values([*keys, "_pos", "_commit", "_time"], kind="stable")


def _absent(v: Any) -> bool:
    import pandas as pd

    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _label(row: dict[str, Any]) -> str:
    """The configuration in words: its non-null axes, names bare and numbers as key=value."""
    bare = ("mode", "model", "precision", "device", "source")
    return " ".join(str(row[n]) if n in bare else f"{n}={row[n]}" for n in LABEL_COLUMNS if not _absent(row.get(n)))


def _groups(commit_codes: np.ndarray) -> np.ndarray:
    """Each row's commit number in its series (rows sorted by commit)."""
    return np.cumsum(np.concatenate(([True], commit_codes[1:] != commit_codes[:-1]))) - 1


def _attribution(commits: list[str], cut_group: int, repo: Path | None, git_ok: bool) -> dict[str, Any]:
    """The commit a change came in with: the first captured commit after it, or the range of
    commits since the last captured one when captures are missing in between."""
    after, before = commits[cut_group], commits[cut_group - 1]
    n = commits_between(repo, before, after) if git_ok else None
    return {"commit": after, "previous": before, "commits_in_range": n,
            "exact": n == 1, "range": None if n == 1 else f"{before[:12]}..{after[:12]}"}


def series_result(first: dict[str, Any], y: np.ndarray, commit_codes: np.ndarray, metric: str, q: HistoryQuery,
                  how: str, search: bool = True) -> dict[str, Any]:
    """One series (rows in commit order, `y` the log values): its points (one per commit) and the
    change points with size, interval and the commit (or range) each came in with."""
    groups = _groups(commit_codes)
    starts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    commits = [str(c) for c in commit_codes[starts]]
    splits = find_splits(y, groups, alpha=q.alpha) if search else []
    bounds = [0, *(s.cut for s in splits), len(y)]
    better = registry.better(metric)
    cps = []
    effects = step_effects([(y[bounds[i]:s.cut], y[s.cut:bounds[i + 2]]) for i, s in enumerate(splits)])
    for s, eff in zip(splits, effects):
        worse = (eff["ratio"] > 1) == (better == "lower") if better else None
        g = int(groups[s.cut])
        lo, hi = int(groups[s.location[0]]), int(groups[s.location[1]])
        cps.append({**_attribution(commits, g, q.repo, how == "git"), "index": g, "p": s.p, **eff,
                    "change_pct": 100 * (eff["ratio"] - 1),
                    "direction": None if worse is None else ("regression" if worse else "improvement"),
                    "likely_first": commits[lo], "likely_last": commits[hi], "likely_commits": hi - lo + 1})
    v = np.exp(y)
    counts = np.diff(np.append(starts, len(y)))
    points = {"commit": commits, "n": counts.tolist(), "mean": (np.add.reduceat(v, starts) / counts).tolist(),
              "min": np.minimum.reduceat(v, starts).tolist(), "max": np.maximum.reduceat(v, starts).tolist()}
    noise = _noise(y, bounds)
    return {"config_key": str(first["config_key"]), "config": _label(first), "machine": str(first["machine"]),
            "order": how, "captures": int(len(y)), "commits": len(commits), "points": points,
            "change_points": cps, "noise_cv": noise,
            # a series without a change point says what it could have found (docs/history.md)
            "detectable": None if cps else detectable(groups, noise, q.detect, alpha=q.alpha)}


def _noise(y: np.ndarray, bounds: list[int]) -> float | None:
    """Process-to-process spread within the segments between change points (pooled SD of the log
    values, as a fraction): the noise a step is measured against."""
    ss, df = 0.0, 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = y[a:b]
        if seg.size >= 2:
            ss += float(((seg - seg.mean()) ** 2).sum())
            df += seg.size - 1
    return math.sqrt(ss / df) if df else None


def compute_history(q: HistoryQuery) -> dict[str, Any]:
    """Every series of the project's store for one metric, grouped by machine."""
    if not 0 < q.detect < 10:
        raise UsageError(f"--detect {q.detect}: give the step as a fraction, e.g. 0.08 for 8%")
    full, gone, table = read_rows(q)
    # sort only the columns the series need; the label columns are read for each series' first row
    df = _ordered(full[["machine", "config_key", "git_commit", "started_at", "recorded_at", q.metric]],
                  git_positions(q.repo))
    y = np.log(df[q.metric].to_numpy(dtype=float))
    commit_codes = df["_commit"].to_numpy()
    hows = df["_how"].to_numpy()
    key = (df["machine"].astype("string") + "/" + df["config_key"].astype("string")).to_numpy()
    edges = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1], [True]))) if len(key) else np.array([0])
    firsts = first_rows(full, table, df.index[edges[:-1]]) if len(key) else []
    hosts = full.groupby("machine")["hostname"].unique().to_dict() if len(key) else {}
    machines: dict[str, dict[str, Any]] = {}
    spans = list(zip(edges[:-1], edges[1:]))
    searched = screen([(y[a:b], _groups(commit_codes[a:b])) for a, b in spans], alpha=q.alpha)
    for first, (a, b), search in zip(firsts, spans, searched):
        s = series_result(first, y[a:b], commit_codes[a:b], q.metric, q, str(hows[a]), search)
        entry = machines.get(s["machine"])
        if entry is None:
            entry = machines[s["machine"]] = {
                "machine": s["machine"], "fingerprint": {n: _plain(first.get(n)) for n in store.FINGERPRINT},
                "hostnames": sorted(str(h) for h in hosts.get(first["machine"], []) if not _absent(h)),
                "series": []}
        entry["series"].append(s)
    notes = [f"{len(machines)} machine(s): a series is one configuration on one machine fingerprint "
             f"({', '.join(store.FINGERPRINT)}); captures of different machines are never mixed"]
    return {"project": str(q.project), "metric": q.metric, "unit": registry.unit(q.metric),
            "better": registry.better(q.metric), "alpha": q.alpha, "where": list(q.where),
            "rows": int(len(df)), "excluded": gone.counts, "machines": list(machines.values()), "notes": notes}


def _plain(v: Any) -> Any:
    if _absent(v):
        return None
    return v.item() if hasattr(v, "item") else v
