"""`yoloprof compare`: did a change really make it faster? Per metric the ratio after/before, its
95% CI and a verdict (DESIGN.md section 7), from the per-trial samples of each side.

Statistics come from `yoloprof.metrics.stats.compare_samples`; this module picks the metrics,
refuses verdicts below 2 trials per side (one value per trial, never per step; 2 trials are
labelled low power), and adds the plain deltas a reader wants next to them. Every difference
between the sides besides the code (device model, threads, torch, precision, batch, capture
time: `yoloprof.metrics.sides`) is listed, and a big one flags every verdict. Two raw traces
carry one sample per step, which is not a trial: they get per-step and per-category deltas
without significance.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics.sides import differences, flag_reasons, profile_facts
from yoloprof.metrics.stats import FULL_POWER_TRIALS, NEEDS_TRIALS as NEED_TRIALS
from yoloprof.readers._common import COMPARE_DEFAULT, finite, metric_entry, metric_value, per_step
from yoloprof.config.stats import ALPHA, NOISE

TRACE_NOTE = ("both inputs are raw traces: one sample per step is not a trial (steps of one run are "
              "not independent), so there is no significance verdict; run `yoloprof run/infer "
              f"--repeat {FULL_POWER_TRIALS}` (or more) on each side for one")
REGRESSED = "regressed"

# Plain deltas shown beside the verdicts; labels, units and directions from the metric registry.
DELTA_METRICS: tuple[str, ...] = ("ms_per_image", "device_util_pct", "host_overhead_ms",
                                  "launches_per_step", "kernels_per_step")


def _samples(entry: dict) -> list[float]:
    vals = [finite(s) for s in entry.get("samples") or []]
    out = [v for v in vals if v is not None]
    if not out and finite(entry.get("value")) is not None:
        out = [float(entry["value"])]
    return out


def _side(samples: list[float]) -> dict[str, Any]:
    mean = statistics.fmean(samples) if samples else None
    cv = (statistics.stdev(samples) / mean) if len(samples) >= 2 and mean else None
    return {"value": mean, "n": len(samples), "cv": cv, "samples": samples}


def pick_metrics(before: dict, after: dict, metrics: list[str] | None) -> list[str]:
    """The metrics to compare: the asked ones (each must exist on both sides, else a usage error
    listing the valid ones), or the headline metrics both sides have."""
    common = [m for m in (before.get("metrics") or {}) if m in (after.get("metrics") or {})]
    if metrics:
        unknown = [m for m in metrics if m not in common]
        if unknown:
            raise UsageError(f"unknown --metric {', '.join(map(repr, unknown))} (not in both profiles); "
                             f"valid: {', '.join(sorted(common)) or 'none'}")
        return list(dict.fromkeys(metrics))
    chosen = [m for m in COMPARE_DEFAULT if m in common
              and metric_value(before, m) is not None and metric_value(after, m) is not None]
    return chosen


def compare_metric(name: str, before: dict, after: dict, *, alpha: float, noise: float,
                   trials: bool) -> dict[str, Any]:
    """One metric's row: both sides, the change, and (from 3 trials per side) the verdict.

    `ratio` and `ci` follow yoloprof.metrics.stats: oriented so that > 1 means better;
    `change_pct` is the plain after/before change of the means, for reading."""
    eb, ea = metric_entry(before, name) or {}, metric_entry(after, name) or {}
    sb, sa = _samples(eb), _samples(ea)
    tails = percentile_notes(name, ((before, len(sb)), (after, len(sa))))
    better = eb.get("better") if "better" in eb else ea.get("better")
    b, a = _side(sb), _side(sa)
    change = (a["value"] / b["value"] - 1.0) * 100 if a["value"] is not None and b["value"] else None
    unit = eb.get("unit") or ea.get("unit") or registry.unit(name)
    row: dict[str, Any] = {"metric": name, "unit": unit, "better": better,
                           "before": b, "after": a, "change_pct": change, "ratio": None, "ci": None,
                           "p_welch": None, "p_mwu": None, "verdict": None, "verdict_code": None,
                           "note": None, "warnings": []}
    if not trials:
        row["note"] = "one sample per step is not a trial: no verdict"
        if change is not None and a["value"]:
            plain = a["value"] / b["value"]  # point ratio, oriented like stats: > 1 = better
            row["ratio"] = 1.0 / plain if better == "lower" else plain
        for side, s in (("before", b), ("after", a)):
            if s["cv"] is not None and s["cv"] > 0.10:
                row["warnings"].append(f"{name}: {side} is unstable (CV {s['cv']:.0%} > 10%)")
        return row
    from yoloprof.metrics.stats import compare_samples

    st = compare_samples(sb, sa, better=better, alpha=alpha, noise=noise)
    row.update(stats=st, ratio=st.get("ratio"), p_welch=st.get("p_welch"),
               p_mwu=st.get("p_mannwhitney"), verdict=st.get("verdict"),
               verdict_code=st.get("verdict_code"), low_power=bool(st.get("low_power")),
               warnings=[f"{name}: {w}" for w in st.get("warnings") or []] + tails)
    if st.get("ci_low") is not None:
        row["ci"] = [st["ci_low"], st["ci_high"]]
    if st.get("verdict_code") == "insufficient":
        row["verdict"] = NEED_TRIALS
        row["note"] = f"{NEED_TRIALS} (have {len(sb)} and {len(sa)}): the ratio is a point estimate"
    elif st.get("verdict_code") == "inconclusive" and st.get("mde_pct") is not None:
        row["note"] = (f"smallest detectable change {st['mde_pct']:.1f}%; "
                       f"about {st.get('trials_needed')} trials per side to detect {noise:.0%}")
    return row


def percentile_notes(name: str, sides: tuple[tuple[dict, int], ...]) -> list[str]:
    """A latency percentile compared per trial needs enough calls per trial for its interval
    (metrics.quantiles.tail_note); calls per trial = the latency table's n / the trials."""
    from yoloprof.metrics.quantiles import tail_note

    match = re.fullmatch(r"p(\d+)_ms", name)
    notes = []
    for profile, trials in sides if match and 0 < int(match.group(1)) < 100 else ():
        n = (profile.get("latency") or {}).get("n")
        if isinstance(n, int) and trials:
            note = tail_note(f"{name} per trial", int(match.group(1)) / 100.0, n // trials)
            notes += [note] if note and note not in notes else []
    return notes


def _delta_value(profile: dict, key: str) -> float | None:
    """`ms_per_image` has one definition: step_ms / batch (the mean step time over the images in
    a step), n/a without both; never 1000 / mean(img/s), which is 1000 / the mean of reciprocals."""
    if key != "ms_per_image":
        return metric_value(profile, key)
    step, batch = metric_value(profile, "step_ms"), (profile.get("config") or {}).get("batch")
    return step / batch if step is not None and isinstance(batch, int) and batch > 0 else None


def deltas(before: dict, after: dict) -> list[dict[str, Any]]:
    rows = []
    for key in DELTA_METRICS:
        spec = registry.spec(key)
        label, unit, better = spec.label, spec.unit, spec.better
        b, a = _delta_value(before, key), _delta_value(after, key)
        if b is None and a is None:
            continue
        d = a - b if a is not None and b is not None else None
        rows.append({"label": label, "metric": key, "unit": unit, "better": better, "before": b,
                     "after": a, "delta": d, "rel": d / b if d is not None and b else None})
    return rows


def category_deltas(before: dict, after: dict) -> list[dict[str, Any]]:
    """Device ms per step by kernel category, both sides, largest change first."""
    def table(p: dict) -> dict[str, float]:
        return {c["category"]: finite(c.get("device_ms_per_step")) or 0.0
                for c in p.get("categories") or [] if isinstance(c.get("category"), str)}
    tb, ta = table(before), table(after)
    rows = []
    for cat in dict.fromkeys([*tb, *ta]):
        b, a = tb.get(cat, 0.0), ta.get(cat, 0.0)
        rows.append({"category": cat, "before_ms": b, "after_ms": a, "delta_ms": a - b,
                     "rel": (a - b) / b if b else None})
    return sorted(rows, key=lambda r: -abs(r["delta_ms"]))


def step_table(profile: dict) -> list[dict[str, Any]]:
    keep = ("step", "step_ms", "device_busy_ms")
    return [{k: r.get(k) for k in keep if k in r} for r in per_step(profile)]


def compute_compare(before: dict, after: dict, *, metrics: list[str] | None = None,
                    alpha: float = ALPHA, noise: float = NOISE) -> dict[str, Any]:
    """Compare two profiles (or traces). See the module docstring for what gets a verdict."""
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"--alpha must be between 0 and 1 (got {alpha})")
    if not 0.0 <= noise < 1.0:
        raise UsageError(f"--noise must be in [0, 1) (got {noise})")
    traces = before.get("kind") == "trace" and after.get("kind") == "trace"
    names = pick_metrics(before, after, metrics)
    rows = [compare_metric(m, before, after, alpha=alpha, noise=noise, trials=not traces) for m in names]
    notes = [TRACE_NOTE] if traces else []
    if before.get("kind") != after.get("kind"):
        notes.append(f"comparing a {before.get('kind')} profile with a {after.get('kind')} profile")
    diffs = differences(profile_facts(before), profile_facts(after))
    flags = flag_reasons(diffs)
    flagged = [r for r in rows if flags and r.get("verdict_code") not in (None, "insufficient")]
    for r in flagged:
        r["flagged"] = flags
        r["verdict"] = f"{r['verdict']} (flagged: {'; '.join(flags)})"
    if flagged:
        notes.append("verdicts are flagged: the sides differ in more than the code ("
                     + "; ".join(flags) + ")")
    warnings = [w for r in rows for w in r["warnings"]]
    if not names:
        warnings.append("the two profiles have no headline metric in common")
    result: dict[str, Any] = {
        "alpha": alpha, "noise": noise, "kinds": [before.get("kind"), after.get("kind")],
        "metrics": rows, "deltas": deltas(before, after),
        "differences": diffs, "flagged": flags,
        "bound": {"before": _bound(before), "after": _bound(after)},
        "categories": category_deltas(before, after),
        "per_step": {"before": step_table(before), "after": step_table(after)} if traces else None,
        "notes": notes, "warnings": warnings,
    }
    return result


def _bound(profile: dict) -> str:
    v = profile.get("verdict")
    return str(v.get("bound")) if isinstance(v, dict) and v.get("bound") else "unknown"


def regressions(result: dict[str, Any]) -> list[str]:
    """Metrics whose verdict is a significant regression beyond the noise threshold."""
    return [r["metric"] for r in result.get("metrics", []) if r.get("verdict_code") == REGRESSED]
