"""Helpers shared by the readers: metric look-up with an explicit "why not", the headline metric
table, and the lists of valid phases and categories that usage errors name.

Readers never print and never import torch/pandas: they take a profile dict (schema
`yoloprof.profile/1`) and return JSON-able dicts that `yoloprof.render` formats.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError


# The headline figures of `summary`, the metrics `compare` looks at by default, units, labels and
# which metrics need a device all come from the metric registry (yoloprof.defs.metrics).
HEADLINE: tuple[tuple[str, str], ...] = tuple((n, registry.label(n)) for n in registry.names("summary"))
COMPARE_DEFAULT: tuple[str, ...] = registry.names("compare")
PERCENTILE_RE = re.compile(r"p\d+_ms")  # latency percentiles, not preprocess_*/postprocess_*


# Metrics the readers know by name: `get` answers n/a (with the reason) for one a profile lacks,
# the way summary shows it, instead of calling it an unknown field.
# Every metric of the registry.
KNOWN_METRICS = frozenset(registry.BY_NAME)
# the outputs check's figures (capturing/builtin/output_check.py; docs/knobs.md)
OUTPUT_FIGURES = ("output_max_abs_diff", "output_max_rel_diff", "detections_matched_pct")


def device_only(name: str) -> bool:
    return registry.device_only(name)


THRASH_WORDS = ("thrash", "memory pressure")


def finite(x: Any) -> float | None:
    """A float when `x` is a finite number, else None (JSON null, NaN and strings all mean absent)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def metric_entry(profile: dict, name: str) -> dict | None:
    entry = (profile.get("metrics") or {}).get(name)
    return entry if isinstance(entry, dict) else None


def metric_value(profile: dict, name: str) -> float | None:
    entry = metric_entry(profile, name)
    return None if entry is None else finite(entry.get("value"))


def has_device(profile: dict) -> bool:
    """True when the profile saw device kernels: a CPU-only profile has neither kernels nor a
    device-busy figure, and device figures must then read "n/a", never 0."""
    if profile.get("kernels"):
        return True
    if any(finite(c.get("device_ms_per_step")) for c in profile.get("categories") or []):
        return True
    return bool(metric_value(profile, "device_util_pct"))


def na_reason(profile: dict, name: str) -> str:
    """Why a metric is absent, in words a user can act on."""
    if device_only(name) and not has_device(profile):
        return "no device kernels: CPU run, or no GPU activity traced"
    if PERCENTILE_RE.fullmatch(name) and profile.get("kind") != "infer":
        return "latency percentiles exist for inference profiles only"
    if name == "img_per_s" and profile.get("kind") == "trace":
        return "a raw trace does not record the batch size"
    if name == "peak_mem_mb" and profile.get("kind") == "trace":
        return _trace_peak_na(profile)
    outputs_na = (profile.get("outputs") or {}).get("na") or {}  # the outputs check (capturing/builtin/output_check.py)
    if isinstance(outputs_na, dict) and outputs_na.get(name):
        return str(outputs_na[name])
    if name in OUTPUT_FIGURES and profile.get("kind") in ("train", "infer") and not profile.get("outputs"):
        return "not checked: this capture is eager, contiguous float32 itself (the reference)"
    overview_na = (profile.get("trace") or {}).get("overview_na") or {}
    if isinstance(overview_na, dict) and overview_na.get(name):
        return str(overview_na[name])
    if metric_entry(profile, name) is not None:
        return "measured but no finite value (no samples)"
    return "not recorded in this profile"


def _trace_peak_na(profile: dict) -> str:
    """Why a trace has no peak memory: no `[memory]` events at all, or CPU ones only, whose peak
    leaves out every tensor older than the profiled window (docs/readers.md "Peak memory of a
    trace"); then the window's own peak is named."""
    memory = (profile.get("trace") or {}).get("memory") or []
    window = metric_value(profile, "cpu_window_alloc_peak_mb")
    if not memory and window is None:
        return "the trace has no memory events (profile_memory off)"
    shown = f"; the window's own allocations peak at {window:.4g} MiB (cpu_window_alloc_peak_mb)" if window else ""
    return ("CPU memory events only: torch's CPU reporter counts only tensors allocated while the "
            f"profiler ran, not those held before{shown}")


