"""What a timing pass hands to profile assembly, for training and inference alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunResult:
    samples: dict[str, list[float]]  # metric name -> one value per trial
    phase_order: tuple[str, ...]
    workers: int
    phase_timing: str  # how phase wall times were measured (said in the profile)
    flops: float | None = None  # per step (train: fwd+loss+bwd) or per call (infer: forward)
    flop_mix: Any = None  # capture/flops.FlopMix: the same FLOPs by (kind, dtype that ran), for MFU
    latency: dict[str, Any] | None = None
    stages: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)
    # extra profile sections by name ("model", "modules", "hotspots"); None = not measured
    sections: dict[str, Any] = field(default_factory=dict)
    # the warm-up each trial used (capturing/passes/steady_steps.py warmup_section): the profile's config.warmup_used
    warmup: dict[str, Any] | None = None
    # other processes' CPU while the capture ran (capturing/device/cpu_contention.py): the profile's `contention`
    contention: dict[str, Any] | None = None


def phase_timing_name(is_cuda: bool) -> str:
    return "cuda_events" if is_cuda else "perf_counter"
