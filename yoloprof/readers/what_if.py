"""`yoloprof what-if`: estimate the gain of a change before writing it.

Model (DESIGN.md section 6). A step is bounded by two clocks: the host, which issues the work
(H ms), and the device, which runs it (D ms busy). The step is at least max(H, D); what is left
(S - max(H, D): gaps, syncs) is kept as it is. A change shrinks one or both clocks, and the
predicted step is S - (max(H, D) - max(H', D')), so it never falls below the other bound.

- `--remove-launches N` (GPU): N fewer kernel launches, each worth the measured host cost per
  launch c = H / launches per step; the device work is assumed to stay (fusion keeps the math):
  H' = H - N c, D' = D.
- `--remove-category C` (GPU): the device clock loses what the category adds to the busy union,
  taken from the trace (`busy_saving_ms_per_step`: union of all device work minus the union
  without C), so communication hidden under compute saves only its exposed part; profiles
  without that figure fall back to the category's summed time (an upper bound, said so). Its
  launches go too (H' = H - n_C c). C is a category name or a unique prefix/substring of one.
- Both flags together (as `libreyolo profile what-if` combines them): the category goes as above,
  and N launches more besides its own: H' = H - (n_C + N) c, D' = D - the category's saving.
- The prediction never falls below max(H', D'): whatever is removed, the remaining host work and
  the remaining device union still have to run.
- CPU profiles (no device kernels): `--remove-launches N` removes N op dispatches at the measured
  mean self CPU time per op (self CPU time, at most the step, / ops per step), so removing
  fewer than all ops always leaves a positive step; removing every op is refused (no step is
  left to predict); `--remove-category` is refused, because
  kernel categories do not exist on a CPU trace and op names map to them too loosely to be honest.

H is the host-busy metric when the profile has one, else the step minus the time the CPU spent
blocked in device synchronisation (`host_sync_ms`) when that is known and non-zero, else the whole
step (an upper bound, exact for host-bound steps where the CPU never waits: a best case).
"""

from __future__ import annotations

from typing import Any

from yoloprof.errors import UsageError
from yoloprof.readers._common import (
    categories_present, finite, has_device, match_category, metric_value, per_step,
)

HOST_METRICS = ("host_busy_ms", "cpu_busy_ms", "host_ms")
DEVICE_METRICS = ("device_busy_ms",)


def _first_metric(profile: dict, names: tuple[str, ...]) -> tuple[str, float] | None:
    for n in names:
        v = metric_value(profile, n)
        if v is not None:
            return n, v
    return None


def _step_ms(profile: dict) -> float:
    step = metric_value(profile, "step_ms")
    if step is None:
        times = [finite(r.get("step_ms")) for r in per_step(profile)]
        known = [t for t in times if t is not None]
        step = sum(known) / len(known) if known else None
    if not step:
        from yoloprof.errors import ProfileError

        raise ProfileError("what-if needs the step time (metric step_ms), which this profile lacks")
    return step


def _clocks(profile: dict, step: float, assumptions: list[str]) -> tuple[float, float]:
    """(H, D): host and device busy ms per step, with the assumption used for each."""
    host = _first_metric(profile, HOST_METRICS)
    sync = metric_value(profile, "host_sync_ms")
    if host:
        assumptions.append(f"host busy time per step H = {host[1]:.3f} ms (metric {host[0]})")
        h = host[1]
    elif sync:
        h = max(step - sync, 0.0)
        assumptions.append(f"host busy time per step H = step - time blocked in device syncs "
                           f"(host_sync_ms {sync:.3f}) = {h:.3f} ms")
    else:
        assumptions.append("host busy time per step H = the whole step (no host-busy figure): "
                           "exact when host-bound, else the estimate is a best case")
        h = step
    dev = _first_metric(profile, DEVICE_METRICS)
    util = metric_value(profile, "device_util_pct")
    if dev:
        d = dev[1]
    elif util is not None:
        d = util / 100.0 * step
    else:
        d = sum(finite(c.get("device_ms_per_step")) or 0.0 for c in profile.get("categories") or [])
    assumptions.append(f"device busy time per step D = {d:.3f} ms (union of kernel, memcpy and memset intervals)")
    return h, d


