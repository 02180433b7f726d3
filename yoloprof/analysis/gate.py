"""`yoloprof gate PROJECT NEW...`: judge a new capture against its configuration's recent history
on the same machine (docs/history.md "Gating in CI"). Computes only; render/history_report.py prints.

The noise model is the process-to-process one (DESIGN.md section 7): every stored row is one
process, its value the mean of that process's trials, and the baseline's spread of those values
is the run-to-run noise. With `k` new processes (usually 1) and `m` baseline processes:

    d = mean(log new) - mean(log baseline),  s = pooled SD of the log values (baseline; plus the
    new side when it has 2 or more),  se = s * sqrt(1/m + 1/k),  df = m + k - 2

p from scipy's `ttest_ind_from_stats` (pooled variance), the interval d +- t[1-alpha/2, df] se
(scipy's t), both turned into the ratio of geometric means oriented so that > 1 is better, and
the verdict words of `compare` (metrics/stats.classify): `regressed` needs the whole interval
below 1 - noise. With k = 1 this is the prediction interval of one new process. The trials
inside the new capture never enter: they would understate the noise.

The baseline: the series' rows (same configuration, same machine fingerprint; clean working trees
unless --dirty), without the new capture itself and without rows of its commit, in commit order;
only the segment after the last change point (a series that moved is judged against where it is
now), at most `window` processes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from yoloprof.analysis.history import HistoryQuery, _groups, _ordered, git_positions, read_frame
from yoloprof.capturing.builtin.store_record import profile_machine
from yoloprof.config.axes import history_axes
from yoloprof.config.stat_defaults import ALPHA, NOISE
from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics.changepoints import find_splits
from yoloprof.metrics.stats import classify, verdict_words
from yoloprof.profiles import store

WINDOW = 30  # most recent baseline processes used
MIN_BASELINE = 3  # fewer and the gate says inconclusive (and passes)
MAX_NEW = 200  # most new captures an inconclusive gate's "would detect" figure looks at
# Profile config -> store column, to find the series of a capture the store does not hold: the
# axes that describe a configuration in history (`Axis.history`, config/axes.py).
AXES = history_axes()


def _new_side(paths: Sequence[str]) -> list[dict[str, Any]]:
    from yoloprof.readers.load import load_any

    if not paths:
        raise UsageError("gate: give the new capture's profile.json")
    return [load_any(p) for p in paths]


def _series_key(df: Any, profile: dict[str, Any], machine: str) -> tuple[str | None, str]:
    """The new capture's configuration: its own store row (same created_at and host), else the one
    configuration on this machine whose axes equal the profile's config."""
    env, config = profile.get("env") or {}, profile.get("config") or {}
    own = df[(df["profile_created_at"] == profile.get("created_at")) & (df["hostname"] == env.get("hostname"))]
    own = own[own["machine"] == machine]
    if len(own):
        return str(own["config_key"].iloc[0]), "its own row in the store"
    same = df[df["machine"] == machine]
    for name in AXES:
        value = config.get(name)
        if name == "model" and value is not None:
            value = str(value)
        if value is not None and name in same:
            same = same[(same[name].astype("string") == str(value)).fillna(False).astype(bool)]
    keys = sorted(same["config_key"].dropna().unique())
    if len(keys) == 1:
        return str(keys[0]), "the configuration whose settings match"
    if len(keys) > 1:
        raise UsageError(f"gate: {len(keys)} stored configurations match this capture's settings on this "
                         "machine; narrow them with --where key=value")
    return None, "none"


def _baseline(series: Any, q: HistoryQuery, metric: str, window: int, exclude_commit: str | None) -> Any:
    if exclude_commit:  # a full commit, or a short one (a profile outside the store)
        series = series[~series["git_commit"].fillna("").str.startswith(exclude_commit).astype(bool)]
    if series.empty:
        return series, None
    series = _ordered(series, git_positions(q.repo))
    y = np.log(series[metric].to_numpy(dtype=float))
    codes = series["_commit"].to_numpy()
    groups = _groups(codes)
    splits = find_splits(y, groups, alpha=q.alpha)
    start = splits[-1].cut if splits else 0
    since = str(codes[start]) if splits else None
    return series.iloc[start:].iloc[-window:], since


