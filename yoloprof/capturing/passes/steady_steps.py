"""A trial's steps while its warm-up may still extend: the capture's side of steady-state
detection (the decision itself is metrics/steady.py, its thresholds config/steady_thresholds.py).

Each step from `minimum` on is kept with its phase split and its own memory peak (the peak is
reset before the step and read after it, outside the timed span), because which steps are
measured is only known once the detector has looked at the steps after them: the measured steps'
figures are then made from exactly those steps, the warm-up ones being dropped whole. Used by the
timing pass (capturing/passes/timing.py) and by `yoloprof.profile` around a user's loop (capturing/userloop/loop.py).
"""

from __future__ import annotations

from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.device.peak_memory import PeakMemory
from yoloprof.config import steady_thresholds as conf
from yoloprof.metrics.steady import SteadyTracker

Memory = dict[str, float | None]


def peak_of(readings: list[Memory]) -> Memory:
    """The element-wise maximum of per-step peaks (None where no step had a value)."""
    out: Memory = {}
    for reading in readings:
        for key, value in reading.items():
            old = out.get(key)
            out[key] = value if old is None else (old if value is None else max(old, value))
    return out


class SteadySteps:
    """Records steps (`begin()` before each, `end(total, phases)` after its synchronise) until
    the warm-up has ended and the measured steps are in (`done`)."""

    def __init__(self, device: DeviceInfo, minimum: int, measured: int, cap: int) -> None:
        self.tracker = SteadyTracker(minimum=minimum, cap=cap, measured=measured)
        self.minimum = minimum
        self.memory = PeakMemory(device)
        self.records: list[tuple[float, dict[str, float], Memory]] = []

    def begin(self) -> None:
        if len(self.records) >= self.minimum:  # the minimum warm-up is never measured
            self.memory.reset()

    def end(self, total: float, phases: dict[str, float]) -> None:
        reading = self.memory.read() if len(self.records) >= self.minimum else {}
        self.records.append((total, phases, reading))
        self.tracker.add(total)

    @property
    def done(self) -> bool:
        return self.tracker.done

    @property
    def needed(self) -> int:
        return self.tracker.needed

    def measured(self) -> list[tuple[float, dict[str, float], Memory]]:
        return self.records[self.tracker.measured_slice()]

    def record(self) -> dict[str, Any]:
        return self.tracker.record()


def warmup_section(minimum: int, cap: int, records: list[dict[str, Any]]) -> dict[str, Any]:
    """`config.warmup_used` of a profile (docs/steady-state.md): the warm-up each trial
    used, whether it reached steady state, and the bounds it ran between."""
    return {"steps": [r["steps"] for r in records], "steady": [r["steady"] for r in records],
            "min": int(minimum), "max": int(cap), "window": conf.WINDOW}


# the setting that caps warm-up, as a capture names it: a flag of `run`/`infer`, and its sweep key
CAP_KNOB = "--warmup-max (capture.warmup_max in a sweep)"


def cap_warnings(section: dict[str, Any], what: str = "trial", knob: str = CAP_KNOB) -> list[str]:
    """One warning per trial that reached the cap without steady step times, naming what set the
    cap: the setting, or the data's size (`cap_by`)."""
    many = len(section["steps"]) > 1
    cap = section.get("cap_by") or f"{knob} {section['max']}"
    return [f"{what}{f' {i + 1}' if many else ''}: step times not steady after {steps} warm-up steps "
            f"(the cap: {cap}); its measured steps may still include warm-up"
            for i, (steps, steady) in enumerate(zip(section["steps"], section["steady"])) if steady is False]


def trial_spread_warnings(step_ms: list[float], config: dict[str, Any]) -> list[str]:
    """One warning when the trials' step times disagree: their CV (sample SD / mean, n >= 2) above
    `metrics.stats.CV_WARN` (10%, the instability threshold `compare` uses) makes any one figure
    of them unreliable, whatever each trial's own warm-up test said. Names the intra-op thread
    count the capture ran with (`config.threads`), and `threads=` when the user loop left torch's
    count as found (`config.threads_set` false): on a small machine the thread count is the usual
    cause (2 threads on 2 busy CPUs gave trials of 87, 13.5 and 14.3 ms)."""
    from yoloprof.metrics.stats import CV_WARN, mean_ci

    cv = mean_ci(step_ms)["cv"]
    if cv is None or cv <= CV_WARN:
        return []
    threads = config.get("threads")
    cause = "the machine's load or its intra-op threads"
    if isinstance(threads, int):
        cause += f" ({threads}" + (", left as torch had them: threads= sets them)" if config.get("threads_set") is False
                                  else ")")
    values = ", ".join(f"{ms:.4g}" for ms in step_ms)
    return [f"trials disagree: step_ms CV {100 * cv:.0f}% > {100 * CV_WARN:.0f}% across {len(step_ms)} trials "
            f"({values} ms), so no one figure of them is reliable; {cause} may differ between them"]