def figure(profile: dict, name: str, label: str | None = None) -> dict[str, Any]:
    """One headline figure: value + unit, or value None with `na` saying why."""
    entry = metric_entry(profile, name) or {}
    value = finite(entry.get("value"))
    out: dict[str, Any] = {"name": name, "label": label or name, "value": value,
                           "unit": entry.get("unit", registry.unit(name)),
                           "n": entry.get("n", 0), "std": finite(entry.get("std"))}
    if value is None:
        out["na"] = na_reason(profile, name)
    return out


def choose(value: str | None, valid: Iterable[str], what: str) -> str | None:
    """Return `value` when it is one of `valid`, else raise UsageError listing the valid ones
    (exit 2, DESIGN.md section 2). `None` passes through: no filter asked for."""
    if value is None:
        return None
    valid = sorted(set(valid))
    if value in valid:
        return value
    shown = ", ".join(valid) if valid else f"none (this profile has no {what}s)"
    raise UsageError(f"unknown {what} {value!r}; valid: {shown}")


def match_category(value: str, valid: Iterable[str], flag: str = "--category") -> str:
    """A category given as the spec allows: its exact name, or a case-insensitive prefix or
    substring matching exactly one name (`gemm` -> `gemm/conv`, `comm` -> `communication`).
    No match, or several (`m` matches many), is a usage error (exit 2) listing the candidates."""
    names = sorted(set(valid))
    if value in names:
        return value
    low = value.lower()
    for rule in (lambda n: n.lower() == low, lambda n: n.lower().startswith(low),
                 lambda n: low in n.lower()):
        hits = [n for n in names if rule(n)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise UsageError(f"{flag} {value!r} is ambiguous: it matches {', '.join(hits)}")
    raise UsageError(f"unknown category {value!r} for {flag}; valid: {', '.join(names) or 'none'}")


def phases_present(profile: dict) -> list[str]:
    names = [p.get("phase") for p in profile.get("phases") or []]
    names += [k.get("phase") for k in profile.get("kernels") or []]
    names += [o.get("phase") for o in profile.get("ops") or []]
    seen: dict[str, None] = {}
    for n in names:
        if isinstance(n, str) and n:
            seen.setdefault(n, None)
    return list(seen)


def categories_present(profile: dict) -> list[str]:
    seen: dict[str, None] = {}
    for row in (profile.get("categories") or []) + (profile.get("kernels") or []):
        if isinstance(row.get("category"), str):
            seen.setdefault(row["category"], None)
    return list(seen)


def steps_analyzed(profile: dict) -> int | None:
    trace = profile.get("trace") or {}
    n = trace.get("steps_analyzed")
    return int(n) if isinstance(n, int) and n > 0 else None


def per_step(profile: dict) -> list[dict]:
    """The trace engine's per-step rows (`trace.per_step`), or [] when absent."""
    rows = (profile.get("trace") or {}).get("per_step")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def thrash_mark(profile: dict) -> dict[str, Any] | None:
    """A reason when memory thrashing makes the timings unreliable, else None: the verdict's own
    memory rule (yoloprof.metrics.verdict.rule_memory), evaluated even when another rule produced
    the stored verdict, or a warning of the engine naming thrashing/memory pressure."""
    from yoloprof.metrics.verdict import Facts, rule_memory

    verdict = profile.get("verdict") or {}
    if str(verdict.get("bound", "")).lower() != "memory":
        verdict = rule_memory(Facts(profile)) or {}
    if verdict:
        return {"why": str(verdict.get("why") or "memory-bound verdict"),
                "evidence": dict(verdict.get("evidence") or {})}
    for w in profile.get("warnings") or []:
        if any(word in str(w).lower() for word in THRASH_WORDS):
            return {"why": str(w), "evidence": {}}
    return None
