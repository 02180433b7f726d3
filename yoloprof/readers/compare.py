"""`yoloprof compare`: did a change really make it faster? Per metric the ratio after/before, its
95% CI and a verdict (DESIGN.md section 7), with the process as the unit of replication.

Each side is one or more profiles; each profile is one process (a capture), its per-trial samples
that process's trials. The verdict comes from `yoloprof.metrics.nested.compare_nested`: with two
or more profiles per side, Welch's test on the process means; with one per side, only against a
stored run-to-run noise floor for this machine and workload (`yoloprof.metrics.noise_floor`, measured
by `yoloprof calibrate`), else `inconclusive` with the command that would decide. The plain
deltas a reader wants are added. Every difference between the sides besides the code (device
model, threads, torch, precision, batch, capture time: `yoloprof.metrics.sides`) is listed, and a
big one flags every verdict. A profile that ran contended (other processes' CPU above the
threshold of metrics/contention.py) is left out of its side, and every verdict is withheld where a
side has no other; a warning names them. Two raw traces (one each) carry one sample per step, which is not a
trial: they get per-step and per-category deltas without significance.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics.sides import differences, flag_reasons, profile_facts
from yoloprof.metrics.stats import CV_WARN, FULL_POWER_TRIALS
from yoloprof.metrics.nested import NO_FLOOR_WORDS
from yoloprof.readers._common import COMPARE_DEFAULT, finite, metric_entry, metric_value, per_step
from yoloprof.config.stat_defaults import ALPHA, NOISE

TRACE_NOTE = ("both inputs are raw traces: one sample per step is not a trial (steps of one run are "
              "not independent), so there is no significance verdict; capture each side "
              f"{FULL_POWER_TRIALS} or more times (`yoloprof run/infer --repeat {FULL_POWER_TRIALS}`) "
              "and compare them all (A1 A2 A3 vs B1 B2 B3) for one")
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


def calibrate_command(profile: dict, processes: int = 5) -> str:
    """The command that measures the run-to-run noise floor for this profile's workload."""
    argv = [str(a) for a in ((profile.get("env") or {}).get("argv") or [])]
    keep, skip = [], False
    for a in argv:  # calibrate chooses where its captures go, and reads them itself
        if skip or a == "--json":
            skip = False
            continue
        if a == "--project":
            skip = True
            continue
        if not a.startswith("--project="):
            keep.append(a)
    argv = keep
    if argv[:1] and argv[0] in ("run", "infer"):
        import shlex

        return f"yoloprof calibrate --processes {processes} -- yoloprof {shlex.join(argv)}"
    return f"yoloprof calibrate --processes {processes} -- <the capture command of this profile>"


def _floor_for(sides: list[list[dict]], name: str, floors: dict | None, noise_file: Any) -> dict | None:
    """A stored floor for `name`: the caller's (API, tests) or the store's, matched to the
    before side's machine and workload, else the after side's."""
    if floors is not None:
        return floors.get(name)
    from yoloprof.metrics.noise_floor import find_floor, load_floors

    store = load_floors(noise_file)
    for side in sides:
        found = find_floor(side[0], name, noise_file, store)
        if found:
            return found
    return None


