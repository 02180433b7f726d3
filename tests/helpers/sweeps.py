"""Builders of synthetic sweeps in the contract's layout `<project>/sweeps/<name>/<id>/<job_num>/`
(row.parquet + a small profile.json), for the analysis tests (checked by test_analysis_helpers.py)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from yoloprof.profiles.model import SCHEMA
from yoloprof.profiles.rows import write_row

BASE_CONFIG = {"mode": "train", "model": "yolo", "size": "n", "data": "synthetic", "device": "cpu",
               "batch": 4, "imgsz": 320, "precision": "float32", "threads": 1, "workers": 0,
               "warmup": 2, "steps": 5, "runs": None, "repeat": 1}
BETTER = {"step_ms": "lower", "img_per_s": "higher", "peak_mem_mb": "lower", "p50_ms": "lower"}
UNITS = {"step_ms": "ms", "img_per_s": "img/s", "peak_mem_mb": "MiB", "p50_ms": "ms"}


def group_hash(config: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps({k: v for k, v in sorted(config.items()) if k not in ("trial", "seed")},
                                   default=str).encode()).hexdigest()[:16]


def _profile(config: dict, metrics: dict[str, list[float]], env: dict) -> dict[str, Any]:
    step = float(np.mean(metrics.get("step_ms", [10.0])))
    return {
        "schema": SCHEMA, "kind": config["mode"], "tool": {"name": "yoloprof", "version": "0"},
        "created_at": "2024-01-01T00:00:00Z", "config": config, "env": env,
        "metrics": {m: {"value": float(np.mean(v)), "unit": UNITS.get(m, ""), "better": BETTER.get(m),
                        "samples": [float(x) for x in v], "std": None, "n": len(v)} for m, v in metrics.items()},
        "latency": None, "stages": None,
        "phases": [{"phase": p, "wall_ms_per_step": step * f, "device_ms_per_step": 0.0,
                    "kernels_per_step": 0, "ops_per_step": 10} for p, f in
                   (("forward", 0.35), ("backward", 0.5), ("optimizer", 0.1), ("dataload", 0.05))],
        "categories": [{"category": c, "device_ms_per_step": step * f, "pct": 100 * f} for c, f in
                       (("gemm/conv", 0.6), ("elementwise", 0.25), ("norm/reduction", 0.15))],
        "kernels": [{"name": f"k{i}", "short_name": f"k{i}", "category": "gemm/conv", "tensorcore": False,
                     "phase": "forward", "ms_per_step": step / (i + 2), "pct": 10.0, "count_per_step": 1}
                    for i in range(3)],
        "ops": [{"name": "aten::conv2d", "phase": "forward", "self_ms_per_step": step / 3,
                 "total_ms_per_step": step / 2, "count_per_step": 10}],
        "verdict": None, "trace": None, "warnings": [],
    }


def write_job(sweep: Path, job_num: int, config: dict[str, Any], metrics: dict[str, list[float]] | None, *,
              status: str = "ok", error: str | None = None, trial: int = 0, profile: bool = True,
              env: dict[str, str] | None = None, overrides: list[str] | None = None,
              extra: dict[str, Any] | None = None) -> Path:
    """One job folder with its row (and profile.json when ok and asked for). The row's Hydra
    overrides are `overrides`, else batch plus every key that differs from BASE_CONFIG (what a
    sweep over those keys records)."""
    if overrides is None:
        overrides = [f"batch={config['batch']}"] + [f"{k}={v}" for k, v in config.items()
                                                    if k != "batch" and BASE_CONFIG.get(k) != v]
    env = {"torch_version": "2.13.0", "device_name": "cpu", **(env or {})}
    job = sweep / str(job_num)
    (job / ".hydra").mkdir(parents=True, exist_ok=True)
    cfg = {**config, "trial": trial}
    row: dict[str, Any] = {"sweep_name": "test", "sweep_id": sweep.name, "job_num": job_num,
                           "config_hash": group_hash(cfg) + f"-{trial}", "group_hash": group_hash(config),
                           "status": status, "error": error, "wall_s": 1.0, **config, "trial": trial,
                           "overrides": json.dumps(overrides + [f"trial={trial}"]), "launcher": "basic",
                           "threads": 2, "python_version": "3.11", "hostname": "h",
                           "profile_path": f"{job_num}/profile.json" if status == "ok" and profile else None, **env,
                           **(extra or {})}
    for m in ("step_ms", "img_per_s", "peak_mem_mb", "p50_ms"):
        vals = (metrics or {}).get(m)
        row[m] = float(np.mean(vals)) if vals else None
        row[f"{m}_samples"] = [float(v) for v in vals] if vals else None
    write_row(job / "row.parquet", row)
    if status == "ok" and profile:
        (job / "profile.json").write_text(json.dumps(_profile(cfg, metrics or {}, env)))
    return job


def lognormal(rng: np.random.Generator, median: float, sigma: float, n: int) -> list[float]:
    return rng.lognormal(math.log(median), sigma, n).tolist()


def make_sweep(root: Path, configs: list[dict[str, Any]], sample: Callable[[dict, np.random.Generator], dict],
               *, trials: int = 5, repeat_samples: bool = False, seed: int = 0, name: str = "test") -> Path:
    """A sweep folder with every config in `configs` (overrides of BASE_CONFIG). With
    repeat_samples, each config is one job holding `trials` samples; else `trials` jobs of one
    sample each, trial outermost (interleaved, as the sweep engineer recommends)."""
    sweep = root / "sweeps" / name / "20240101-000000-abcd"
    rng = np.random.default_rng(seed)
    job = 0
    full = [{**BASE_CONFIG, **c} for c in configs]
    if repeat_samples:
        for c in full:
            write_job(sweep, job, {**c, "repeat": trials}, sample(c, rng) | {})
            job += 1
        return sweep
    for t in range(trials):
        for c in full:
            one = {m: v[:1] for m, v in sample(c, rng).items()}
            write_job(sweep, job, c, one, trial=t)
            job += 1
    return sweep


def batch_truth(c: dict, rng: np.random.Generator, n: int = 1, sigma: float = 0.02) -> dict[str, list[float]]:
    """Known truth: batch 8 is 10% faster per image than batch 4; batch 16 the same as batch 8."""
    step = {4: 40.0, 8: 80.0 / 1.10, 16: 160.0 / 1.10}[c["batch"]]
    s = lognormal(rng, step, sigma, n)
    return {"step_ms": s, "img_per_s": [c["batch"] * 1000 / x for x in s],
            "peak_mem_mb": [100.0 * c["batch"]] * n}
