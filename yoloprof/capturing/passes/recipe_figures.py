"""The training step's figures that come from its family's recipe (docs/workloads.md "Gradient
accumulation"): where the trainer accumulates gradients over N iterations, its optimizer, clipping
and EMA run once every N of them, and the timed step (which runs them every step, so that every
sample measures their cost) is amortised over that period.

Definition: `amortised_step_ms = step_ms - (1 - 1/N) * (clip + optimizer + ema wall ms)`, per
trial from the same trial's means: the mean time of one of the trainer's iterations when N-1 of
every N skip the periodic phases. Written only where N > 1 (else it is `step_ms`).
"""

from __future__ import annotations

from typing import Any

PERIODIC_PHASES = ("clip", "optimizer", "ema")  # what the trainer runs once per accumulation period
AMORTISED = "amortised_step_ms"


def amortised_step_ms(step_ms: float, periodic_ms: float, every: int) -> float:
    """One trainer iteration's mean time when the periodic phases (`periodic_ms` per run) run once
    every `every` iterations and the rest every iteration."""
    return step_ms - (1.0 - 1.0 / every) * periodic_ms


def add_amortised(samples: dict[str, list[float]], every: int) -> dict[str, list[float]]:
    """`samples` with `amortised_step_ms` per trial where `every` > 1 and the phases were timed."""
    steps = samples.get("step_ms") or []
    periodic = [samples[f"{p}_wall_ms"] for p in PERIODIC_PHASES if f"{p}_wall_ms" in samples]
    if every <= 1 or not steps or not periodic:
        return samples
    per_trial = [sum(values) for values in zip(*periodic)]
    return {**samples, AMORTISED: [amortised_step_ms(s, p, every) for s, p in zip(steps, per_trial)]}


def recipe_section(recipe: dict[str, Any] | None, every: int) -> dict[str, Any] | None:
    """The profile's `train_recipe` section: the recipe as described by its family, the timed
    step's convention and the periodic phases."""
    if recipe is None:
        return None
    return {**recipe, "optimizer_every": every, "timed_step": "optimizer every step",
            "periodic_phases": list(PERIODIC_PHASES), "amortised_metric": AMORTISED if every > 1 else None}