def compare_metric(name: str, before: dict | list[dict], after: dict | list[dict], *, alpha: float,
                   noise: float, trials: bool, floors: dict | None = None,
                   noise_file: Any = None) -> dict[str, Any]:
    """One metric's row: both sides, the change, and the verdict (module docstring).

    `ratio` and `ci` follow yoloprof.metrics.stats: oriented so that > 1 means better;
    `change_pct` is the plain after/before change of the means, for reading."""
    pb = before if isinstance(before, list) else [before]
    pa = after if isinstance(after, list) else [after]
    eb = [metric_entry(p, name) or {} for p in pb]
    ea = [metric_entry(p, name) or {} for p in pa]
    gb, ga = [_samples(e) for e in eb], [_samples(e) for e in ea]
    sb, sa = [v for g in gb for v in g], [v for g in ga for v in g]
    first = next((e for e in eb + ea if "better" in e), {})
    better = first.get("better")
    tails = percentile_notes(name, tuple((p, len(g)) for side in ((pb, gb), (pa, ga))
                                         for p, g in zip(*side)))
    b, a = _side(sb), _side(sa)
    b["processes"], a["processes"] = sum(1 for g in gb if g), sum(1 for g in ga if g)
    change = (a["value"] / b["value"] - 1.0) * 100 if a["value"] is not None and b["value"] else None
    unit = next((e.get("unit") for e in eb + ea if e.get("unit")), None) or registry.unit(name)
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
            if s["cv"] is not None and s["cv"] > CV_WARN:
                row["warnings"].append(f"{name}: {side} is unstable (CV {s['cv']:.0%} > {CV_WARN:.0%})")
        return row
    from yoloprof.metrics.nested import compare_nested

    one = min(b["processes"], a["processes"]) < 2
    floor = _floor_for([pb, pa], name, floors, noise_file) if one else None
    st = compare_nested(gb, ga, better=better, alpha=alpha, noise=noise, floor=floor)
    row.update(stats=st, ratio=st.get("ratio"), p_welch=st.get("p_welch"),
               p_mwu=st.get("p_mannwhitney"), verdict=st.get("verdict"),
               verdict_code=st.get("verdict_code"), low_power=bool(st.get("low_power")),
               method=st.get("method"), floor=st.get("floor"), note=st.get("note"),
               warnings=[f"{name}: {w}" for w in st.get("warnings") or []] + tails)
    if st.get("ci_low") is not None:
        row["ci"] = [st["ci_low"], st["ci_high"]]
    if st.get("verdict") == NO_FLOOR_WORDS:
        row["decide"] = calibrate_command(pb[0])
        row["note"] = None  # said once for the whole comparison (compute_compare's notes)
    elif st.get("verdict_code") == "insufficient":
        row["note"] = f"no usable samples on one side (have {len(sb)} and {len(sa)})"
    return row


