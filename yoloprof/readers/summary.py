"""`yoloprof summary`: the broad reading of one profile, as a JSON-able dict.

Every headline figure is either a number with its unit or absent with the reason it is absent
(a CPU run has no device utilisation): a missing figure printed as 0 would read as a measurement.
"""

from __future__ import annotations

from typing import Any

from yoloprof.readers.steps import compute_steps
from yoloprof.readers._common import (
    HEADLINE, figure, finite, has_device, metric_value, steps_analyzed, thrash_mark,
)

TOP_KERNELS = 5
# Device time figures, each saying what it counts: (metric, label).
DEVICE_TIME: tuple[tuple[str, str], ...] = (
    ("device_busy_ms", "device busy (union of kernels, memcpy, memset)"),
    ("kernel_ms", "kernel time (sum)"),
    ("memcpy_ms", "memcpy time (sum)"),
    ("memset_ms", "memset time (sum)"),
)


def compute_summary(profile: dict) -> dict[str, Any]:
    """The summary of a profile (train, infer or a foreign trace)."""
    kind = profile.get("kind")
    result: dict[str, Any] = {
        "kind": kind,
        "schema": profile.get("schema"),
        "workload": _workload(profile),
        "headline": [figure(profile, name, label) for name, label in HEADLINE],
        "verdict": _verdict(profile),
        "device_time": ([figure(profile, name, label) for name, label in DEVICE_TIME]
                        if has_device(profile) else []),
        "devices": _devices(profile),
        "categories": _categories(profile),
        "top_kernels": _top_kernels(profile),
        "has_device": has_device(profile),
        "latency": None,
        "stages": None,
        "phases": [dict(p) for p in profile.get("phases") or []],
        "trace": _trace_info(profile),
        "warmup": warmup_used(profile),
        "train_recipe": train_recipe(profile),
        "unreliable": thrash_mark(profile),
        "steps": compute_steps(profile),
        "warnings": [str(w) for w in profile.get("warnings") or []],
        "advice": _advice(profile),
    }
    src = profile.get("source")
    if isinstance(src, dict):  # another tool's file (libreyolo's): which file, trace and headline source
        result["source"] = {k: src.get(k) for k in ("schema", "file", "trace", "headline")}
    if kind == "infer" or profile.get("latency"):
        result["latency"] = _latency(profile)
        result["stages"] = _stages(profile)
    return result


def _advice(profile: dict) -> list[dict[str, Any]]:
    """The advice that fires without the trace's detail and names a `yoloprof tune` knob to test it
    (readers/advice.py; `yoloprof report` shows every rule with its evidence)."""
    from yoloprof.readers.advice import recommendations

    try:
        fired = recommendations(profile, None)["recommendations"]
    except Exception:  # noqa: BLE001 - advice never stops a summary
        return []
    return [{"rule": a["rule"], "advice": a["advice"], "try": a["try"]} for a in fired if a.get("try")]


def _sized(model: Any) -> bool:
    from yoloprof.config.capture_settings import sized
    from yoloprof.errors import UsageError

    try:
        return sized(model)
    except UsageError:  # a family this version does not know: its size is shown as recorded
        return True


def _workload(profile: dict) -> dict[str, Any]:
    """The few settings that identify the run, for the title line."""
    cfg = profile.get("config") or {}
    env = profile.get("env") or {}
    keys = ("mode", "model", "size", "batch", "imgsz", "precision", "threads", "device")
    out = {k: cfg[k] for k in keys if cfg.get(k) is not None}
    if "model" in out and not _sized(out["model"]):
        out.pop("size", None)  # a user's model or a family without sizes: `size=n` would say nothing true
    if cfg.get("device_asked"):  # `device` is the one that ran; `auto` chose it (render shows both)
        out["device_asked"] = cfg["device_asked"]
    for k in ("device_name", "torch"):
        if env.get(k):
            out[k] = env[k]
    return out


def train_recipe(profile: dict) -> dict[str, Any] | None:
    """The training step's recipe (docs/workloads.md "The trainer's step") with the amortised step
    where the trainer accumulates gradients; None for a profile without one."""
    recipe = profile.get("train_recipe")
    if not isinstance(recipe, dict):
        return None
    keys = ("source", "optimizer", "optimizer_every", "clip_max_norm", "ema")
    out = {k: recipe.get(k) for k in keys}
    out["groups"] = len(recipe.get("param_groups") or [])
    out["amortised_step_ms"] = metric_value(profile, "amortised_step_ms")
    return out


