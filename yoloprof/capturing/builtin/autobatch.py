"""`--batch -1`: the largest batch whose step fits in 70% of the memory this capture can use on the
device (CUDA only), chosen as carefully as Ultralytics' `utils/autobatch.py`.

1. Budget: the device's free memory now (`torch.cuda.mem_get_info`, after emptying our cache: what
   other processes hold is not ours) plus what this process already reserves there (it is in every
   probe's peak too).
2. Probes: one real step at batch 1, 2, 4, 8, 16 (stopping at the first out-of-memory), each
   reading the caching allocator's peak *reserved* memory (`max_memory_reserved`: what the device
   must really give, fragmentation included; the allocated peak is lower).
3. Fit: least squares `peak = a + b * batch` over the probes that fitted and grow with the batch
   (Ultralytics keeps only the increasing ones too); the choice solves `a + b * batch = 70% of the
   budget`.
4. Bounds: never at or above a probe that ran out of memory (then: the last batch that fitted),
   never above MAX_BATCH (1024, Ultralytics' bound), at least 1. A choice past the largest probe is
   confirmed by one more step at that batch; if it runs out of memory, the last batch that fitted.
The probes, the budget and the choice are one warning line and `config.autobatch` in the profile.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.defs.metrics import BYTES_PER_MIB
from yoloprof.errors import UsageError

TARGET_FRACTION = 0.70
PROBES = (1, 2, 4, 8, 16)
MAX_BATCH = 1024


@dataclass
class Probe:
    batch: int
    peak: float | None  # peak reserved bytes of one step; None = out of memory


@dataclass
class Plan:
    """What `--batch -1` measured and chose."""

    probes: list[Probe]
    budget: float  # bytes this capture may use: free + already reserved by this process
    chosen: int = 0
    why: str = ""
    fit: tuple[float, float] | None = None  # (a bytes, b bytes per image)
    target: float = TARGET_FRACTION

    def line(self) -> str:
        probes = ", ".join(f"{p.batch}: {'out of memory' if p.peak is None else f'{p.peak / BYTES_PER_MIB:.0f} MiB'}"
                           for p in self.probes)
        fit = (f"; fit {self.fit[0] / BYTES_PER_MIB:.0f} MiB + {self.fit[1] / BYTES_PER_MIB:.1f} MiB x batch"
               if self.fit else "")
        return (f"--batch -1 chose {self.chosen} ({self.why}): peak reserved per probe {probes}{fit}; target "
                f"{100 * self.target:.0f}% of {self.budget / BYTES_PER_MIB:.0f} MiB (free + reserved by this process)")

    def as_dict(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "why": self.why, "target_fraction": self.target,
                "budget_mb": self.budget / BYTES_PER_MIB,
                "fit_mb": None if self.fit is None else [v / BYTES_PER_MIB for v in self.fit],
                "probes": [{"batch": p.batch, "peak_reserved_mb": None if p.peak is None else p.peak / BYTES_PER_MIB}
                           for p in self.probes]}


def _peak_of_one_step(settings: CaptureSettings, device: DeviceInfo, batch: int) -> float:
    """The allocator's peak reserved bytes over one real step at `batch`."""
    from yoloprof.capturing.builtin.trial_context import build_infer_context, build_train_context, load_infer_sources
    from yoloprof.capturing.passes.step_calls import infer_call, no_phases, train_step
    from yoloprof.workloads.data import SyntheticDetection

    cuda = device.cuda
    probe = dataclasses.replace(settings, batch=batch, workers=0)
    cuda.empty_cache()
    cuda.reset_peak_memory_stats(device.torch_device)
    amp = settings.autocast  # settings arrive resolved: precision is the effective dtype
    if settings.mode == "train":
        data = SyntheticDetection(batch, settings.imgsz, settings.num_classes, settings.seed)
        train_step(build_train_context(probe, device, data, amp), no_phases())
    else:
        infer_call(build_infer_context(probe, device, load_infer_sources(probe)[0], amp), no_phases())
    cuda.synchronize(device.torch_device)
    return float(cuda.max_memory_reserved(device.torch_device))


def probe_peaks(measure: Callable[[int], float], oom: type[BaseException],
                probes: tuple[int, ...] = PROBES) -> list[Probe]:
    """One Probe per batch size, in order, up to and including the first out-of-memory."""
    out: list[Probe] = []
    for batch in probes:
        try:
            out.append(Probe(batch, measure(batch)))
        except oom:
            out.append(Probe(batch, None))
            break
    return out


def _fit(fitted: list[Probe]) -> tuple[float, float] | None:
    """(a, b) of peak = a + b * batch over the probes whose peak grows with the batch."""
    import numpy as np

    points = [(p.batch, p.peak) for p in fitted if p.peak is not None]  # all of them (choose)
    rising = [(b, peak) for i, (b, peak) in enumerate(points) if i == 0 or peak > points[i - 1][1]]
    if len(rising) < 2:
        return None
    slope, intercept = np.polyfit([b for b, _ in rising], [peak for _, peak in rising], 1)
    return float(intercept), float(slope)


def choose(probes: list[Probe], budget: float, target: float = TARGET_FRACTION,
           max_batch: int = MAX_BATCH) -> Plan:
    """The batch by the rules of the module docstring (without the confirming step)."""
    fitted = [p for p in probes if p.peak is not None]
    if not fitted:
        raise UsageError("--batch -1: even a batch of 1 does not fit on the device")
    plan = Plan(probes, budget, target=target, fit=_fit(fitted))
    last_fit = fitted[-1].batch
    failed = next((p.batch for p in probes if p.peak is None), None)
    if plan.fit is None or plan.fit[1] <= 0:
        plan.chosen, plan.why = last_fit, "memory does not grow with the batch: the largest probe"
    else:
        plan.chosen = int((target * budget - plan.fit[0]) / plan.fit[1])
        plan.why = f"the fit reaches {100 * target:.0f}% of the budget there"
    if failed is not None and plan.chosen >= failed:
        plan.chosen, plan.why = last_fit, f"the last batch that fitted: batch {failed} ran out of memory"
    if plan.chosen > max_batch:
        plan.chosen, plan.why = max_batch, f"bounded at {max_batch}"
    if plan.chosen < 1:
        plan.chosen, plan.why = 1, f"even batch 1 is above {100 * target:.0f}% of the budget"
    return plan


def budget_bytes(device: DeviceInfo) -> float:
    """Free device memory now plus what this process already reserves (see the module docstring)."""
    cuda, dev = device.cuda, device.torch_device
    cuda.empty_cache()
    free, _total = cuda.mem_get_info(dev)
    return float(free) + float(cuda.memory_reserved(dev))


def largest_batch(settings: CaptureSettings, device: DeviceInfo) -> Plan:
    cuda = device.cuda
    budget = budget_bytes(device)
    measure = lambda b: _peak_of_one_step(settings, device, b)  # noqa: E731
    probes = probe_peaks(measure, cuda.OutOfMemoryError)
    plan = choose(probes, budget)
    largest = max(p.batch for p in probes if p.peak is not None)
    if plan.chosen > largest:  # past every probe: confirm with one real step
        try:
            probes.append(Probe(plan.chosen, measure(plan.chosen)))
        except cuda.OutOfMemoryError:
            probes.append(Probe(plan.chosen, None))
            plan.why = f"the last batch that fitted: the chosen {plan.chosen} ran out of memory when confirmed"
            plan.chosen = largest
    cuda.empty_cache()
    return plan
