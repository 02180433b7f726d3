"""Recommendations with their evidence, and a what-if estimate where one exists.

The plugin's rules (torch-tb-profiler 0.4.3 `RunProfileData.analyze`), with its thresholds, and
yoloprof's own from the verdict. Each rule is a row of RULES: it reads the profile (and the
trace's detail, `readers.detail`, where the rule needs it) and returns None (does not fire) or
its advice. A rule whose input is missing does not fire and says why in `skipped`.
- dataloader: DataLoader time > 5% of the step (the plugin's breakdown, else yoloprof's
  `dataload` phase) -> more DataLoader workers; what-if: the step without that time (the best
  case: workers hide all loading).
- low_utilization: a GPU's utilisation over the steps < 50% -> a larger batch; no what-if (one
  capture cannot predict another batch size: sweep it).
- amp: a device of compute capability >= 7, no Tensor Core kernel time, and kernel time in
  Tensor-Core-eligible ops -> automatic mixed precision; no what-if (fp16 speed-ups vary by op).
- launches (yoloprof): a host- or launch-bound verdict -> fewer launches (torch.compile, CUDA
  graphs); what-if: half the launches removed (`what-if --remove-launches`).
- communication (yoloprof): a communication-bound verdict -> overlap or compress gradients;
  what-if: the communication category removed (`what-if --remove-category communication`).
"""

from __future__ import annotations

from typing import Any, Callable

from yoloprof.errors import UsageError
from yoloprof.readers._common import finite, metric_value

DATALOADER_SHARE = 0.05  # the plugin's threshold
LOW_UTIL_PCT = 50.0      # the plugin's threshold
TC_MIN_MAJOR = 7         # Tensor Cores from compute capability 7.0


# The `yoloprof tune` knob (and level, "" = every level) that tests each rule's advice; a rule
# without one names a change tune does not make (workers, batch, collectives): `try` is None.
RULE_KNOBS: dict[str, tuple[tuple[str, str], ...]] = {
    "launches": (("compile", "reduce-overhead"), ("optimizer_impl", "fused")),
    "amp": (("precision", ""),),
    "dataloader": (), "low_utilization": (), "communication": (),
}


def try_line(rule: str) -> str | None:
    """`yoloprof tune --knobs compile,optimizer_impl`: the command that tests a rule's advice."""
    knobs = list(dict.fromkeys(k for k, _ in RULE_KNOBS.get(rule, ())))
    return f"yoloprof tune --knobs {','.join(knobs)}" if knobs else None


def knobs_of(advice: list[dict[str, Any]]) -> list[str]:
    """The knobs the fired advice names, in the advice's order (`yoloprof tune --from`)."""
    return list(dict.fromkeys(k for a in advice for k, _ in RULE_KNOBS.get(a["rule"], ())))


def _advice(rule: str, text: str, evidence: dict[str, Any], what_if: dict[str, Any] | None,
            no_what_if: str | None = None) -> dict[str, Any]:
    return {"rule": rule, "advice": text, "evidence": evidence, "what_if": what_if,
            "what_if_na": None if what_if else no_what_if,
            "knobs": [{"knob": k, "level": v or None} for k, v in RULE_KNOBS.get(rule, ())],
            "try": try_line(rule)}


def _step_ms(profile: dict) -> float | None:
    return metric_value(profile, "step_ms")


def rule_dataloader(profile: dict, detail: dict | None) -> dict | str | None:
    mean = (detail or {}).get("breakdown", {}).get("mean") or {}
    if mean.get("total_ms"):
        share, source = mean["dataloader_ms"] / mean["total_ms"], "the plugin's step breakdown"
    else:
        phases = {p.get("phase"): finite(p.get("wall_ms_per_step")) for p in profile.get("phases") or []}
        step = _step_ms(profile)
        dataload = phases.get("dataload")
        if dataload is None or not step:
            return "no DataLoader time measured (no trace breakdown, no dataload phase)"
        share, source = dataload / step, "the dataload phase"
    if share <= DATALOADER_SHARE:
        return None
    step = _step_ms(profile) or mean.get("total_ms")
    what = {"step_ms": step, "predicted_step_ms": step * (1 - share), "speedup": 1 / (1 - share),
            "assumption": "workers load the next batches while the step runs (all loading hidden)"} \
        if step and share < 1 else None
    return _advice("dataloader", f"{100 * share:.1f}% of the step time is in the DataLoader: set "
                   "num_workers (and pin_memory) on its construction to load in worker processes",
                   {"dataloader_share_pct": 100 * share, "source": source}, what)


