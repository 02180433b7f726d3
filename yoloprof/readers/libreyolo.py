"""libreyolo's `profile.json` (schema `libreyolo.profile.analysis/v1`) as a yoloprof input, and
libreyolo's metric names as aliases of yoloprof's fields (one home for both).

libreyolo's profilers (`libreyolo.training.profiler`, `libreyolo.profiling.inference`) write a
`profile.json` beside the torch trace they recorded (`profile_trace.json`, named by the file's
`"trace"` key, or null for a `--no-trace` inference profile). Reading one:

- The trace is read when one belongs to the file (`readers.libreyolo_trace`: beside the
  profile.json first, and checked against the file's window and step count); the trace engine
  reads it: kernels, categories, phases (`step/<phase>` annotations), device figures and the
  verdict are yoloprof's own definitions, not libreyolo's. Which trace was read is said in the
  first warning and kept in `source.trace`.
- The headline (step time, throughput, latency) comes from one source, said in a warning and in
  `source.headline` (`readers.libreyolo_headline`): libreyolo's `--repeat` trials, else the
  trace, else the file.
- libreyolo's own measurements that a trace cannot give are taken from the file: the synced
  stage split (`stages_ms`) and the configuration (`config`). An inference profile becomes kind
  `infer`. The file's metrics block and its libreyolo-only top-level figures are kept in
  `source.metrics` / `source.top` for `get` (`readers.libreyolo_names`).
- Without a trace that belongs (none named, not there, unreadable or truncated, another run's),
  the file's figures are mapped (`FIGURES`) with a warning saying why; device figures only when
  it saw kernels (libreyolo writes 0 on a CPU run, which yoloprof reads as n/a, never 0), the
  kernel list is libreyolo's per-phase top 40, and the verdict is libreyolo's (marked so:
  `verdict.source`). What neither has is n/a with the reason `readers._common.na_reason` gives.

This module imports nothing heavy at import time (json/re/os, `readers._common`): `get` (the
fast path) reads `ALIASES`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from yoloprof.errors import ProfileError, UsageError
from yoloprof.readers._common import finite

SCHEMA = "libreyolo.profile.analysis/v1"
_MARK = re.compile(rb'"schema"\s*:\s*"libreyolo\.profile\.analysis/')

# libreyolo metric name -> (yoloprof field, factor: libreyolo value = yoloprof value x factor).
# `get` accepts the left names and prints the figure in libreyolo's unit (gpu_util a fraction).
ALIASES: dict[str, tuple[str, float]] = {
    "gpu_util": ("device_util_pct", 0.01),
    "latency_p50_ms": ("p50_ms", 1.0),
    "latency_p90_ms": ("p90_ms", 1.0),
    "latency_p99_ms": ("p99_ms", 1.0),
    "nms_ms": ("postprocess_ms", 1.0),
    "throughput_img_s": ("img_per_s", 1.0),
    "bound": ("verdict.bound", 1.0),
    "bound_why": ("verdict.why", 1.0),
    "gpu_busy_ms": ("device_busy_ms", 1.0),
    "cuda_mallocs_per_step": ("malloc_calls_per_step", 1.0),
    "peak_vram_mb": ("peak_mem_mb", 2**20 / 1e6),  # libreyolo: MB (1e6 bytes); yoloprof: MiB
}

MIB_PER_MB = 1e6 / 2**20
# libreyolo profile.json key -> (yoloprof metric, factor, needs device kernels): read when the
# profile.json has no trace beside it.
FIGURES: tuple[tuple[str, str, float, bool], ...] = (
    ("step_ms", "step_ms", 1.0, False),
    ("img_per_s", "img_per_s", 1.0, False),
    ("gpu_util", "device_util_pct", 100.0, True),
    ("gpu_busy_ms_per_step", "device_busy_ms", 1.0, True),
    ("mean_kernel_us", "mean_kernel_us", 1.0, True),
    ("kernels_per_step", "kernels_per_step", 1.0, True),
    ("launches_per_step", "launches_per_step", 1.0, True),
    ("host_overhead_ms_per_step", "host_overhead_ms", 1.0, True),
    ("memcpy_ms_per_step", "memcpy_ms", 1.0, True),
    ("tensorcore_pct", "tensorcore_pct", 1.0, True),
    ("cuda_mallocs_per_step", "malloc_calls_per_step", 1.0, True),
    ("peak_vram_mb", "peak_mem_mb", MIB_PER_MB, False),
)
# libreyolo's top-level keys kept as its own figures (`source.top`): what no yoloprof figure is.
LIBREYOLO_TOP = ("img_per_s", "img_per_s_std", "img_per_s_n", "img_per_s_trials", "step_ms", "gpu_util_raw",
                 "memory_pressure", "dataload_ms", "dataload_frac", "unique_kernels", "bound", "bound_why",
                 "window", "mode")
STAGE_METRICS = {"preprocess": "preprocess_ms", "forward": "forward_ms", "postprocess": "postprocess_ms"}


def looks_like_libreyolo(data: bytes) -> bool:
    """True when the bytes name libreyolo's profile schema."""
    return _MARK.search(data) is not None


