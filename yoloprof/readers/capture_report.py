"""The data of `yoloprof report`: one capture or trace, every view of it in one dict.

Overview (the summary), GPU metrics and the utilisation timeline, per-step rows, the plugin's step
breakdown and overlap, kernels (by name and by launch), ops, the memory timeline, modules,
phases and recommendations. Views that need the raw trace (`readers.detail`) say n/a with the
reason when it is not there; the HTML renderer (`render.capture_html`) only lays this out.
"""

from __future__ import annotations

import os
from typing import Any

from yoloprof.errors import UsageError


def compute_capture_report(path: str | os.PathLike, profile: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every view of the capture at `path`; `profile`: its already loaded profile (else read)."""
    from yoloprof.readers.advice import recommendations
    from yoloprof.readers.detail import NO_TRACE, read_detail
    from yoloprof.readers.kernels import compute_kernels
    from yoloprof.readers.load import load_any
    from yoloprof.readers.modules import compute_modules
    from yoloprof.readers.ops import compute_ops
    from yoloprof.readers.phases import compute_phases
    from yoloprof.readers.steps import compute_steps
    from yoloprof.readers.summary import compute_summary

    profile = load_any(path) if profile is None else profile
    detail = read_detail(path, profile)
    gpu_steps = detail["gpu"]["steps"] if detail else None
    try:
        modules = compute_modules(profile) if profile.get("modules") else None
    except UsageError:
        modules = None
    return {
        "source": str(path),
        "summary": compute_summary(profile),
        "steps": compute_steps(profile, gpu_steps),
        "detail": detail,
        "detail_na": None if detail else NO_TRACE,
        "kernels": compute_kernels(profile, top=25),
        "ops": compute_ops(profile, top=25),
        "phases": compute_phases(profile),
        "modules": modules,
        "modules_na": None if modules else "no per-module timing in this capture (yoloprof records "
                      "it for its own captures; a foreign trace has none)",
        "advice": recommendations(profile, detail),
    }