def percentile_notes(name: str, sides: tuple[tuple[dict, int], ...]) -> list[str]:
    """A latency percentile compared per trial needs enough calls per trial for its interval
    (metrics.quantiles.tail_note); calls per trial = the latency table's n / the trials."""
    from yoloprof.metrics.quantiles import tail_note

    match = re.fullmatch(r"p(\d+)_ms", name)
    pct = int(match.group(1)) if match else 0
    notes = []
    for profile, trials in sides if 0 < pct < 100 else ():
        n = (profile.get("latency") or {}).get("n")
        if isinstance(n, int) and trials:
            note = tail_note(f"{name} per trial", pct / 100.0, n // trials)
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


def _mixed_sides(pb: list[dict], pa: list[dict]) -> list[str]:
    """A side's captures should be repeats of one workload on one machine; say when they are not."""
    from yoloprof.metrics.noise_floor import profile_keys

    out = []
    for side, profiles in (("before", pb), ("after", pa)):
        keys = {profile_keys(p) for p in profiles}
        if len(keys) > 1:
            out.append(f"{side}: its {len(profiles)} captures are not all the same workload on the same "
                       "machine; they are compared as repeats all the same")
    return out


def _as_list(side: dict | list[dict], what: str) -> list[dict]:
    out = side if isinstance(side, list) else [side]
    if not out:
        raise UsageError(f"compare: no profile on the {what} side")
    return out


def compute_compare(before: dict | list[dict], after: dict | list[dict], *, metrics: list[str] | None = None,
                    alpha: float = ALPHA, noise: float = NOISE, floors: dict | None = None,
                    noise_file: Any = None) -> dict[str, Any]:
    """Compare two profiles (or traces), or two lists of profiles (one per process, e.g. repeated
    captures of each side). See the module docstring for what gets a verdict. `floors`
    (metric -> noise floor) replaces the stored floors; `noise_file` names the store."""
    from yoloprof.config.analysis_settings import AnalysisSettings

    AnalysisSettings(alpha=alpha, noise=noise).validate()  # the bounds of the one schema
    pb, pa = _as_list(before, "before"), _as_list(after, "after")
    b0, a0 = pb[0], pa[0]
    from yoloprof.metrics.contention import leave_out  # contended captures: out of the verdicts

    kept, contended, withheld = leave_out({"before": pb, "after": pa})
    pb, pa = kept["before"], kept["after"]
    traces = all(p.get("kind") == "trace" for p in pb + pa) and len(pb) == len(pa) == 1
    names = pick_metrics(b0, a0, metrics)
    names = [m for m in names if all(metric_entry(p, m) for p in pb + pa)] if not metrics else names
    rows = [compare_metric(m, pb, pa, alpha=alpha, noise=noise, trials=not traces, floors=floors,
                           noise_file=noise_file) for m in names]
    notes = [TRACE_NOTE] if traces else []
    if b0.get("kind") != a0.get("kind"):
        notes.append(f"comparing a {b0.get('kind')} profile with a {a0.get('kind')} profile")
    diffs = differences(profile_facts(b0), profile_facts(a0))
    flags = flag_reasons(diffs)
    flagged = [r for r in rows if flags and r.get("verdict_code") not in (None, "insufficient")]
    for r in flagged:
        r["flagged"] = flags
        r["verdict"] = f"{r['verdict']} (flagged: {'; '.join(flags)})"
    if flagged:
        notes.append("verdicts are flagged: the sides differ in more than the code ("
                     + "; ".join(flags) + ")")
    from yoloprof.readers.knob_costs import apply_one_time

    one_time = apply_one_time(rows, pb, pa)  # payback_calls, outputs against eager float32
    decide = next((r["decide"] for r in rows if r.get("decide")), None)
    if decide:
        notes.append(f"{NO_FLOOR_WORDS}: the trials of one capture share its process and cannot show "
                     f"run-to-run noise. To decide, measure the noise floor once: `{decide}`, or capture "
                     f"each side in {FULL_POWER_TRIALS} or more separate processes and compare them all "
                     "(`yoloprof compare A1 A2 A3 vs B1 B2 B3`), or let compare run both sides "
                     "(`yoloprof compare --run-a CMD_A --run-b CMD_B`)")
    for r in rows:
        if withheld and r.get("verdict_code") not in (None, "insufficient"):
            r["verdict_code"], r["verdict"] = "inconclusive", "inconclusive: withheld, ran contended"
    warnings = contended + [w for r in rows for w in r["warnings"]] + _mixed_sides(pb, pa)
    from yoloprof.readers.libreyolo_headline import mixed_sources

    mixed = mixed_sources(pb + pa)  # libreyolo files read from different sources (trace, its timer)
    if mixed:
        warnings.append(mixed)
    if not names:
        warnings.append("the two profiles have no headline metric in common")
    result: dict[str, Any] = {
        "alpha": alpha, "noise": noise, "kinds": [b0.get("kind"), a0.get("kind")],
        "processes": [len(pb), len(pa)],
        "metrics": rows, "deltas": deltas(b0, a0) if len(pb) == len(pa) == 1 else [],
        "differences": diffs, "flagged": flags,
        "bound": {"before": _bound(b0), "after": _bound(a0)},
        "categories": category_deltas(b0, a0),
        "per_step": {"before": step_table(b0), "after": step_table(a0)} if traces else None,
        "notes": notes, "warnings": warnings, "one_time": one_time,
    }
    return result


def _bound(profile: dict) -> str:
    v = profile.get("verdict")
    return str(v.get("bound")) if isinstance(v, dict) and v.get("bound") else "unknown"


def regressions(result: dict[str, Any]) -> list[str]:
    """Metrics whose verdict is a significant regression beyond the noise threshold."""
    return [r["metric"] for r in result.get("metrics", []) if r.get("verdict_code") == REGRESSED]
