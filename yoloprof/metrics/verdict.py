"""What bounds this step or call? DESIGN.md section 6, as ordered rules over a profile dict.

Why rules over the profile (not over the trace): the same verdict must come out of a capture's
profile.json, a foreign trace and a profile read back months later, so every input is a number
the profile already shows, and each verdict carries those numbers as `evidence`. Thresholds are
data (`THRESHOLDS`); the first rule that fires wins; missing data gives "unknown", never a guess.

Rule order. Training on a GPU: memory pressure > dataloader > device-bound > host/launch-bound.
Inference: preprocess/postprocess dominating > then as training. CPU: dataloader or
pre/postprocess dominating > framework overhead (many tiny ops) > compute-bound.
"""

from __future__ import annotations

from typing import Any, Callable

THRESHOLDS: dict[str, float] = {
    # cudaMalloc/cudaFree (or hip*) calls per steady-state step: the caching allocator should
    # serve every request from its pool; repeated driver allocations mean it is thrashing.
    "malloc_calls_per_step": 1.0,
    # Allocator calls per step ([memory] events) beyond which allocation churn itself is a cost.
    "alloc_calls_per_step": 20000.0,
    "dataload_share": 0.20,           # dataload wall / step wall
    "device_util_pct": 80.0,          # at or above: device-bound, below: host/launch-bound
    "stage_share": 0.35,              # inference pre/postprocess share of the call
    "tiny_op_us": 10.0,               # mean CPU op self time below this = framework overhead
    "small_kernel_us": 20.0,          # mean kernel time below this = launch-bound wording
}

Verdict = dict[str, Any]
Rule = Callable[["Facts"], "Verdict | None"]


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
                value = data.get(key)
                if isinstance(value, str) and value:
                    low = value.lower()
                    return "cpu" if low.startswith("cpu") else "gpu" if low else None
                if isinstance(value, int) and not isinstance(value, bool):
                    return "gpu"
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
    mallocs, allocs = f.m("malloc_calls_per_step"), f.m("alloc_calls_per_step")
    trace = f.profile.get("trace") if isinstance(f.profile.get("trace"), dict) else {}
    if trace.get("whole_trace"):
        mallocs = None  # no steady-state steps: driver allocations may be warm-up
    if mallocs is not None and mallocs >= THRESHOLDS["malloc_calls_per_step"]:
        return _v("memory", f"{mallocs:.1f} cudaMalloc/cudaFree calls per step: the caching allocator "
                  "is thrashing (memory pressure)", malloc_calls_per_step=mallocs,
                  threshold=THRESHOLDS["malloc_calls_per_step"])
    if allocs is not None and allocs >= THRESHOLDS["alloc_calls_per_step"]:
        return _v("memory", f"{allocs:.0f} allocator calls per step: allocation churn",
                  alloc_calls_per_step=allocs, threshold=THRESHOLDS["alloc_calls_per_step"])
    return None


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


def rule_device_or_host(f: Facts) -> Verdict | None:
    util = f.m("device_util_pct")
    if util is None:
        return None
    launches, mean_k = f.m("launches_per_step"), f.m("mean_kernel_us")
    if util >= THRESHOLDS["device_util_pct"]:
        top = _top_category(f)
        name = top["category"] if top else "unknown"
        return _v("device", f"the device is busy {util:.0f}% of the step; most device time is {name}",
                  device_util_pct=util, top_category=name,
                  top_category_pct=top.get("pct") if top else None,
                  threshold=THRESHOLDS["device_util_pct"])
    small = mean_k is not None and mean_k < THRESHOLDS["small_kernel_us"]
    why = (f"the device is idle {100 - util:.0f}% of the step"
           + (f"; {launches:.0f} launches per step" if launches is not None else "")
           + (f" of {mean_k:.1f} us kernels on average" if mean_k is not None else "")
           + (": launch-bound (kernels shorter than launching them)" if small else ": host-bound"))
    return _v("host", why, device_util_pct=util, launches_per_step=launches, mean_kernel_us=mean_k,
              host_overhead_ms=f.m("host_overhead_ms"), threshold=THRESHOLDS["device_util_pct"])


def _mean_op_self_us(f: Facts) -> tuple[float | None, float]:
    ops = [o for o in f.profile.get("ops") or [] if isinstance(o, dict)]
    count = sum(float(o.get("count_per_step") or 0) for o in ops)
    self_ms = sum(float(o.get("self_ms_per_step") or 0) for o in ops)
    return (1000.0 * self_ms / count if count else None), count


def rule_cpu(f: Facts) -> Verdict | None:
    mean_us, count = _mean_op_self_us(f)
    if mean_us is not None and mean_us < THRESHOLDS["tiny_op_us"]:
        return _v("framework-overhead", f"{count:.0f} ops per step with {mean_us:.1f} us mean self time: "
                  "the framework's per-op overhead dominates", ops_per_step=count,
                  mean_op_self_us=mean_us, threshold=THRESHOLDS["tiny_op_us"])
    return _v("compute", "CPU compute-bound: no input or pre/postprocess stage dominates",
              step_ms=f.m("step_ms"), ops_per_step=count or None, mean_op_self_us=mean_us)


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
        rules = [rule_stages, rule_dataloader, rule_cpu] if f.is_infer else [rule_dataloader, rule_cpu]
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