def rule_low_utilization(profile: dict, detail: dict | None) -> dict | str | None:
    if detail is None:
        return "needs the trace (GPU utilisation over the steps)"
    low = [d for d in detail["gpu"]["overall"] if d["gpu_util_pct"] is not None and d["gpu_util_pct"] < LOW_UTIL_PCT]
    if not detail["gpu"]["overall"]:
        return "no GPU kernels"
    if not low:
        return None
    return _advice("low_utilization", "GPU " + ", ".join(str(d["device"]) for d in low) + " below "
                   f"{LOW_UTIL_PCT:.0f}% utilisation: try a larger batch (it may change convergence)",
                   {"gpu_util_pct": {d["device"]: d["gpu_util_pct"] for d in low}}, None,
                   "one capture cannot predict another batch size: sweep it (yoloprof sweep -m batch=...)")


def _compute_major(profile: dict) -> int | None:
    majors = [p.get("computeMajor", p.get("major")) for p in (profile.get("env") or {}).get("devices") or []
              if isinstance(p, dict)]
    known = [m for m in majors if isinstance(m, int)]
    return max(known) if known else None


def rule_amp(profile: dict, detail: dict | None) -> dict | str | None:
    tc = (detail or {}).get("tensor_cores")
    if not tc:
        return "needs the trace's kernels and their ops"
    major = _compute_major(profile)
    if major is None:
        return "the trace does not give the devices' compute capability"
    if major < TC_MIN_MAJOR or (tc["tensorcore_pct"] or 0) > 0 or not (tc["eligible_pct"] or 0) > 0:
        return None
    return _advice("amp", f"{tc['eligible_pct']:.0f}% of the kernel time is launched by Tensor-Core-"
                   "eligible ops and none runs on Tensor Cores: enable automatic mixed precision "
                   "(torch.autocast, float16 or bfloat16)",
                   {"eligible_pct": tc["eligible_pct"], "tensorcore_pct": tc["tensorcore_pct"],
                    "compute_major": major, "eligible_ops": tc["eligible_ops"][:5]}, None,
                   "the fp16/bf16 speed-up of each op is not in the trace")


def _what_if(profile: dict, **change: Any) -> dict | None:
    from yoloprof.readers.what_if import compute_what_if

    try:
        return compute_what_if(profile, **change)
    except UsageError:
        return None


def rule_launches(profile: dict, detail: dict | None) -> dict | str | None:
    verdict = profile.get("verdict") or {}
    if verdict.get("bound") not in ("host", "framework-overhead"):
        return None
    n = metric_value(profile, "launches_per_step") or metric_value(profile, "kernels_per_step")
    what = _what_if(profile, remove_launches=max(1, int(n // 2))) if n else None
    return _advice("launches", "the step is host-bound: fewer, larger kernels (torch.compile, CUDA "
                   "graphs, fused optimizers) cut the launch cost", {"verdict": verdict.get("why")},
                   what, "the profile lacks launches per step")


def rule_communication(profile: dict, detail: dict | None) -> dict | str | None:
    verdict = profile.get("verdict") or {}
    if verdict.get("bound") != "communication":
        return None
    return _advice("communication", "collectives carry most device time: overlap them with "
                   "compute (DDP bucket size), compress gradients or accumulate them",
                   {"verdict": verdict.get("why")}, _what_if(profile, remove_category="communication"),
                   "the profile has no communication category")


RULES: tuple[tuple[str, Callable[[dict, dict | None], Any]], ...] = (
    ("dataloader", rule_dataloader), ("low_utilization", rule_low_utilization), ("amp", rule_amp),
    ("launches", rule_launches), ("communication", rule_communication),
)


def recommendations(profile: dict, detail: dict | None = None) -> dict[str, Any]:
    fired, skipped = [], {}
    for name, rule in RULES:
        out = rule(profile, detail)
        if isinstance(out, dict):
            fired.append(out)
        elif isinstance(out, str):
            skipped[name] = out
    return {"recommendations": fired, "skipped": skipped}
