"""A kind "trace" profile from anyone's Kineto trace: what `load_any` gives the readers.

The env is what the trace itself says (devices from `deviceProperties`, `distributedInfo`,
schema and CUPTI versions); config is empty because no yoloprof capture produced it.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from yoloprof.metrics.verdict import decide
from yoloprof.profiles.model import empty_profile
from yoloprof.traces.analyze import TraceAnalysis, analyze_trace_bytes

_ENV_KEYS = ("schemaVersion", "distributedInfo", "cupti_version", "cuda_runtime_version",
             "cuda_driver_version", "trace_id", "host_name", "hostname", "record_shapes",
             "profile_memory")


def trace_env(analysis: TraceAnalysis) -> dict[str, Any]:
    meta = analysis.meta
    listed = meta.get("deviceProperties")
    props = [p for p in listed if isinstance(p, dict)] if isinstance(listed, list) else []
    names = sorted({str(p.get("name")) for p in props if p.get("name")})
    env: dict[str, Any] = {k: meta[k] for k in _ENV_KEYS if k in meta}
    env.update({
        "device_type": ("cuda" if analysis.has_device or analysis.gpu_expected else "cpu"),
        "device_name": names[0] if len(names) == 1 else (", ".join(names) if names else None),
        "device_count": len(props),
        "devices": props,
        "source": "trace",
    })
    base = meta.get("baseTimeNanoseconds")
    if isinstance(base, (int, float)) and base > 0:  # Kineto's wall-clock origin of the trace
        env["captured_at"] = _dt.datetime.fromtimestamp(base / 1e9, _dt.timezone.utc).isoformat(
            timespec="seconds")
    if any("AMD" in n or "Radeon" in n or "Instinct" in n for n in names):
        env["device_vendor"] = "amd"
    elif names:
        env["device_vendor"] = "nvidia"
    return env


def profile_from_analysis(analysis: TraceAnalysis) -> dict[str, Any]:
    profile = empty_profile("trace", env=trace_env(analysis))
    sections = analysis.profile_sections()
    sections.pop("memory", None)
    profile.update(sections)
    profile["verdict"] = decide(profile)
    return profile


def profile_from_trace_bytes(data: bytes, source: str) -> dict[str, Any]:
    """A kind "trace" profile of the trace's steady steps (its leading warm-up steps left out,
    `step_selection.steady_steps`); ProfileError (exit 1) when the bytes are not a usable trace."""
    return profile_from_analysis(analyze_trace_bytes(data, source, steady=True))
