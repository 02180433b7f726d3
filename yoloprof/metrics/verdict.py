"""What bounds this step or call? DESIGN.md section 6, as ordered rules over a profile dict.

Why rules over the profile (not over the trace): the same verdict must come out of a capture's
profile.json, a foreign trace and a profile read back months later, so every input is a number
the profile already shows, and each verdict carries those numbers as `evidence`. Thresholds are
data (`THRESHOLDS`); the first rule that fires wins; missing data gives "unknown", never a guess.

Rule order. Training on a GPU: memory pressure > dataloader > device-bound (communication when
collectives carry most device time) > host/launch-bound. Inference: preprocess/postprocess
dominating > then as training. Device-bound with collectives (NCCL/RCCL) as the largest category of
device time is communication-bound. CPU: dataloader or pre/postprocess dominating > allocator churn >
framework overhead > compute-bound.

Rules weigh time, never counts: thousands of cheap casts beside a few heavy convolutions are still
compute-bound, because the share of op self time in tiny ops is small even where their mean per-call
time is tiny. Each verdict's evidence names the ops or kernels that carry the time. Every rule is
validated on workloads built to have that bottleneck (tests/helpers/verdicts/).
"""

from __future__ import annotations

import re
from typing import Any, Callable

THRESHOLDS: dict[str, float] = {
    # cudaMalloc/cudaFree (or hip*) calls per steady-state step: the caching allocator should
    # serve every request from its pool; repeated driver allocations mean it is thrashing.
    "malloc_calls_per_step": 1.0,
    # Share of op self time spent in the allocator's own ops (aten::empty & co.) from which
    # allocation churn, not the arithmetic, is what the step pays for. A time, not a count of
    # allocator calls: a CPU training step makes 30,249 of them ([memory] events) in 4.4% of its
    # op time, which is no churn (issue 36); the count is the rule's evidence.
    "alloc_op_time_share": 0.30,
    "dataload_share": 0.20,           # dataload wall / step wall
    "device_util_pct": 80.0,          # at or above: device-bound, below: host/launch-bound
    "stage_share": 0.35,              # inference pre/postprocess share of the call
    "tiny_op_us": 10.0,               # an op name whose self time per call is below this is "tiny"
    "tiny_op_time_share": 0.50,       # share of op self time in tiny ops from which overhead dominates
    "small_kernel_us": 20.0,          # a kernel name whose mean duration is below this is "small"
    "small_kernel_time_share": 0.50,  # share of kernel time in small kernels: launch-bound wording
}

# Ops that are the allocator itself rather than arithmetic on the memory they return.
ALLOC_OPS = re.compile(r"^aten::(empty|empty_strided|empty_like|new_empty|new_empty_strided|resize_)$")
TOP_NAMES = 3  # how many ops / kernels the evidence names

Verdict = dict[str, Any]
Rule = Callable[["Facts"], "Verdict | None"]


def _device_kind(value: object) -> str | None:
    """"cpu" or "gpu" for a recorded device, through the one device parser (config/device_spec.py);
    env.device_type may also hold another accelerator's type ("xpu", "mps"), which counts as "gpu"."""
    from yoloprof.config.device_spec import is_auto, parse_device
    from yoloprof.errors import UsageError

    if value is None or value == "" or is_auto(value):  # `auto` names no device of the recorded run
        return None
    try:
        return "gpu" if parse_device(value).is_cuda else "cpu"
    except UsageError:  # not a --device spelling: a torch device type such as "xpu" or "mps"
        return None if not isinstance(value, str) else "cpu" if value.lower() == "cpu" else "gpu"