def judge(base: np.ndarray, new: np.ndarray, better: str | None, alpha: float, noise: float) -> dict[str, Any]:
    """The pooled two-sample t on log values (see the module doc), as an oriented ratio and verdict."""
    from scipy import stats as sps

    m, k = base.size, new.size
    lb, ln = np.log(base), np.log(new)
    sb = float(lb.std(ddof=1)) if m > 1 else 0.0
    sn = float(ln.std(ddof=1)) if k > 1 else 0.0
    df = m + k - 2
    d = float(ln.mean() - lb.mean()) if m else math.nan
    flip = -1.0 if better == "lower" else 1.0  # oriented so that > 1 is better
    out: dict[str, Any] = {"baseline_mean": float(np.exp(lb.mean())) if m else None,
                           "new_mean": float(np.exp(ln.mean())), "baseline_n": m, "new_n": k,
                           "noise_cv": sb if m > 1 else None, "ratio": math.exp(flip * d) if m else None}
    if m < MIN_BASELINE or df < 1:
        out.update(ci_low=None, ci_high=None, p=None, verdict_code="inconclusive",
                   verdict=f"inconclusive: the baseline has {m} capture(s) of this configuration on this "
                           f"machine; the gate needs {MIN_BASELINE}")
        return out
    sp = math.sqrt(((m - 1) * sb ** 2 + (k - 1) * sn ** 2) / df)
    p = float(sps.ttest_ind_from_stats(ln.mean(), sn, k, lb.mean(), sb, m, equal_var=True).pvalue) if sp > 0 else (
        1.0 if d == 0 else 0.0)
    half = float(sps.t.ppf(1 - alpha / 2, df)) * sp * math.sqrt(1 / m + 1 / k)
    lo, hi = sorted((math.exp(flip * (d - half)), math.exp(flip * (d + half))))
    code = classify(lo, hi, p, alpha=alpha, noise=noise)
    out.update(ci_low=lo, ci_high=hi, p=p, verdict_code=code, verdict=verdict_words(code, better))
    if code == "inconclusive":
        out.update(detectable(sp, m, k, alpha, noise))
    return out


def detectable(sp: float, m: int, k: int, alpha: float, noise: float) -> dict[str, Any]:
    """What an inconclusive gate could have seen (metrics/decide.py): the smallest change
    detectable with k new captures against m baseline ones (se = sp sqrt(1/m + 1/k), df m + k - 2,
    alpha, 80% power), and the new captures of this commit (the baseline as it is) that would
    detect a change of the noise band; None when no number up to MAX_NEW would."""
    from yoloprof.metrics import decide

    if not sp > 0:
        return {"mde_pct": None, "new_needed": None, "detectable": None}
    mde = float(np.expm1(decide.mde_log(sp * math.sqrt(1 / m + 1 / k), m + k - 2, alpha)) * 100)
    ks = np.arange(1, MAX_NEW + 1)
    ok = decide.power_of(math.log1p(noise), sp * np.sqrt(1 / m + 1 / ks), m + ks - 2, alpha) >= decide.POWER
    need = int(ks[int(np.argmax(ok))]) if ok.any() else None
    seen = (f"could detect >= {mde:.1f}% (alpha {alpha:g}, {decide.POWER:.0%} power) with {k} new capture(s) "
            f"against {m}")
    words = (f"{seen}; a change of {noise:.0%} needs a longer baseline (more than {MAX_NEW} new captures would not do)"
             if need is None else f"{seen}, enough for a change of {noise:.0%}" if need <= k
             else f"{seen}; about {need} new captures of this commit would detect {noise:.0%}")
    return {"mde_pct": mde, "new_needed": need, "detectable": words}