def _predict(step: float, h: float, d: float, h2: float, d2: float) -> dict[str, Any]:
    """The step shrinks by what the binding clock loses, and never below max(H', D')."""
    bound_now, bound_after = max(h, d), max(h2, d2)
    predicted = max(step - (bound_now - bound_after), bound_after)
    return {"host_ms": h, "device_ms": d, "host_ms_after": h2, "device_ms_after": d2,
            "bound_now": "host" if h >= d else "device",
            "bound_after": "host" if h2 >= d2 else "device",
            "predicted_step_ms": predicted, "saving_ms": step - predicted,
            "speedup": step / predicted if predicted > 0 else None}


def compute_what_if(profile: dict, *, remove_category: str | None = None,
                    remove_launches: int | None = None) -> dict[str, Any]:
    """The predicted step time after removing a kernel category or N launches, with the model's
    inputs and assumptions in the result."""
    if remove_category is None and remove_launches is None:
        raise UsageError("what-if needs --remove-category C, --remove-launches N, or both")
    if remove_launches is not None and remove_launches < 0:
        raise UsageError(f"--remove-launches must be >= 0 (got {remove_launches})")
    step = _step_ms(profile)
    if not has_device(profile):
        return _cpu_what_if(profile, step, remove_category, remove_launches)
    assumptions: list[str] = []
    h, d = _clocks(profile, step, assumptions)
    launches = metric_value(profile, "launches_per_step") or metric_value(profile, "kernels_per_step")
    if not launches:
        raise UsageError("what-if needs launches per step, which this profile lacks")
    cost = h / launches
    assumptions.append(f"host cost per launch c = H / launches per step = {1000 * cost:.1f} us "
                       "(framework + dispatch + launch API time per kernel)")
    change: dict[str, Any] = {}
    h2, d2 = h, d
    if remove_category is not None:
        remove_category = match_category(remove_category, categories_present(profile),
                                          "--remove-category")
        rows = [c for c in profile.get("categories") or [] if c.get("category") == remove_category]
        dc = sum(finite(c.get("device_ms_per_step")) or 0.0 for c in rows)
        saving = [finite(c.get("busy_saving_ms_per_step")) for c in rows]
        nc = sum(finite(k.get("count_per_step")) or 0.0 for k in profile.get("kernels") or []
                 if k.get("category") == remove_category and k.get("kind", "kernel") == "kernel")
        overlap = [v for v in saving if v is not None]
        if rows and len(overlap) == len(saving):
            ds = sum(overlap)
            assumptions.append(f"the device union loses what {remove_category} adds to it in the trace: "
                               f"{ds:.3f} ms of its {dc:.3f} ms (the rest overlaps other work); "
                               f"its {nc:.0f} launches per step go too")
        else:
            ds = dc
            assumptions.append(f"no overlap figure in this profile: assuming the {remove_category} work "
                               f"does not overlap other work, so D drops by its {dc:.3f} ms (a best "
                               f"case); its {nc:.0f} launches per step go too")
        h2, d2 = max(h - nc * cost, 0.0), max(d - ds, 0.0)
        change = {"remove_category": remove_category, "category_device_ms": dc,
                  "category_busy_saving_ms": ds, "category_launches": nc}
    if remove_launches is not None:
        left = launches - change.get("category_launches", 0.0)
        if remove_launches > left:
            extra = " besides the category's" if remove_category is not None else ""
            raise UsageError(f"--remove-launches {remove_launches} exceeds the {left:.0f} launches per step{extra}")
        assumptions.append(f"{remove_launches} more launches go, their device work stays (fused into "
                           "remaining kernels)" if remove_category is not None else
                           "the removed launches' device work stays (fused into remaining kernels)")
        h2 = max(h2 - remove_launches * cost, 0.0)
        change["remove_launches"] = remove_launches
    warnings = []
    if d > step:
        warnings.append(f"the device is busy {d:.3f} ms per step, longer than the measured {step:.3f} ms step: "
                        "the host ran ahead of the device (its queue grew), so the measured step is not a "
                        "steady state; predictions are bounded below by the remaining device time")
    return {"kind": profile.get("kind"), "mode": "device", "change": change, "step_ms": step,
            "launches_per_step": launches, "cost_per_launch_us": 1000 * cost,
            **_predict(step, h, d, h2, d2), "assumptions": assumptions, "warnings": warnings}