class Facts:
    """The numbers rules read, pulled once from the profile with None for anything missing."""

    def __init__(self, profile: dict[str, Any]) -> None:
        self.profile = profile
        self.metrics = profile.get("metrics") or {}
        self.phases = {p.get("phase"): p for p in profile.get("phases") or [] if isinstance(p, dict)}
        self.categories = [c for c in profile.get("categories") or [] if isinstance(c, dict)]
        self.stages = {s.get("stage"): s for s in profile.get("stages") or [] if isinstance(s, dict)}

    def m(self, name: str) -> float | None:
        entry = self.metrics.get(name)
        value = entry.get("value") if isinstance(entry, dict) else None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def phase_wall(self, phase: str) -> float | None:
        value = self.m(f"{phase}_wall_ms")
        if value is None and phase in self.phases:
            value = self.phases[phase].get("wall_ms_per_step")
        return value

    @property
    def device_type(self) -> str | None:
        for section in ("env", "config"):
            data = self.profile.get(section) or {}
            for key in ("device_type", "device"):
                kind = _device_kind(data.get(key))
                if kind:
                    return kind
        if self.m("device_util_pct") is not None or self.m("kernels_per_step") is not None:
            return "gpu"
        return None

    @property
    def is_infer(self) -> bool:
        return (self.profile.get("kind") == "infer" or bool(self.stages)
                or "preprocess" in self.phases or "postprocess" in self.phases)

    def stage_ms(self, stage: str) -> float | None:
        if stage in self.stages:
            ms = self.stages[stage].get("ms")
            return float(ms) if isinstance(ms, (int, float)) else None
        return self.phase_wall(stage)


def _v(bound: str, why: str, **evidence: Any) -> Verdict:
    return {"bound": bound, "why": why,
            "evidence": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in evidence.items()}}


def rule_memory(f: Facts) -> Verdict | None:
    """Driver allocations in steady state (the caching allocator missing its pool), else
    allocation churn by time (`rule_alloc_churn`)."""
    mallocs = f.m("malloc_calls_per_step")
    section = f.profile.get("trace")
    trace = section if isinstance(section, dict) else {}
    if trace.get("whole_trace"):
        mallocs = None  # no steady-state steps: driver allocations may be warm-up
    if mallocs is not None and mallocs >= THRESHOLDS["malloc_calls_per_step"]:
        return _v("memory", f"{mallocs:.1f} cudaMalloc/cudaFree calls per step: the caching allocator "
                  "is thrashing (memory pressure)", malloc_calls_per_step=mallocs,
                  threshold=THRESHOLDS["malloc_calls_per_step"])
    return rule_alloc_churn(f)


def rule_dataloader(f: Facts) -> Verdict | None:
    step, load = f.m("step_ms"), f.phase_wall("dataload")
    if not step or load is None:
        return None
    share = load / step
    if share >= THRESHOLDS["dataload_share"]:
        return _v("dataloader", f"data loading takes {100 * share:.0f}% of the step",
                  dataload_wall_ms=load, step_ms=step, share=share, threshold=THRESHOLDS["dataload_share"])
    return None


def rule_stages(f: Facts) -> Verdict | None:
    fwd = f.stage_ms("forward")
    parts = {s: f.stage_ms(s) for s in ("preprocess", "postprocess")}
    total = sum(v for v in (fwd, *parts.values()) if v is not None)
    if not total:
        return None
    for stage, ms in sorted(parts.items(), key=lambda kv: -(kv[1] or 0.0)):
        if ms is None:
            continue
        share = ms / total
        if ms >= (fwd or 0.0) and share >= THRESHOLDS["stage_share"]:
            return _v(stage, f"{stage} takes {100 * share:.0f}% of the call, at least as long as forward",
                      **{f"{stage}_ms": ms, "forward_ms": fwd, "share": share,
                         "threshold": THRESHOLDS["stage_share"]})
    return None


def _top_category(f: Facts) -> dict[str, Any] | None:
    rows = [c for c in f.categories if isinstance(c.get("device_ms_per_step"), (int, float))]
    return max(rows, key=lambda c: c["device_ms_per_step"]) if rows else None


def small_kernel_split(f: Facts) -> dict[str, Any] | None:
    """Kernel time per step in kernels whose mean duration is below `small_kernel_us`, one row per
    kernel name (phases merged); copies and fills are not kernels the host launches one by one."""
    merged: dict[str, list[float]] = {}
    for k in f.profile.get("kernels") or []:
        if isinstance(k, dict) and isinstance(k.get("name"), str) and k.get("category") != "memcpy/memset":
            row = merged.setdefault(k.get("short_name") or k["name"], [0.0, 0.0])
            row[0] += _num(k.get("ms_per_step"))
            row[1] += _num(k.get("count_per_step"))
    total = sum(ms for ms, _ in merged.values())
    if total <= 0:
        return None
    small = [(name, ms) for name, (ms, n) in merged.items()
             if n > 0 and 1000.0 * ms / n < THRESHOLDS["small_kernel_us"]]
    return {"share": sum(ms for _, ms in small) / total, "kernels": _named_shares(small, total),
            "top": _named_shares([(name, ms) for name, (ms, _) in merged.items()], total)}