def compute_gate(project: Path, new_paths: Sequence[str], *, metrics: Sequence[str] | None = None,
                 window: int | None = None, alpha: float = ALPHA, noise: float = NOISE, repo: Path | None = None,
                 dirty: bool = False, where: Sequence[str] = ()) -> dict[str, Any]:
    """The judgement of the new capture(s) per metric against the baseline's recent history."""
    window = WINDOW if window is None else window
    if window < MIN_BASELINE:
        raise UsageError(f"--window {window}: must be at least {MIN_BASELINE}")
    from yoloprof.metrics.contention import contended, leave_out
    from yoloprof.profiles.rows import OTHER_CPU

    kept, busy, withheld = leave_out({"new": _new_side(new_paths)})  # docs/analysis.md "Contended jobs"
    profiles = kept["new"]
    metrics = list(metrics or ["step_ms"])
    machine_fp = profile_machine(profiles[0])
    machine = store.machine_key(machine_fp)
    if any(store.machine_key(profile_machine(p)) != machine for p in profiles[1:]):
        raise UsageError("gate: the new captures come from different machines (fingerprints differ); "
                         "gate one machine at a time")
    # the change-point search at its own level (changepoints.ALPHA, HistoryQuery's default)
    q = HistoryQuery(Path(project), metric=metrics[0], where=where, repo=repo, dirty=dirty)
    df, _ = read_frame(q, extra=[*metrics, *AXES, OTHER_CPU])
    key, how = _series_key(df, profiles[0], machine)
    notes: list[str] = list(busy)
    other = int((df["machine"] != machine).sum())
    if other:
        notes.append(f"{other} stored capture(s) from other machines are never used as this machine's baseline")
    commit = _commit_of(df, profiles[0])
    created = {(p.get("created_at"), (p.get("env") or {}).get("hostname")) for p in profiles}
    series = df[(df["machine"] == machine) & (df["config_key"] == key)] if key else df.iloc[0:0]
    mine = np.array([(c, h) in created for c, h in zip(series["profile_created_at"], series["hostname"])], bool)
    series = series.loc[~mine] if len(series) else series
    calm = np.array([not contended(v) for v in series[OTHER_CPU]], bool) if len(series) else mine[:0]
    if len(series) and not calm.all():
        notes.append(f"{int((~calm).sum())} stored capture(s) of this configuration ran contended: not in the baseline")
        series = series.loc[calm]
    judgements = []
    for metric in metrics:
        s = series[(series[metric] > 0).fillna(False).astype(bool)]
        base, since = _baseline(s, q, metric, window, commit)
        new = np.array([((p.get("metrics") or {}).get(metric) or {}).get("value") or np.nan for p in profiles], float)
        if not np.isfinite(new).all() or (new <= 0).any():
            raise UsageError(f"gate: the new capture has no value of {metric}")
        j = judge(base[metric].to_numpy(dtype=float) if len(base) else np.array([]), new,
                  registry.better(metric), alpha, noise)
        if withheld:
            j.update(verdict_code="inconclusive", verdict="inconclusive: withheld, the new capture ran contended")
        j.update(metric=metric, unit=registry.unit(metric), better=registry.better(metric),
                 baseline_commits=int(base["_commit"].nunique()) if len(base) else 0,
                 baseline_since_change=since)
        judgements.append(j)
    return {"project": str(project), "new": [str(p) for p in new_paths], "machine": machine,
            "fingerprint": machine_fp, "config_key": key, "matched_by": how, "commit": commit,
            "window": window, "alpha": alpha, "noise": noise, "judgements": judgements, "notes": notes,
            "regressions": [j["metric"] for j in judgements if j["verdict_code"] == "regressed"]}


def _commit_of(df: Any, profile: dict[str, Any]) -> str | None:
    """The new capture's full commit: its store row's, else the profile's short sha expanded
    against the stored commits."""
    env = profile.get("env") or {}
    own = df[(df["profile_created_at"] == profile.get("created_at")) & (df["hostname"] == env.get("hostname"))]
    if len(own) and own["git_commit"].notna().any():
        return str(own["git_commit"].dropna().iloc[0])
    short = env.get("git_sha")
    if not short:
        return None
    full = [c for c in df["git_commit"].dropna().unique() if str(c).startswith(str(short))]
    return str(full[0]) if len(full) == 1 else str(short)
