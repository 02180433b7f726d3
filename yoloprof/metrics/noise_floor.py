"""Run-to-run noise floors: how much the mean of one process varies from one fresh process to the
next on this machine, for this workload (DESIGN.md section 7, docs/analysis.md "Noise floors").

Why: trials inside one process share its allocator, memory layout, CPU frequency and the load of
the moment, so their spread understates what a second process would show (the issue measured the
variance of capture means at 5.3x what the trials inside each predict). A comparison with ONE
process per side has no data on that between-process level; it can only be judged against a
floor measured earlier by K identical fresh-process captures (`yoloprof calibrate`) on the same
machine and workload.

A floor is, per metric, the SD of the log process means of those K processes (`sd`, df K-1), the
pooled within-process SD of the log trials (`within_sd`) and the trials per process (`trials`);
the between-process component is `sd^2 - within_sd^2 / trials` (floored at 0). Floors live in
one JSON file per user (``$YOLOPROF_NOISE_FILE``, else ``$XDG_CACHE_HOME/yoloprof/noise_floors.json``,
else ``~/.cache/yoloprof/noise_floors.json``), keyed by machine fingerprint and workload key.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from yoloprof.errors import UsageError

NOISE_FILE_ENV = "YOLOPROF_NOISE_FILE"
SCHEMA = "yoloprof.noise/1"
MIN_PROCESSES = 3  # fewest processes a floor is measured from (df >= 2)

# What identifies the machine: the same hardware and software stack on the same host.
MACHINE_FIELDS = ("hostname", "cpu_model", "cpu_count", "device_name", "torch", "cuda", "hip")
# What identifies the workload: everything that changes what one step computes or how it is timed.
WORKLOAD_FIELDS = ("mode", "model", "model_kwargs", "size", "weights", "data", "batch", "imgsz",
                   "precision", "amp", "amp_dtype", "threads", "device", "steps", "runs", "warmup",
                   "workers", "conf", "iou", "max_det")


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def machine_key(env: Mapping[str, Any] | None) -> str:
    env = env or {}
    return _digest({k: env.get(k) for k in MACHINE_FIELDS})


def workload_key(config: Mapping[str, Any] | None, kind: str | None = None) -> str:
    """A digest of the workload fields, plus any setting added since (`hashed="unless_default"`,
    config/axes.py) that is away from its default: older keys stay valid. (Imported here: the
    readers load this module, and their start-up does not load the settings schema.)"""
    from yoloprof.config.axes import added_values

    config = dict(config or {})
    return _digest({"kind": kind, **{k: config.get(k) for k in WORKLOAD_FIELDS}, **added_values(config, kind)})


def profile_keys(profile: Mapping[str, Any]) -> tuple[str, str]:
    """(machine fingerprint, workload key) of a profile."""
    return machine_key(profile.get("env")), workload_key(profile.get("config"), profile.get("kind"))


def describe_workload(profile: Mapping[str, Any]) -> str:
    cfg = profile.get("config") or {}
    keys = ("mode", "model", "size", "batch", "imgsz", "precision", "device", "threads")
    return " ".join(f"{k}={cfg[k]}" for k in keys if cfg.get(k) is not None) or str(profile.get("kind"))


def estimate_floor(groups: Sequence[Sequence[float]]) -> dict[str, Any] | None:
    """One metric's floor from K processes' trials (positive values; one group per process):
    None below MIN_PROCESSES usable processes."""
    logs = [np.log(np.asarray([v for v in g if v is not None and math.isfinite(v) and v > 0], float))
            for g in groups]
    logs = [g for g in logs if g.size]
    if len(logs) < MIN_PROCESSES:
        return None
    means = np.array([g.mean() for g in logs])
    multi = [g for g in logs if g.size >= 2]
    dfw = sum(g.size - 1 for g in multi)
    within = math.sqrt(sum(((g - g.mean()) ** 2).sum() for g in multi) / dfw) if dfw else None
    trials = float(np.mean([g.size for g in logs]))
    sd = float(means.std(ddof=1))
    between2 = sd ** 2 - ((within or 0.0) ** 2) / trials
    return {"sd": sd, "df": len(logs) - 1, "processes": len(logs), "within_sd": within,
            "trials": trials, "between_sd": math.sqrt(max(0.0, between2)),
            "inflation": (sd ** 2 / (within ** 2 / trials)) if within else None}


def noise_file(path: str | os.PathLike | None = None) -> Path:
    if path:
        return Path(path)
    if os.environ.get(NOISE_FILE_ENV):
        return Path(os.environ[NOISE_FILE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "yoloprof" / "noise_floors.json"


def load_floors(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The whole store ({"schema", "floors": {key: record}}); empty when there is none. A store
    that is not ours is a usage error naming the file (never silently overwritten)."""
    p = noise_file(path)
    if not p.is_file():
        return {"schema": SCHEMA, "floors": {}}
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{p}: not a readable noise-floor file ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("floors"), dict):
        raise UsageError(f"{p}: not a noise-floor file (schema {SCHEMA!r} expected)")
    return data


def store_key(machine: str, workload: str) -> str:
    return f"{machine}/{workload}"


def find_floor(profile: Mapping[str, Any], metric: str, path: str | os.PathLike | None = None,
               store: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The stored floor of `metric` for this profile's machine and workload, with where it came
    from (`source`, `measured_at`, `workload`), or None."""
    store = store if store is not None else load_floors(path)
    rec = store["floors"].get(store_key(*profile_keys(profile)))
    if not isinstance(rec, dict) or not isinstance((rec.get("metrics") or {}).get(metric), dict):
        return None
    return {**rec["metrics"][metric], "source": rec.get("source"), "measured_at": rec.get("measured_at"),
            "workload": rec.get("workload"), "file": str(noise_file(path))}


def floor_record(profiles: Sequence[Mapping[str, Any]], source: str, measured_at: str) -> tuple[str, dict]:
    """(store key, record) from K profiles of identical work (one process each): every metric with
    samples in all of them. Refuses profiles of different machines or workloads."""
    keys = {profile_keys(p) for p in profiles}
    if len(keys) != 1:
        raise UsageError(f"calibration needs identical captures on one machine; got {len(keys)} "
                         "different machine/workload combinations")
    names = set.intersection(*[set((p.get("metrics") or {})) for p in profiles]) if profiles else set()
    metrics = {}
    for name in sorted(names):
        groups = [list((p["metrics"][name] or {}).get("samples") or []) for p in profiles]
        est = estimate_floor(groups)
        if est is not None:
            metrics[name] = est
    return store_key(*keys.pop()), {"metrics": metrics, "source": source, "measured_at": measured_at,
                                    "workload": describe_workload(profiles[0]), "processes": len(profiles)}


def save_floor(key: str, record: dict[str, Any], path: str | os.PathLike | None = None) -> Path:
    """Add or replace one floor in the store, atomically."""
    from yoloprof.profiles.io import write_bytes_atomic

    store = load_floors(path)
    store["floors"][key] = record
    p = noise_file(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return write_bytes_atomic(p, json.dumps(store, indent=1, sort_keys=True).encode())