def cheapest_ops_ms(ops: list[dict], n: float) -> float:
    """Self ms per step of the `n` cheapest op calls (by mean self time per call): the smallest
    saving that removing n dispatches can bring."""
    rows = []
    for o in ops:
        count, self_ms = finite(o.get("count_per_step")) or 0.0, finite(o.get("self_ms_per_step")) or 0.0
        if count > 0:
            rows.append((self_ms / count, count))
    total, left = 0.0, float(n)
    for per_call, count in sorted(rows):
        take = min(count, left)
        total, left = total + take * per_call, left - take
        if left <= 0:
            break
    return total


def _cpu_what_if(profile: dict, step: float, remove_category: str | None,
                 remove_launches: int | None) -> dict[str, Any]:
    """CPU profile: launches are op dispatches, at the mean self CPU time per op."""
    if remove_category is not None or remove_launches is None:
        raise UsageError("--remove-category needs device kernel categories, and this profile has no "
                         "device kernels (CPU trace); use --remove-launches N to model N fewer op "
                         "dispatches")
    ops = [o for o in profile.get("ops") or [] if isinstance(o, dict)]
    n_ops = metric_value(profile, "ops_per_step") or sum(finite(o.get("count_per_step")) or 0.0 for o in ops)
    self_ms = sum(finite(o.get("self_ms_per_step")) or 0.0 for o in ops)
    if not n_ops or not self_ms:
        raise UsageError("what-if on a CPU profile needs its ops (self CPU time and counts), which it lacks")
    if remove_launches >= n_ops:
        raise UsageError(f"--remove-launches {remove_launches} would remove every one of the {n_ops:.0f} "
                         "op dispatches per step: no step is left to predict")
    # Self times summed over threads can exceed the step; the host clock cannot lose more than it has.
    cost = min(self_ms, step) / n_ops
    assumptions = [
        "CPU profile: no device kernels, so a 'launch' is an op dispatch (every aten op call, "
        "nested ones included)",
        f"cost per op = min(self CPU time {self_ms:.3f} ms, step {step:.3f} ms) / {n_ops:.0f} ops per "
        f"step = {1000 * cost:.1f} us",
        "the removed ops' work disappears with them (a fused op does the rest); host-bound, H = step",
    ]
    h2 = step - remove_launches * cost  # > 0: fewer than all ops, each at most step / n_ops
    cheap = min(cheapest_ops_ms(ops, remove_launches), step - h2)
    assumptions.append(f"if the removed ops are the cheapest ones per call (fusion mostly removes small "
                       f"elementwise ops), they hold only {cheap:.3f} ms: the conservative estimate")
    return {"kind": profile.get("kind"), "mode": "cpu", "change": {"remove_launches": remove_launches},
            "step_ms": step, "launches_per_step": n_ops, "cost_per_launch_us": 1000 * cost,
            "predicted_step_ms_if_cheapest": step - cheap,
            **_predict(step, step, 0.0, h2, 0.0), "device_ms": None, "device_ms_after": None,
            "assumptions": assumptions,
            "warnings": ["CPU profile: modelled as op dispatches, not kernel launches"]}
