"""libreyolo's `profile.json` (schema `libreyolo.profile.analysis/v1`) as a yoloprof input, and
libreyolo's metric names as aliases of yoloprof's fields (one home for both).

libreyolo's profilers (`libreyolo.training.profiler`, `libreyolo.profiling.inference`) write a
`profile.json` beside the torch trace they recorded (`profile_trace.json`, named by the file's
`"trace"` key, or null for a `--no-trace` inference profile). Reading one:

- When the trace is there (the path as written, else the same file name beside the profile.json)
  the trace engine reads it: kernels, categories, phases (`step/<phase>` annotations), device
  figures are yoloprof's own definitions, not libreyolo's.
- libreyolo's own measurements that a trace cannot give are taken from the file: the latency
  percentiles (`latency`), the synced stage split (`stages_ms`), throughput (`img_per_s`), the
  configuration (`config`). An inference profile becomes kind `infer`.
- Without the trace, the file's figures are mapped (`FIGURES`); device figures only when it
  saw kernels (libreyolo writes 0 on a CPU run, which yoloprof reads as n/a, never 0), and the
  kernel list is libreyolo's per-phase top 40 (said in a warning). What neither has is n/a with
  the reason `readers._common.na_reason` gives.

This module imports only json/re/os at import time: `get` (the fast path) reads `ALIASES`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable

from yoloprof.errors import ProfileError

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
STAGE_METRICS = {"preprocess": "preprocess_ms", "forward": "forward_ms", "postprocess": "postprocess_ms"}


def looks_like_libreyolo(data: bytes) -> bool:
    """True when the bytes name libreyolo's profile schema."""
    return _MARK.search(data) is not None


def _num(x: Any) -> float | None:
    from yoloprof.readers._common import finite

    return finite(x)


def _trace_path(obj: dict, source: str) -> str | None:
    """The trace the profile.json names: as written, else the same name beside the profile."""
    name = obj.get("trace")
    if not isinstance(name, str) or not name:
        return None
    here = os.path.dirname(os.path.abspath(source))
    for cand in (name, os.path.join(here, name), os.path.join(here, os.path.basename(name))):
        if os.path.isfile(cand):
            return cand
    return None


def profile_from_libreyolo(data: bytes, source: str, load_trace: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """A yoloprof profile dict from a libreyolo profile.json (ProfileError naming the file for a
    version this module does not read or a document that is not libreyolo's); `load_trace` reads
    the trace it names (readers.load.load_any, passed in: load imports this module)."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        got = obj.get("schema") if isinstance(obj, dict) else None
        raise ProfileError(f"{source}: schema {got!r} is not read; yoloprof reads libreyolo's {SCHEMA}")
    trace = _trace_path(obj, source)
    if trace is not None:
        profile = load_trace(trace)
        note = f"read from libreyolo's {os.path.basename(source)}: device, kernel and phase figures from its trace {trace}"
    else:
        profile = _from_figures(obj)
        why = "it names none" if not obj.get("trace") else f"{obj['trace']} is not there"
        note = (f"read from libreyolo's {os.path.basename(source)} without its trace ({why}): "
                "figures are libreyolo's, kernels its per-phase top 40")
    _overlay(profile, obj)
    profile["source"] = {"schema": SCHEMA, "file": str(source), "trace": trace}
    profile.setdefault("warnings", []).insert(0, note)
    return profile


def _from_figures(obj: dict) -> dict[str, Any]:
    from yoloprof.profiles.model import empty_profile, measured

    profile = empty_profile("trace")
    device = bool(_num(obj.get("kernels_per_step")))
    for key, name, factor, device_only in FIGURES:
        v = _num(obj.get(key))
        if v is not None and (device or not device_only):
            profile["metrics"][name] = measured(name, v * factor)
    if device:
        profile["categories"] = [{"category": c.get("name"), "device_ms_per_step": _num(c.get("ms_per_step")),
                                  "pct": _num(c.get("pct"))} for c in obj.get("categories") or []]
        rows = [(p, k) for p, ks in (obj.get("kernels_by_phase") or {}).items() for k in ks]
        rows = rows or [(None, k) for k in obj.get("kernels") or []]
        profile["kernels"] = [{"name": k.get("raw_name") or k.get("kernel"), "short_name": k.get("kernel"),
                               "category": k.get("category"), "tensorcore": k.get("tensorcore"),
                               "phase": p, "kind": "kernel", "ms_per_step": _num(k.get("ms_per_step")),
                               "count_per_step": _num(k.get("count_per_step"))} for p, k in rows]
    stages = obj.get("stages_ms") or {}
    profile["phases"] = [{"phase": p.get("phase"),
                          "wall_ms_per_step": _num(p.get("wall_ms_per_step")) if p.get("wall_ms_per_step")
                          is not None else _num(stages.get(p.get("phase"))),
                          "device_ms_per_step": _num(p.get("gpu_ms_per_step")) if device else None,
                          "kernels_per_step": _num(p.get("kernels_per_step")) if device else None,
                          "ops_per_step": _num(p.get("ops_per_step"))} for p in obj.get("phases") or []]
    if obj.get("bound"):
        profile["verdict"] = {"bound": obj.get("bound"), "why": obj.get("bound_why") or "",
                              "source": "libreyolo"}
    return profile


def _overlay(profile: dict, obj: dict) -> None:
    """libreyolo's own measurements a trace cannot give: latency, stages, throughput, config."""
    from yoloprof.profiles.model import measured

    metrics = profile.setdefault("metrics", {})
    cfg = obj.get("config")
    cfg = cfg if isinstance(cfg, dict) else {}
    profile["config"] = {**{k: v for k, v in cfg.items() if v is not None}, **(profile.get("config") or {})}
    img_s = _num(obj.get("img_per_s"))
    if img_s is not None:
        metrics["img_per_s"] = measured("img_per_s", img_s)
    lat = obj.get("latency") if isinstance(obj.get("latency"), dict) else None
    if obj.get("mode") == "inference" or isinstance(lat, dict):
        profile["kind"] = "infer"
    if lat is not None:
        profile["latency"] = {k: v for k, v in lat.items() if _num(v) is not None}
        for q in ("p50_ms", "p90_ms", "p99_ms"):
            if _num(lat.get(q)) is not None:
                metrics[q] = measured(q, lat[q])
    stages = obj.get("stages_ms")
    if isinstance(stages, dict):
        ms = {s: v for s, v in ((s, _num(v)) for s, v in stages.items()) if v is not None}
        total = sum(ms.values())
        profile["stages"] = [{"stage": s, "ms": v, "share": v / total if total else None} for s, v in ms.items()]
        for s, v in ms.items():
            if s in STAGE_METRICS:
                metrics[STAGE_METRICS[s]] = measured(STAGE_METRICS[s], v)
