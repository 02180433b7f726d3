"""How many iterations `yoloprof.profile` (and `profile_trainer`) needs, computed in one place.

The windows run one after the other (capturing/userloop/loop.py): warm-up, timed, trace, FLOPs,
modules, hotspots, each as long as its option asks. The iterations needed are their sum; the
timed window may also turn up to `settle` of its first steps into warm-up while the step times are
not yet steady (docs/steady-state.md), so a loop of `needed` iterations completes every window
when the steps settle at once and `needed + settle` always does. `Profile` announces `line()`
when its block is entered, and a loop that ends early is told `missing(window)`.
"""

from __future__ import annotations

from dataclasses import dataclass

# window -> (its name in a message, what one of its iterations is for)
LABELS = {"warmup": "warm-up", "timed": "timed", "trace": "trace", "flops": "FLOPs", "modules": "modules",
          "hotspots": "hotspots"}


@dataclass(frozen=True)
class LoopPlan:
    """The windows in order, each (name, iterations), and the most extra warm-up the timed window
    may take (`warmup_max` - `warmup`: 0 for a fixed warm-up)."""

    windows: tuple[tuple[str, int], ...]
    settle: int

    @property
    def needed(self) -> int:
        """Iterations for every window, when the timed steps are steady at once."""
        return sum(n for _, n in self.windows)

    def count(self, name: str) -> int:
        return next((n for window, n in self.windows if window == name), 0)

    def split(self) -> str:
        """'5 warm-up, 20 timed, 5 trace, 1 FLOPs, 3 modules'."""
        return ", ".join(f"{n} {LABELS[name]}" for name, n in self.windows)

    def line(self) -> str:
        """The announcement: iterations needed, window by window (the timed ones' place in the
        loop, as planned), and the possible extra warm-up."""
        parts, first = [], 1
        for name, n in self.windows:
            where = f" (iterations {first}-{first + n - 1})" if name == "timed" else ""
            parts.append(f"{n} {LABELS[name]}{where}")
            first += n
        text = f"the profile needs {self.needed} iterations: {', '.join(parts)}"
        if self.settle:
            text += f"; up to {self.settle} more warm-up iterations if the step times are not yet steady (warmup_max)"
        return text

    def missing(self, window: str | None) -> list[str]:
        """The windows from `window` (the one a loop stopped in) to the last: what is incomplete."""
        names = [name for name, _ in self.windows]
        return names[names.index(window):] if window in names else []


def plan_windows(*, warmup: int, steps: int, trace: int, flops: bool, modules: bool, module_steps: int,
                 hotspots: bool, hotspot_steps: int, settle: int) -> LoopPlan:
    """The windows of a profile and their lengths. The timed window runs what its steady-state
    tracker asks before it has seen a step (`steps`, or the test's least window when `steps` is
    shorter and the warm-up may extend: metrics/steady.py), and may turn up to `settle` more
    into warm-up. The module window's first iteration is an unrecorded warm-up with the hooks
    attached (a compiled model recompiles for them there, not in a recorded step)."""
    from yoloprof.metrics.steady import SteadyTracker

    timed = SteadyTracker(minimum=0, cap=settle, measured=steps).needed
    windows = tuple((name, n) for name, n in (
        ("warmup", warmup), ("timed", timed), ("trace", trace), ("flops", 1 if flops else 0),
        ("modules", module_steps + 1 if modules else 0), ("hotspots", hotspot_steps if hotspots else 0)) if n > 0)
    return LoopPlan(windows, settle)
