"""`payback_calls`: how many calls (steps) a faster configuration needs before its one-time cost is
paid back (docs/knobs.md).

    payback_calls = (setup_s(after) - setup_s(before)) * 1000 / (time(before) - time(after))

with the per-call times in ms (the compared time metric: step_ms, or p50_ms for inference) and
`setup_s` each side's one-time cost (capturing/passes/one_time.py). n/a (None) when the
configuration is not faster or a side lacks `setup_s`; 0 when it costs no more once than the
baseline. torch.compile's minutes of compilation matter to a job of 500 steps, not to one of 10^6.
"""

from __future__ import annotations

import math

TIME_METRICS = ("step_ms", "p50_ms")  # per-call times a payback is computed on (the headline times)


def payback_calls(setup_before_s: float | None, setup_after_s: float | None,
                  before_ms: float | None, after_ms: float | None) -> float | None:
    values = (setup_before_s, setup_after_s, before_ms, after_ms)
    if any(v is None or not math.isfinite(v) for v in values):
        return None
    saved_ms = before_ms - after_ms  # type: ignore[operator]
    if saved_ms <= 0:
        return None
    extra_s = max(0.0, setup_after_s - setup_before_s)  # type: ignore[operator]
    return extra_s * 1000.0 / saved_ms
