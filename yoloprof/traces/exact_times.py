"""Event start times exact to the nanosecond the trace wrote.

Why: Kineto writes `ts` as epoch microseconds with three decimals (1680560498113216.123). A
float64 near 1.7e15 holds only every 0.25 us, so decoding `ts` straight to float moves each start
by up to 0.125 us; a child op or `cudaLaunchKernel` that ends on its parent's last nanosecond then
"overruns" it and is no longer its child, which changes self times by whole calls (torch builds its
tree from the exact nanoseconds). So `ts` is decoded as an int or a Decimal (`kineto.Complete`/`Instant`) and
turned into float64 microseconds RELATIVE to an integer base: the difference is small, so the
float holds it to far below a nanosecond. Durations are small numbers and stay floats.
"""

from __future__ import annotations

import math
import re
from itertools import repeat
from operator import index, sub
from typing import Any

import numpy as np

# A base is taken only from a plausible time (traces.parse drops times beyond this anyway).
MAX_BASE_US = 2.0 ** 53


_FIRST_TS = re.compile(rb'"ts"\s*:\s*(-?\d{1,16})\b')


def base_from_bytes(data: bytes | bytearray) -> int:
    """Integer part of the first `ts` in the trace's bytes (0 if none): one base for the whole
    trace, whichever slice an event is decoded in. Any time near the trace's does."""
    m = _FIRST_TS.search(data)
    return int(m.group(1)) if m and abs(int(m.group(1))) <= MAX_BASE_US else 0


_WIDE = 2**62  # |value| below: its difference with a base (|base| <= 2**53) fits in an int64


def relative_us(values: list[Any], base: int) -> np.ndarray:
    """float64 of each value minus `base` (int, Decimal or float; None/NaN -> NaN). Fast path
    (Kineto's integer timestamps): every value an int (`operator.index` refuses a Decimal, a
    float and a null in the same C-level pass that numpy reads them), the difference taken in
    int64 and rounded once to float64, as float(v - base) rounds it; else one exact subtraction
    per value."""
    n = len(values)
    if abs(base) <= MAX_BASE_US:
        try:
            ints = np.fromiter(map(index, values), np.int64, n)
        except (TypeError, OverflowError):
            pass
        else:
            if not n or (ints.max() < _WIDE and ints.min() > -_WIDE):
                return (ints - base).astype(np.float64)
    try:
        return np.fromiter(map(float, map(sub, values, repeat(base))), np.float64, n)
    except (TypeError, ArithmeticError):  # a null, a value beyond Decimal's context, an int beyond float
        return np.fromiter((_one(v, base) for v in values), np.float64, n)


def _one(v: Any, base: int) -> float:
    try:
        return float(v - base)
    except (TypeError, ArithmeticError):
        return math.nan
