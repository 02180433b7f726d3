"""Equality of two parsed event tables, column by column (the streamed and range readers are
checked against the whole-buffer reader with it)."""

from __future__ import annotations

import numpy as np

from yoloprof.traces import parse


def same_events(a: parse.Events, b: parse.Events) -> None:
    """Assert that `a` and `b` hold the same columns, dtypes, values (NaN equal to NaN), memory
    events, strings and counters."""
    for col in ("name", "cat", "thread", "ts", "dur", "corr", "device", "stream", "shape"):
        x, y = getattr(a, col), getattr(b, col)
        assert (x is None) == (y is None), col
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), col
    for col in ("ts", "device_type", "device_id", "nbytes", "allocated", "reserved"):
        assert np.array_equal(getattr(a.memory, col), getattr(b.memory, col), equal_nan=True), col
    assert (a.strings, a.shape_strings, a.t0, a.meta, a.warnings, a.counts) == \
        (b.strings, b.shape_strings, b.t0, b.meta, b.warnings, b.counts)