def rule_device_or_host(f: Facts) -> Verdict | None:
    util = f.m("device_util_pct")
    if util is None:
        return None
    launches, mean_k = f.m("launches_per_step"), f.m("mean_kernel_us")
    kernels = small_kernel_split(f)
    if util >= THRESHOLDS["device_util_pct"]:
        top = _top_category(f)
        name = top["category"] if top else "unknown"
        pct = top.get("pct") if top else None
        named = f" ({_names(kernels['top'])})" if kernels else ""
        if name == "communication":
            return _v("communication", f"the device is busy {util:.0f}% of the step and collectives are "
                      f"its largest share ({pct:.0f}% of device time{named})", device_util_pct=util,
                      top_category=name, top_category_pct=pct, top_kernels=kernels["top"] if kernels else None,
                      threshold=THRESHOLDS["device_util_pct"])
        return _v("device", f"the device is busy {util:.0f}% of the step; most device time is {name}{named}",
                  device_util_pct=util, top_category=name, top_category_pct=pct,
                  top_kernels=kernels["top"] if kernels else None, threshold=THRESHOLDS["device_util_pct"])
    share = kernels["share"] if kernels else None
    small = share is not None and share >= THRESHOLDS["small_kernel_time_share"]
    why = (f"the device is idle {100 - util:.0f}% of the step"
           + (f"; {launches:.0f} launches per step" if launches is not None else "")
           + (f", {100 * share:.0f}% of kernel time in kernels under {THRESHOLDS['small_kernel_us']:g} us"
              if share is not None else "")
           + (f" ({_names(kernels['kernels'])}): launch-bound (kernels shorter than launching them)"
              if small and kernels else ": host-bound (the host does not keep the device fed)"))
    return _v("host", why, device_util_pct=util, launches_per_step=launches, mean_kernel_us=mean_k,
              small_kernel_time_share=share, small_kernels=kernels["kernels"] if kernels else None,
              launch_bound=small, host_overhead_ms=f.m("host_overhead_ms"),
              threshold=THRESHOLDS["device_util_pct"])


def _ops(f: Facts) -> list[tuple[str, float, float]]:
    """(name, self ms per step, calls per step) per op name, phases merged: a per-call cost is a
    property of the op, not of the phase it ran in."""
    merged: dict[str, list[float]] = {}
    for o in f.profile.get("ops") or []:
        if not isinstance(o, dict) or not isinstance(o.get("name"), str):
            continue
        row = merged.setdefault(o["name"], [0.0, 0.0])
        row[0] += _num(o.get("self_ms_per_step"))
        row[1] += _num(o.get("count_per_step"))
    return [(name, ms, n) for name, (ms, n) in merged.items()]


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _named_shares(rows: list[tuple[str, float]], total: float) -> list[dict[str, Any]]:
    """The names that carry the time, for the evidence: [{name, pct}] of the biggest rows."""
    top = sorted(rows, key=lambda r: -r[1])[:TOP_NAMES]
    return [{"name": name, "pct": round(100.0 * ms / total, 1)} for name, ms in top if ms > 0]


def op_time_split(f: Facts) -> dict[str, Any] | None:
    """Op self time per step split into allocator ops, tiny ops (per-call self time below
    `tiny_op_us`) and the rest; None without ops."""
    ops = _ops(f)
    total = sum(ms for _, ms, _ in ops)
    if total <= 0:
        return None
    tiny_us = THRESHOLDS["tiny_op_us"]
    alloc = [(n, ms) for n, ms, _ in ops if ALLOC_OPS.match(n)]
    tiny = [(n, ms) for n, ms, c in ops if c > 0 and 1000.0 * ms / c < tiny_us and not ALLOC_OPS.match(n)]
    calls = sum(c for _, _, c in ops)
    return {"total_ms": total, "ops_per_step": calls,
            "alloc_share": sum(ms for _, ms in alloc) / total, "alloc_ops": _named_shares(alloc, total),
            "tiny_share": sum(ms for _, ms in tiny) / total, "tiny_ops": _named_shares(tiny, total),
            "top_ops": _named_shares([(n, ms) for n, ms, _ in ops], total)}


