"""Tail percentiles carry their interval and a warning when the calls are too few, and `compare`
no longer compares p99 by default (a p99 of 100 calls per trial is nearly the largest call)."""

from __future__ import annotations

import io

import numpy as np
from helpers.profiles import infer_profile

from yoloprof.capturing.passes.latency import latency_table, tail_warnings
from yoloprof.metrics.quantiles import quantile_interval
from yoloprof.profiles.model import metric
from yoloprof.profiles.validate import validate_profile
from yoloprof.readers._common import COMPARE_DEFAULT
from yoloprof.readers.compare import compute_compare
from yoloprof.readers.summary import compute_summary
from yoloprof.render._out import Out
from yoloprof.render.terminal import render_summary


def test_latency_table_intervals_are_order_statistics():
    calls = list(np.random.default_rng(0).lognormal(0.0, 0.3, 300))
    t = latency_table(calls)
    srt = sorted(calls)
    for q in (50, 90):
        r = quantile_interval(calls, q / 100)
        assert t[f"p{q}_ci_ms"] == [srt[r["ranks"][0] - 1], srt[r["ranks"][1] - 1]]
    assert t["p99_ci_ms"][1] is None and t["p99_ci_ms"][0] <= t["p99_ms"]  # 300 < 368 calls
    assert [w.split(" from")[0] for w in tail_warnings(300)] == ["p99 latency"]
    assert tail_warnings(30)[0].startswith("p90 latency from 30 calls") and tail_warnings(400) == []


def test_summary_shows_the_interval_and_the_profile_stays_valid():
    p = infer_profile()
    p["latency"].update(latency_table([10.0 + i for i in range(40)]))
    validate_profile(p, "test")
    buf = io.StringIO()
    render_summary(compute_summary(p), out=Out(buf, rich=False))
    line = next(x for x in buf.getvalue().splitlines() if x.startswith("latency (ms)"))
    assert "p99 " in line and ", n/a]" in line  # no upper end from 40 calls


def test_p99_is_not_compared_by_default_and_warns_when_asked():
    assert "p99_ms" not in COMPARE_DEFAULT and "p90_ms" in COMPARE_DEFAULT
    before, after = infer_profile(), infer_profile()
    for p in (before, after):
        p["metrics"]["p99_ms"] = metric([30.0, 31.0, 29.5], "ms", "lower")
        p["latency"]["n"] = 90  # 30 calls per trial
    r = compute_compare(before, after, metrics=["p99_ms"])
    assert any("p99_ms per trial from 30 calls" in w for w in r["metrics"][0]["warnings"])


def test_the_json_schema_takes_the_intervals():
    import json

    import jsonschema

    from helpers.paths import REPO

    schema = json.loads((REPO / "yoloprof" / "profiles" / "profile.schema.json").read_text())
    lat = latency_table([1.0, 2.0, 3.0, 4.0, 5.0])
    assert lat["p50_ci_ms"] == [None, None]  # 5 calls: no 95% interval even for the median
    jsonschema.validate(lat, schema["properties"]["latency"]["oneOf"][1])
