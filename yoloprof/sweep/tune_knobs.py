"""The knobs `yoloprof tune` tries, as data: name (== its Hydra key and settings field), levels,
the baseline level, the modes it applies to, and which of its levels apply on this device and torch.

The levels come from their one home (config/knobs.py, config/capture_settings.py); what is here is
only what tune needs on top: the baseline it compares with and the checks that leave out a level
that cannot apply before anything runs (`reduce-overhead` without CUDA graphs, `fused` where torch
has no fused kernels for the device, `bfloat16` where the CPU/GPU has no bf16). A knob whose setting
this build does not have is planned as a row "not applicable: this yoloprof has no setting <name>".
A level that passes these checks and still fails in its jobs (a compile error, an op ONNX cannot
export) is found from its rows (analysis/tune_rows.py), whatever the exception.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Callable

from yoloprof.config import knobs as table
from yoloprof.config.device_spec import parse_device
from yoloprof.errors import UsageError

BOTH = ("train", "infer")
DEFAULT_BUDGET_S = 300.0  # `yoloprof tune --budget`: seconds for every sweep of a run, the confirm one included


@dataclass(frozen=True)
class Knob:
    name: str                   # the Hydra key and settings field (`precision=bfloat16`)
    levels: tuple[str, ...]     # every level but the baseline, in the order they are tried
    baseline: str               # what the baseline runs ("" = the CLI's value: threads)
    modes: tuple[str, ...]      # the modes where it means something
    what: str                   # one line for docs and --help


def _from_table(row: table.Knob) -> Knob:
    """A knob of the settings' table (config/knobs.py): its levels, default and modes from there."""
    return Knob(row.name, row.levels[1:], row.default, row.modes, row.applies_to)


# the table's knobs, then the two settings that are knobs to tune as well
KNOBS: tuple[Knob, ...] = (
    *(_from_table(row) for row in table.KNOBS),
    Knob("precision", ("bfloat16", "float16"), table.REFERENCE_PRECISION, BOTH, "autocast dtype of the step"),
    Knob("threads", (), "", BOTH, "intra-op CPU threads (levels from the usable CPUs)"),
)
BY_NAME = {k.name: k for k in KNOBS}
DEFAULT_ORDER = tuple(k.name for k in KNOBS)


def _cuda(device: str) -> bool:
    return parse_device(device).is_cuda


def _module(name: str) -> Callable[[str], str | None]:
    def check(device: str) -> str | None:
        return None if importlib.util.find_spec(name) is not None else f"{name} is not installed"
    return check


def _cuda_only(why: str) -> Callable[[str], str | None]:
    def check(device: str) -> str | None:
        return None if _cuda(device) else f"{why}: CUDA devices only"
    return check


def _bf16(device: str) -> str | None:
    import torch

    if _cuda(device):
        ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    else:
        ok = bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return None if ok else f"no bfloat16 arithmetic on {device}"


def _fused(device: str) -> str | None:
    from torch.optim import optimizer

    supported = getattr(optimizer, "_get_fused_kernels_supported_devices", lambda: ["cuda"])()
    kind = parse_device(device).kind
    return None if kind in supported else f"this torch has no fused optimizer kernels for {kind}"


# (knob, level) -> a check of the device: None applies, else the one-line reason it cannot
# (the CUDA-graph levels from the settings' table, config/knobs.py CUDA_ONLY: what a capture refuses)
LEVEL_CHECKS: dict[tuple[str, str], Callable[[str], str | None]] = {
    **{(knob, level): _cuda_only(f"{knob}={level} uses CUDA graphs")
       for knob, levels in table.CUDA_ONLY.items() for level in levels},
    ("runtime", "onnxruntime"): _module("onnxruntime"),
    ("runtime", "openvino"): _module("openvino"),
    ("optimizer_impl", "fused"): _fused,
    ("precision", "float16"): _cuda_only("float16 autocast"),
    ("precision", "bfloat16"): _bf16,
}


@dataclass
class KnobPlan:
    """What tune will try of one knob: its baseline level, the levels to run, and those left out."""

    name: str
    baseline: str
    levels: list[str] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)  # level ("" = the whole knob) -> why


def thread_levels(baseline: int, cpus: int) -> list[str]:
    """1, half and all of the usable CPUs, less the baseline's count."""
    return [str(n) for n in sorted({1, max(1, cpus // 2), max(1, cpus)}) if n != baseline]


def plan_knobs(names: list[str], mode: str, device: str, *, threads: int, cpus: int,
               has_setting: Callable[[str], bool],
               checks: dict[tuple[str, str], Callable[[str], str | None]] | None = None) -> list[KnobPlan]:
    """One plan per named knob, in the given order (knobs of another mode are left out silently:
    `runtime` in a training tune means nothing, it is not a failure)."""
    checks = LEVEL_CHECKS if checks is None else checks
    out = []
    for name in names:
        knob = BY_NAME[name]
        if mode not in knob.modes:
            continue
        if name == "threads":
            plan = KnobPlan(name, str(threads), thread_levels(threads, cpus))
        else:
            plan = KnobPlan(name, knob.baseline, list(knob.levels))
        if not has_setting(name):
            plan.not_applicable[""] = f"this yoloprof has no setting {name}"
            plan.levels = []
        for level in list(plan.levels):
            why = checks[(name, level)](device) if (name, level) in checks else None
            if why:
                plan.levels.remove(level)
                plan.not_applicable[level] = why
        out.append(plan)
    return out


def parse_knobs(text: str | None) -> list[str]:
    """`--knobs compile,threads` -> names, checked; None = every knob."""
    if not text:
        return list(DEFAULT_ORDER)
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in BY_NAME]
    if bad:
        raise UsageError(f"--knobs: unknown knob {bad[0]!r}; knobs: {', '.join(DEFAULT_ORDER)}")
    return list(dict.fromkeys(names))


def advice_first(names: list[str], advised: list[str]) -> list[str]:
    """The knobs a profile's advice names first (in the advice's order), then the others."""
    first = [n for n in advised if n in names]
    return list(dict.fromkeys(first + names))
