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


def captured_at(base_ns: Any, first_ts_us: float | None) -> str | None:
    """The trace's wall-clock time at its first event (`profiles.captured`): Kineto writes event
    times in µs after `baseTimeNanoseconds`, so the capture time is base + the first `ts`; None
    without a base (the time the file is read is not when it was captured)."""
    if isinstance(base_ns, bool) or not isinstance(base_ns, (int, float)) or not base_ns > 0:
        return None
    seconds = base_ns / 1e9 + (first_ts_us or 0.0) / 1e6
    try:
        return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):  # a time no calendar holds: not a capture time
        return None


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
    env["captured_at"] = captured_at(meta.get("baseTimeNanoseconds"), analysis.t0_us)
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
