"""What a configuration costs once per process: `first_call_ms` and `setup_s` (docs/knobs.md).

- `first_call_ms`: the first step (training) or call (inference) of the first trial, timed like
  every other step, before any warm-up: lazy initialisation, cuDNN's algorithm search and
  torch.compile's compilation all land in it.
- `setup_s`: the one-time cost of the configuration, in seconds: the conversion done when the
  trial's context was built (a runtime's export and conversion; 0 for eager PyTorch) plus the
  first step's excess over the trial's steady step (its median measured step), clipped at 0:
  `setup_s = convert_s + max(0, first_call_ms - median(step_ms)) / 1000`. Compilation happens
  inside the first call, so the excess is where its cost shows; eager runs have a small excess
  too (first-call initialisation), which `payback_calls` subtracts out as the baseline's setup_s.

Measured once per capture (the first trial: later trials of the same process may reuse caches
such as compiled graphs, so their first calls understate the cost), so each is one sample.
"""

from __future__ import annotations

import statistics
from typing import Any


def one_time_samples(trials: list[Any]) -> dict[str, list[float]]:
    """{"first_call_ms": [...], "setup_s": [...]} from the first trial (TrialResult), or {}."""
    if not trials or trials[0].first_ms is None or not trials[0].step_ms:
        return {}
    first = trials[0]
    steady = statistics.median(first.step_ms)
    return {"first_call_ms": [first.first_ms],
            "setup_s": [first.setup_s + max(0.0, first.first_ms - steady) / 1000.0]}