def warmup_used(profile: dict) -> dict[str, Any] | None:
    """The warm-up each trial used (`config.warmup_used`, docs/steady-state.md) with `state`:
    steady (every trial), not_steady (a trial reached the cap), not_tested (too few measured
    steps), or unknown with a reason (a profile written before steady-state detection). None
    for a foreign trace, which has no warm-up of ours."""
    if profile.get("kind") not in ("train", "infer"):
        return None
    used = (profile.get("config") or {}).get("warmup_used")
    if not isinstance(used, dict) or not isinstance(used.get("steps"), list):
        return {"state": "unknown", "reason": "not recorded (a profile from before steady-state detection)"}
    from yoloprof.config.steady_thresholds import summarize

    most, steady = summarize(used)
    state = {True: "steady", False: "not_steady", None: "not_tested"}[steady]
    return {"state": state, "steps": list(used["steps"]), "steady": list(used.get("steady") or []),
            "most": most, "min": used.get("min"), "max": used.get("max")}


def _verdict(profile: dict) -> dict[str, Any]:
    """The profile's verdict, or an explicit "unknown" with why (never a guess)."""
    v = profile.get("verdict")
    if isinstance(v, dict) and v.get("bound"):
        out = {"bound": str(v["bound"]), "why": str(v.get("why", "")), "evidence": dict(v.get("evidence") or {})}
        if v.get("source") and v["source"] != "yoloprof":  # another tool's verdict: said whose
            out["by"] = f"{v['source']}'s, not yoloprof's"
        return out
    why = "no verdict in this profile"
    if profile.get("kind") == "trace" and not has_device(profile):
        why = "no device kernels and no verdict in this trace"
    return {"bound": "unknown", "why": why, "evidence": {}}


def _devices(profile: dict) -> list[dict[str, Any]]:
    """Per-device busy and utilisation, shown when the trace has more than one device."""
    rows = (profile.get("trace") or {}).get("devices") or []
    rows = [r for r in rows if isinstance(r, dict)]
    return [{"device": r.get("device"), "busy_ms_per_step": finite(r.get("busy_ms_per_step")),
             "util_pct": finite(r.get("util_pct"))} for r in rows] if len(rows) > 1 else []


def _categories(profile: dict) -> list[dict[str, Any]]:
    rows = []
    for c in profile.get("categories") or []:
        ms = finite(c.get("device_ms_per_step"))
        if ms is None:
            continue
        rows.append({"category": c.get("category"), "device_ms_per_step": ms,
                     "pct": finite(c.get("pct"))})
    return sorted(rows, key=lambda r: -r["device_ms_per_step"])


def _top_kernels(profile: dict) -> list[dict[str, Any]]:
    from yoloprof.readers.kernels import by_name, kind_of

    kernels = by_name([k for k in profile.get("kernels") or []
                       if finite(k.get("ms_per_step")) is not None and kind_of(k) == "kernel"])
    kernels.sort(key=lambda k: -k["ms_per_step"])
    keys = ("short_name", "name", "category", "tensorcore", "phase", "ms_per_step", "pct", "count_per_step")
    return [{k: kern.get(k) for k in keys} for kern in kernels[:TOP_KERNELS]]


def _latency(profile: dict) -> dict[str, Any] | None:
    lat = profile.get("latency")
    if isinstance(lat, dict):
        return dict(lat)
    # Fall back on the metrics table (p50_ms...) when the latency section is absent.
    out = {f"{p}_ms": metric_value(profile, f"{p}_ms") for p in ("p50", "p90", "p99")}
    return out if any(v is not None for v in out.values()) else None


def _stages(profile: dict) -> list[dict[str, Any]] | None:
    stages = profile.get("stages")
    if not isinstance(stages, list) or not stages:
        return None
    return [{"stage": s.get("stage"), "ms": finite(s.get("ms")), "share": finite(s.get("share"))}
            for s in stages]


def _trace_info(profile: dict) -> dict[str, Any] | None:
    trace = profile.get("trace")
    if not isinstance(trace, dict):
        return None
    return {"file": trace.get("file"), "steps_analyzed": steps_analyzed(profile),
            "window_ms": finite(trace.get("window_ms"))}