def profile_from_libreyolo(data: bytes, source: str, select: Any = None) -> dict[str, Any]:
    """A yoloprof profile dict from a libreyolo profile.json (ProfileError naming the file for a
    version this module does not read or a document that is not libreyolo's). The trace it names
    is read when one belongs to it (`readers.libreyolo_trace`), else the file's own figures;
    `select` (`--steps`/`--window`) chooses steps of that trace (UsageError without one)."""
    from yoloprof.readers.libreyolo_headline import set_headline
    from yoloprof.readers.libreyolo_trace import read_belonging

    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        got = obj.get("schema") if isinstance(obj, dict) else None
        raise ProfileError(f"{source}: schema {got!r} is not read; yoloprof reads libreyolo's {SCHEMA}")
    profile, trace, passed = read_belonging(obj, source, select)
    name = os.path.basename(source)
    why = "; ".join(passed) or ("it names none" if not obj.get("trace") else f"{obj['trace']} is not there")
    if profile is not None:
        notes = [f"read from libreyolo's {name}: device, kernel and phase figures from its trace {trace}"]
    elif select:
        raise UsageError(f"{source}: --steps/--window choose steps of its trace, and none is read ({why})")
    else:
        profile = _from_figures(obj)
        notes = [f"read from libreyolo's {name} without its trace ({why}): figures are libreyolo's, "
                 "kernels its per-phase top 40"]
    _overlay(profile, obj)
    env = profile.setdefault("env", {})
    env["captured_at"] = env.get("captured_at") if trace else None  # the file itself records no time
    profile["source"] = {"schema": SCHEMA, "file": str(source), "trace": trace,
                         "metrics": {k: v for k, v in (obj.get("metrics") or {}).items()
                                     if isinstance(v, (int, float, str, bool)) or v is None},
                         "top": {k: obj[k] for k in LIBREYOLO_TOP if k in obj}}
    notes.append(set_headline(profile, obj, trace))
    profile.setdefault("warnings", [])[:0] = notes
    return profile


def _from_figures(obj: dict) -> dict[str, Any]:
    from yoloprof.profiles.model import empty_profile, measured

    profile = empty_profile("trace")
    device = bool(finite(obj.get("kernels_per_step")))
    for key, name, factor, device_only in FIGURES:
        v = finite(obj.get(key))
        if v is not None and (device or not device_only):
            profile["metrics"][name] = measured(name, v * factor)
    if device:
        profile["categories"] = [{"category": c.get("name"), "device_ms_per_step": finite(c.get("ms_per_step")),
                                  "pct": finite(c.get("pct"))} for c in obj.get("categories") or []]
        rows = [(p, k) for p, ks in (obj.get("kernels_by_phase") or {}).items() for k in ks]
        rows = rows or [(None, k) for k in obj.get("kernels") or []]
        profile["kernels"] = [{"name": k.get("raw_name") or k.get("kernel"), "short_name": k.get("kernel"),
                               "category": k.get("category"), "tensorcore": k.get("tensorcore"),
                               "phase": p, "kind": "kernel", "ms_per_step": finite(k.get("ms_per_step")),
                               "count_per_step": finite(k.get("count_per_step"))} for p, k in rows]
    stages = obj.get("stages_ms") or {}
    profile["phases"] = [{"phase": p.get("phase"),
                          "wall_ms_per_step": finite(p.get("wall_ms_per_step")) if p.get("wall_ms_per_step")
                          is not None else finite(stages.get(p.get("phase"))),
                          "device_ms_per_step": finite(p.get("gpu_ms_per_step")) if device else None,
                          "kernels_per_step": finite(p.get("kernels_per_step")) if device else None,
                          "ops_per_step": finite(p.get("ops_per_step"))} for p in obj.get("phases") or []]
    if obj.get("bound"):
        profile["verdict"] = {"bound": obj.get("bound"), "why": obj.get("bound_why") or "",
                              "source": "libreyolo"}
    return profile


def _overlay(profile: dict, obj: dict) -> None:
    """libreyolo's own measurements a trace cannot give: the stage split and the configuration
    (the headline figures: `readers.libreyolo_headline`)."""
    from yoloprof.profiles.model import measured

    metrics = profile.setdefault("metrics", {})
    cfg = obj.get("config")
    cfg = cfg if isinstance(cfg, dict) else {}
    profile["config"] = {**{k: v for k, v in cfg.items() if v is not None}, **(profile.get("config") or {})}
    if obj.get("mode") == "inference" or isinstance(obj.get("latency"), dict):
        profile["kind"] = "infer"
    stages = obj.get("stages_ms")
    if isinstance(stages, dict):
        ms = {s: v for s, v in ((s, finite(v)) for s, v in stages.items()) if v is not None}
        total = sum(ms.values())
        profile["stages"] = [{"stage": s, "ms": v, "share": v / total if total else None} for s, v in ms.items()]
        for s, v in ms.items():
            if s in STAGE_METRICS:
                metrics[STAGE_METRICS[s]] = measured(STAGE_METRICS[s], v)
