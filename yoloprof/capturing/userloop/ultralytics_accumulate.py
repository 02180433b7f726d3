"""Ultralytics' gradient accumulation, seen by `profile_trainer` (docs/userloop.md "Ultralytics' trainer").

Ultralytics steps the optimizer once per `accumulate` batches: `accumulate = max(round(nbs / batch),
1)` (nominal batch size `nbs`, 64 by default), capped by the training's batches, and ramped from 1
up to it during its own warm-up (`warmup_epochs`); the trainer calls `optimizer_step()` when `ni -
last_opt_step >= accumulate`. With batch 2 that is one optimizer step every 32 batches, so a window
of 20 timed steps may hold none. What is recorded (the profile's `accumulation` section):

- the optimizer's cost of one call: the `optimizer` phase of each measured timed step that ran it;
  when none did, the first `optimizer_step` after the last window, timed on its own (a device
  synchronise before and after, `perf_counter`), which is at most `accumulate` batches later
  (`stop_when_done` waits for it);
- **amortised ms per step** = the mean over those calls of (call ms / the trainer's `accumulate` in
  force at the call): what the optimizer adds to an average batch of the training. n/a (null, with
  the reason) when no call was measured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo, synchronize

OPTIMIZER = "optimizer"  # the phase of the trainer's optimizer_step (ultralytics_hooks.py)
TIMED, AFTER = "timed steps", "after the windows"  # where the calls were measured


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass
class Accumulation:
    """The trainer's accumulation and the optimizer calls measured; `section()` for the profile."""

    accumulate: int | None  # nominal, at on_train_start
    nbs: int | None
    batch: int | None
    in_force: dict[int, int] = field(default_factory=dict)  # profile iteration -> trainer.accumulate at its call
    after: list[tuple[float, int]] = field(default_factory=list)  # (ms, accumulate) timed after the windows
    _started: float | None = None

    @classmethod
    def of(cls, trainer: Any) -> "Accumulation":
        args = getattr(trainer, "args", None)
        return cls(_int(getattr(trainer, "accumulate", None)), _int(getattr(args, "nbs", None)),
                   _int(getattr(trainer, "batch_size", None)))

    def cause(self) -> str:
        """Why the trainer accumulates this many batches: 'nbs 64 / batch 2' (and the cap)."""
        text = f"nbs {self.nbs} / batch {self.batch}"
        if self.nbs and self.batch and self.accumulate != max(round(self.nbs / self.batch), 1):
            text += ", capped at the training's batches"
        return text

    def period(self, trainer: Any) -> int:
        return _int(getattr(trainer, "accumulate", None)) or self.accumulate or 1

    # ---- the optimizer_step after the last window ------------------------------------------------
    def begin_after(self, device: DeviceInfo) -> None:
        synchronize(device)
        self._started = time.perf_counter()

    def end_after(self, device: DeviceInfo, period: int) -> None:
        if self._started is None:
            return
        synchronize(device)
        self.after.append(((time.perf_counter() - self._started) * 1e3, period))
        self._started = None

    # ---- the profile -----------------------------------------------------------------------------
    def calls(self, timed: list[tuple[int, float]]) -> tuple[str | None, list[tuple[float, int]]]:
        """The measured calls, (ms, accumulate in force): the timed steps' when any ran the
        optimizer, else those timed after the windows."""
        if timed:
            return TIMED, [(ms, self.in_force.get(it, self.accumulate or 1)) for it, ms in timed]
        return (AFTER, list(self.after)) if self.after else (None, [])

    def section(self, timed: list[tuple[int, float]], timed_steps: int) -> dict[str, Any]:
        """The `accumulation` section from the measured timed steps' optimizer phases, each
        (profile iteration, ms), and the number of measured timed steps."""
        where, calls = self.calls(timed)
        call_ms = sum(ms for ms, _ in calls) / len(calls) if calls else None
        amortised = sum(ms / max(period, 1) for ms, period in calls) / len(calls) if calls else None
        reason = None
        if not calls:
            reason = ("no optimizer_step ran in the measured timed steps nor after the windows before the "
                      "training ended")
        return {"accumulate": self.accumulate, "nbs": self.nbs, "batch": self.batch, "timed_steps": timed_steps,
                "timed_steps_with_optimizer": len(timed), "optimizer_calls": len(calls), "measured_in": where,
                "optimizer_call_ms": call_ms, "amortised_ms_per_step": amortised, "reason": reason}

    def notes(self, section: dict[str, Any]) -> list[str]:
        """The profile's warnings about it: none when every batch steps the optimizer and the
        timed steps ran it."""
        acc, k, n = section["accumulate"] or 1, section["timed_steps_with_optimizer"], section["timed_steps"]
        if acc <= 1 and k:
            return []
        cadence = (f"Ultralytics steps the optimizer once per {acc} batches (gradients accumulated: {self.cause()})"
                   if acc > 1 else "")
        amortised = section["amortised_ms_per_step"]
        cost = (f"the optimizer's cost amortised per step: {amortised:.3g} ms (optimizer_step "
                f"{section['optimizer_call_ms']:.3g} ms per call, {section['optimizer_calls']} call(s) timed in "
                f"the {section['measured_in']})" if amortised is not None
                else f"the optimizer's cost amortised per step: n/a ({section['reason']})")
        if k == 0:
            seen = f"the {n} measured timed step(s) ran no optimizer step, so step_ms holds none of its cost"
        else:
            seen = (f"the optimizer ran in {k} of the {n} measured timed steps (optimizer_wall_ms is its mean "
                    f"over those)")
        return ["; ".join(part for part in (cadence, seen, cost) if part)]
