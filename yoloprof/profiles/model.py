"""The profile data model: a plain JSON-able dict (schema `yoloprof.profile/1`, DESIGN.md section 4).

Profiles stay plain dicts rather than classes so that every reader, a notebook and `jq` see the
same thing; these helpers only build the parts that have rules (metric entries, the skeleton).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from yoloprof.defs import metrics as registry
from yoloprof.defs.version import __version__

SCHEMA_NAME = "yoloprof.profile"
SCHEMA_MAJOR = 1
SCHEMA_MINOR = 1  # 1.1 adds the optional sections model, modules, hotspots; readers of 1 read 1.x
SCHEMA = f"{SCHEMA_NAME}/{SCHEMA_MAJOR}.{SCHEMA_MINOR}"
KINDS = ("train", "infer", "trace")


def metric(samples: Iterable[float] | float | None, unit: str, better: str | None) -> dict[str, Any]:
    """One metrics-table entry. `value` is the mean of the per-trial samples (one sample = one
    trial, never one step), `std` the sample standard deviation (null below two trials)."""
    if samples is None:
        vals: list[float] = []
    elif isinstance(samples, (int, float)):
        vals = [float(samples)]
    else:
        vals = [float(s) for s in samples]
    vals = [v for v in vals if math.isfinite(v)]
    assert better in ("lower", "higher", None), better
    return {
        "value": math.fsum(vals) / len(vals) if vals else None,  # statistics.fmean's own formula
        "unit": unit,
        "better": better,
        "samples": vals,
        "std": _stdev(vals) if len(vals) >= 2 else None,
        "n": len(vals),
    }


def _stdev(vals: list[float]) -> float:
    """statistics.stdev, imported when a metric has two trials or more: a trace's metrics have one
    each, and statistics (fractions, decimal) is 3-4 ms of every reader's start otherwise."""
    import statistics

    return statistics.stdev(vals)


def measured(name: str, samples: Iterable[float] | float | None) -> dict[str, Any]:
    """A metrics-table entry whose unit and direction come from the metric registry
    (yoloprof.defs.metrics): what capture and the trace engine write."""
    spec = registry.spec(name)
    return metric(samples, spec.unit, spec.better)


def now_iso() -> str:
    import datetime as _dt  # here: a reader of a profile.json never needs it (2 ms of its start)

    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def empty_profile(kind: str, config: dict | None = None, env: dict | None = None) -> dict[str, Any]:
    """A profile with every required section present; capture and the trace engine fill it in."""
    assert kind in KINDS, kind
    return {
        "schema": SCHEMA,
        "kind": kind,
        "tool": {"name": "yoloprof", "version": __version__},
        "created_at": now_iso(),
        "config": dict(config or {}),
        "env": dict(env or {}),
        "metrics": {},
        "latency": None,
        "stages": None,
        "phases": [],
        "categories": [],
        "kernels": [],
        "ops": [],
        "verdict": None,
        "trace": None,
        "warnings": [],
    }
