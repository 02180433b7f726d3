"""Counts print as integers where they are counts ("calls 1", "ops 306"; never "1.000", "306.0"),
and a mean count that is not whole keeps its digits; worked cases, then a rendered ops table."""

from __future__ import annotations

import io

import pytest

from yoloprof.readers.ops import compute_ops
from yoloprof.render._out import Out
from yoloprof.render.fmt import fmt_count, fmt_in, fmt_named, fmt_val
from yoloprof.render.terminal import render_ops


@pytest.mark.parametrize("v, text", [(1.0, "1"), (306.0, "306"), (21, "21"), (12345.0, "12,345"),
                                     (2.5, "2.500"), (0.0, "0"), (None, "n/a"), (float("nan"), "n/a")])
def test_count_worked_cases(v, text):
    assert fmt_count(v) == text


def test_counts_by_unit_and_by_name():
    assert fmt_val(306.0, "count") == "306" and fmt_val(306.0, "ms") == "306.0 ms"
    assert fmt_in(21.0, "count") == "21" and fmt_in(21.0, "ms") == "21.00"
    assert fmt_named("launches_per_step", 827.0) == "827" and fmt_named("calls", 1.0) == "1"
    assert fmt_named("mean_kernel_us", 12.0) == "12.00"


def test_ops_table_prints_whole_calls_as_integers():
    profile = {"kind": "train", "metrics": {}, "ops": [
        {"name": "aten::add_", "kind": "op", "phase": "forward", "self_ms_per_step": 1.5,
         "total_ms_per_step": 2.0, "count_per_step": 306.0},
        {"name": "aten::mul", "kind": "op", "phase": "forward", "self_ms_per_step": 0.5,
         "total_ms_per_step": 0.5, "count_per_step": 2.5}]}
    buf = io.StringIO()
    render_ops(compute_ops(profile), Out(buf, rich=False))
    text = buf.getvalue()
    assert " 306 " in text and "306.0" not in text and "2.500" in text