def _names(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['name']} {r['pct']:.0f}%" for r in rows) or "none"


def rule_alloc_churn(f: Facts) -> Verdict | None:
    """The allocator's own ops hold at least `alloc_op_time_share` of op self time; the allocator
    calls per step (`[memory]` events, when recorded) are evidence, never the trigger."""
    split = op_time_split(f)
    if split is None or split["alloc_share"] < THRESHOLDS["alloc_op_time_share"]:
        return None
    return _v("memory", f"allocation churn: the allocator's own ops take {100 * split['alloc_share']:.0f}% "
              f"of op time ({_names(split['alloc_ops'])})" + _calls(f.m("alloc_calls_per_step")),
              alloc_op_time_share=split["alloc_share"],
              alloc_ops=split["alloc_ops"], alloc_calls_per_step=f.m("alloc_calls_per_step"),
              threshold=THRESHOLDS["alloc_op_time_share"])


def _calls(allocs: float | None) -> str:
    return "" if allocs is None else f"; {allocs:.0f} allocator calls per step"


def rule_cpu(f: Facts) -> Verdict | None:
    split = op_time_split(f)
    if split is not None and split["tiny_share"] >= THRESHOLDS["tiny_op_time_share"]:
        return _v("framework-overhead",
                  f"{100 * split['tiny_share']:.0f}% of op time is in ops under {THRESHOLDS['tiny_op_us']:g} us "
                  f"per call ({_names(split['tiny_ops'])}; {split['ops_per_step']:.0f} ops per step): the "
                  "framework's per-op overhead dominates", tiny_op_time_share=split["tiny_share"],
                  ops_per_step=split["ops_per_step"], tiny_ops=split["tiny_ops"],
                  tiny_op_us=THRESHOLDS["tiny_op_us"], threshold=THRESHOLDS["tiny_op_time_share"])
    if split is None:
        return _v("compute", "CPU compute-bound: no input or pre/postprocess stage dominates (the profile "
                  "has no ops to name)", step_ms=f.m("step_ms"))
    return _v("compute", f"CPU compute-bound: {_names(split['top_ops'])} of op time; no input or "
              "pre/postprocess stage dominates", step_ms=f.m("step_ms"), top_ops=split["top_ops"],
              tiny_op_time_share=split["tiny_share"], ops_per_step=split["ops_per_step"])


def rule_no_kernels(f: Facts) -> Verdict | None:
    kernels = f.m("kernels_per_step")
    if f.device_type == "gpu" and not kernels:
        return _v("unknown", "a GPU run without kernels in the trace (the CUDA/HIP tracer did not "
                  "attach): no device figures to judge from", kernels_per_step=kernels)
    return None


def decide(profile: dict[str, Any]) -> Verdict | None:
    """The first rule that fires, or None when the profile has no timing at all."""
    if not isinstance(profile, dict):
        return None
    f = Facts(profile)
    if f.m("step_ms") is None and not f.stages and f.m("p50_ms") is None:
        return None
    cpu = f.device_type == "cpu"
    rules: list[Rule]
    if cpu:
        rules = ([rule_stages, rule_dataloader, rule_alloc_churn, rule_cpu] if f.is_infer
                 else [rule_dataloader, rule_alloc_churn, rule_cpu])
    elif f.is_infer:
        rules = [rule_no_kernels, rule_stages, rule_device_or_host]
    else:
        rules = [rule_no_kernels, rule_memory, rule_dataloader, rule_device_or_host]
    for rule in rules:
        verdict = rule(f)
        if verdict is not None:
            return verdict
    return _v("unknown", "not enough data in the profile to judge what bounds it",
              step_ms=f.m("step_ms"), device_util_pct=f.m("device_util_pct"))
