"""Turn timing-pass samples and the trace analysis into the sections of profile.json."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.passes.run_result import RunResult
from yoloprof.defs.metrics import TRACE_PREFIX
from yoloprof.profiles.model import measured

# One meaning per name in every mode: timing-pass figures are unprefixed, and a trace figure that
# measures time on the host clock (the step, its throughput, a phase's wall time) is always stored
# under a "trace_" name - the profiler slows every op, so these are not the timing pass's values.
# (An infer profile used to hold the traced `forward_wall_ms` where a train profile holds the
# untraced one.)
TRACE_OWN_NAMES = ("step_ms", "img_per_s")
TRACE_OWN_PATTERN = re.compile(r".*_wall_ms")


def is_trace_own(name: str) -> bool:
    """Whether a trace-derived metric must carry the `trace_` prefix (see TRACE_OWN_NAMES)."""
    return name in TRACE_OWN_NAMES or bool(TRACE_OWN_PATTERN.fullmatch(name))


def metrics_from_samples(samples: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Units and directions from the metric registry (MiB for every memory figure)."""
    return {name: measured(name, values) for name, values in samples.items()}


def add_flops(profile: dict[str, Any], flops: float | None, device: DeviceInfo, compute_dtype: str,
              mix: Any = None) -> None:
    """FLOPs per step (counted once), achieved TFLOP/s per trial, and MFU against the peak of the
    dtypes that ran (capturing/device/flop_count.py); `config.mfu_basis` says which peak, or why there is none."""
    if not flops:
        return
    metrics = profile["metrics"]
    per = "step" if profile["kind"] == "train" else "call"
    metrics[f"gflops_per_{per}"] = measured(f"gflops_per_{per}", flops / 1e9)
    step_samples = metrics["step_ms"]["samples"]
    achieved = [flops / (ms / 1e3) / 1e12 for ms in step_samples]
    metrics["achieved_tflops"] = measured("achieved_tflops", achieved)
    if not device.is_cuda:
        return
    peak, basis = mfu_peak(profile["env"], flops, compute_dtype, mix)
    profile["config"]["mfu_basis"] = basis
    if peak:
        metrics["mfu_pct"] = measured("mfu_pct", [100.0 * a / peak for a in achieved])
    else:
        profile["warnings"].append(f"mfu_pct: n/a: {basis['why']}")


def mfu_peak(env: dict[str, Any], flops: float, compute_dtype: str, mix: Any) -> tuple[float | None, dict[str, Any]]:
    """The effective peak of this step's FLOPs on the recorded device, and how it was found."""
    from yoloprof.capturing.device.flop_count import FlopMix, effective_peak
    from yoloprof.defs.gpus import find_gpu

    if mix is None or not mix.by:  # no split: every FLOP at the capture's dtype
        mix = FlopMix(flops, {("conv", compute_dtype): flops})
    cap = env.get("compute_capability")
    capability = tuple(int(x) for x in str(cap).split(".")) if cap else None
    gpu = find_gpu(env.get("device_name", ""), capability, env.get("sm_count"))  # type: ignore[arg-type]
    tf32 = {k: bool(env.get(k)) for k in ("cudnn_allow_tf32", "matmul_allow_tf32")}
    peak, parts, why = effective_peak(mix, gpu, tf32)
    basis = {"gpu": gpu.entry.key if gpu else None, "mig": gpu.mig if gpu else None,
             "peak_tflops": peak, "parts": parts, "why": why}
    return peak, basis


def phases_from_run(run: RunResult) -> list[dict[str, Any]]:
    import statistics

    rows = []
    for phase in run.phase_order:
        key = f"{phase}_wall_ms" if f"{phase}_wall_ms" in run.samples else f"{phase}_ms"
        values = run.samples.get(key) or []
        rows.append({"phase": phase, "wall_ms_per_step": statistics.fmean(values) if values else None,
                     "device_ms_per_step": None, "kernels_per_step": None, "ops_per_step": None})
    return rows


def merge_trace_sections(profile: dict[str, Any], trace_path: Path, name: str | None = None) -> None:
    """Fill kernels, ops, categories and the trace-derived phase figures from our own trace
    (`name`: the file name it will have beside the profile, when it is read from a staging name)."""
    from yoloprof.traces.analyze import analyze_trace_file

    sections = analyze_trace_file(trace_path).profile_sections()
    metrics = profile["metrics"]
    for metric, entry in sections.get("metrics", {}).items():  # not `name`: that is the file's
        if metric in metrics or is_trace_own(metric):
            metrics[f"{TRACE_PREFIX}{metric}"] = entry
        else:
            metrics[metric] = entry
    for key in ("kernels", "ops", "ops_by_shape", "categories"):
        profile[key] = sections.get(key) or []
    by_phase = {row["phase"]: row for row in sections.get("phases", [])}
    for row in profile["phases"]:
        traced = by_phase.pop(row["phase"], None)
        if traced:
            for field in ("device_ms_per_step", "kernels_per_step", "ops_per_step"):
                row[field] = traced.get(field)
    # Phases the trace saw that the timing pass has no wall figure for (e.g. "other").
    for row in by_phase.values():
        profile["phases"].append({**row, "wall_ms_per_step": None})
    trace = dict(sections.get("trace") or {})
    trace["file"] = name or trace_path.name
    profile["trace"] = trace
    profile["warnings"].extend(sections.get("warnings", []))
