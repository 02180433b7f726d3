"""Tables that survive a pipe: rendered at 100 columns, no value is split over two lines, and
labels that differ only deep inside stay distinguishable (render.fit)."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from yoloprof.render._out import Out
from yoloprof.render.fit import MARK, abbreviate, fit_rows

WIDTHS = ["model.width=16", "model.width=8", "model.width=4"]
BASE = "model=yolov8n,device=cpu,precision=float32,threads=1,imgsz=64,workers=0,batch="
SIX = [f"{BASE}{b},trial=auto" for b in (1, 2, 4, 8, 16, 32)]


def _matches(shown: str, full: str) -> bool:
    """`shown` is `full` with parts replaced by the marker (an independent check: a regex)."""
    pattern = ".*".join(re.escape(p) for p in shown.split(MARK))
    return re.fullmatch(pattern, full, flags=re.S) is not None


@pytest.mark.parametrize("width", [6, 8, 12, 20, 40, 70])
def test_abbreviate_keeps_values_distinct_and_faithful(width) -> None:
    for values in (WIDTHS, SIX):
        out = abbreviate(values, width)
        assert len(set(out)) == len(set(values))
        assert all(_matches(o, v) for o, v in zip(out, values))


def test_six_history_series_at_100_columns_piped(monkeypatch) -> None:
    from yoloprof.render.history_report import render_history

    monkeypatch.setenv("COLUMNS", "100")
    series = [{"config": c, "config_key": f"{i:08x}", "captures": 7, "commits": 7, "order": "git",
               "points": {"mean": [12.5 + i]}, "noise_cv": 0.012, "change_points": []}
              for i, c in enumerate(SIX)]
    result = {"project": "p", "metric": "step_ms", "unit": "ms", "better": "lower", "rows": 42,
              "machines": [{"machine": "m", "hostnames": ["h"], "series": series}]}
    buf = io.StringIO()
    render_history(result, Out(buf, rich=False))
    lines = buf.getvalue().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.strip().startswith("configuration"))
    rows = lines[head + 1: head + 7]
    assert all(len(ln) <= 100 for ln in lines[head: head + 7])
    labels = [ln.split()[0] for ln in rows]
    assert len(set(labels)) == 6  # was six identical 56-character prefixes
    for lab in labels:
        assert sum(_matches(lab, c) for c in SIX) == 1  # each names exactly one series


def _no_split(text: str, values: list[str]) -> None:
    """Every value appears whole on one line, or abbreviated (marker) on one line; never cut
    across lines (`model.width=1` / `6`)."""
    for v in values:
        assert any(v in ln for ln in text.splitlines()) or any(
            MARK in tok and _matches(tok, v) for ln in text.splitlines() for tok in ln.split()), v
    assert "model.width=1\n" not in text and not re.search(r"model\.width=1\s*$", text, re.M)


def test_out_table_at_100_columns_never_splits(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    rows = [[w, "compare " * 8, f"{i}.123", f"{i}.5 [1.0, 2.0]"] for i, w in enumerate(WIDTHS)]
    for rich in (False, True):
        buf = io.StringIO()
        out = Out(buf, rich=rich)
        if out._console is not None:
            out._console.width = 100
        out.table(["config", "description", "ms", "ratio [CI]"], rows, right=(2,))
        text = buf.getvalue()
        assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 100, text
        _no_split(text, WIDTHS)


def test_fit_rows_shrinks_text_not_numbers() -> None:
    heads, rows = fit_rows(["label", "ms"], [[c, "12.345"] for c in SIX], 40, right=(1,))
    assert all(r[1] == "12.345" for r in rows)
    assert max(2 + len(r[0]) + 2 + len(r[1]) for r in rows) <= 40
    assert len({r[0] for r in rows}) == 6


def test_analysis_and_sweep_tables_piped_at_100(monkeypatch) -> None:
    from rich.console import Console

    from yoloprof.render.analysis_terminal import _print_table
    from yoloprof.sweep.progress import print_summary

    buf = io.StringIO()
    console = Console(file=buf, width=100)
    labels = [f"{w},data.imgsz=640,model.size=n,capture.precision=float32" for w in WIDTHS]
    _print_table(console, "comparisons", ["config", "metric", "baseline", "value", "ratio [CI]", "p", "verdict"],
                 [[lab, "step_ms", "10.00 ms", "12.00 ms", "0.833 [0.80, 0.86]", "0.001", "regressed"]
                  for lab in labels], right=(2, 3, 5))
    text = buf.getvalue()
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 100, text
    _no_split(text, WIDTHS)
    assert "model.width=1\n" not in text

    monkeypatch.setenv("COLUMNS", "100")
    df = pd.DataFrame([{"job": i, "status": "ok", "overrides": " ".join([w, "data.imgsz=640", "model.size=n",
                                                                       "capture.trials=5", "capture.warmup=3"]),
                        "step_ms": 10.0 + i} for i, w in enumerate(WIDTHS)])
    buf = io.StringIO()
    print_summary(df, "sweeps/x", file=buf)
    text = buf.getvalue()
    assert "model.width=1\n" not in text and not re.search(r"model\.width=1\s*│\s*$", text, re.M)
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 100, text
