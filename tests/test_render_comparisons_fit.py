"""Sweep and analysis tables in an 80-column terminal and piped (100 columns): every configuration
label whole, every verdict word whole, reasons in footnotes, and a hint line when verdicts are
undecided for lack of processes (render/comparison_layout.py, analysis/next_step.py)."""

from __future__ import annotations

import io
import json
import re
from types import SimpleNamespace

import pandas as pd
import pytest
from rich.console import Console

from yoloprof.analysis.next_step import rerun_hint
from yoloprof.render.analysis_terminal import _comparisons, make_console

NO_FLOOR = "inconclusive: one process per side, run-to-run noise unknown"
LABELS = [f"model.cfg={m}.yaml, batch={b}, imgsz={i}" for m in ("yolov8n", "yolo11n") for b in (1, 8)
          for i in (320, 640)][1:]
METRICS = (("step_ms", "ms", 10.0, 12.0, "lower"), ("img_per_s", "img/s", 100.0, 83.3, "higher"),
           ("peak_mem_mib", "MiB", 900.0, 950.0, "lower"))
# (code, better, verdict text) -> the word a reader must see whole, written out by hand
WORD = {"improved": "improved", "regressed": "regressed", "equivalent": "equivalent",
        "within_noise": "changed, within noise", "inconclusive": "inconclusive"}


def _rows(k: int = 1) -> list[dict]:
    rows = []
    for label in LABELS:
        for metric, unit, base, value, better in METRICS:
            rows.append({"config": label, "metric": metric, "baseline_value": base, "value": value, "unit": unit,
                         "better": better, "ratio": 0.833, "ci_low": None, "ci_high": None, "p": None, "p_adj": None,
                         "verdict": NO_FLOOR, "verdict_code": "inconclusive", "k": k, "k_baseline": k,
                         "processes_needed": None, "mde_pct": None})
    decided = {"improved": (1.2, 1.1, 1.3), "regressed": (0.8, 0.7, 0.9), "equivalent": (1.0, 0.99, 1.01),
               "within_noise": (1.02, 0.99, 1.05)}
    for row, (code, (ratio, lo, hi)) in zip(rows, decided.items()):
        row.update(verdict=WORD[code], verdict_code=code, ratio=ratio, ci_low=lo, ci_high=hi, p=0.001, k=3,
                   k_baseline=3)
    return rows


def _render(rows: list[dict], console: Console) -> str:
    result = SimpleNamespace(comparisons=pd.DataFrame(rows), metrics_compared=True, baseline="b",
                             settings={"correction": "holm", "alpha": 0.05, "noise": 0.02})
    _comparisons(console, result)
    return console.file.getvalue()


def _check(text: str, rows: list[dict], width: int) -> None:
    lines = text.splitlines()
    table = [ln for ln in lines if not ln.startswith(("[", "hint:", "("))]
    assert max(len(ln.rstrip()) for ln in table) <= width, text
    for label in LABELS:  # whole, on a line of its own or as the first cell
        assert any(ln.strip() == label or ln.startswith(label + "  ") for ln in lines), (label, text)
    for row in rows:
        metric_lines = [ln for ln in lines if re.match(rf"\s*{row['metric']}\s", ln)]
        word = WORD[row["verdict_code"]]
        assert any(re.search(rf"\s{re.escape(word)}( \[\d+\])?$", ln.rstrip()) for ln in metric_lines), (word, text)


@pytest.mark.parametrize("width", [80, 100])
def test_comparisons_keep_labels_and_verdict_words_whole(width):
    rows = _rows()
    text = _render(rows, Console(file=io.StringIO(), width=width))
    _check(text, rows, width)
    lines = text.splitlines()
    notes = {ln.split("] ", 1)[1]: ln.split("]")[0] + "]" for ln in lines if re.match(r"\[\d+\] ", ln)}
    mark = notes["one process per side, run-to-run noise unknown"]  # the reason, once, under the table
    assert sum(ln.rstrip().endswith(f"inconclusive {mark}") for ln in lines) == len(rows) - 4
    assert "likely better, not decisive (CI crosses the noise band edge)" in notes  # the within-noise reason
    hint = "hint: 17 of 21 verdicts need more jobs per configuration: rerun with trial=auto or trial=range(0,3)"
    assert " ".join(text[text.index("hint:"):].split()) == hint


@pytest.mark.parametrize("columns, width", [(None, 100), ("80", 80), ("100", 100)])
def test_piped_the_width_is_columns_else_100(monkeypatch, columns, width):
    """Through the console the analysis makes (`make_console`): $COLUMNS, else 100 when piped."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    console = make_console()
    assert not console.is_terminal and console.width == width
    console.file = io.StringIO()
    rows = _rows()
    _check(_render(rows, console), rows, width)


def test_a_wide_terminal_keeps_the_flat_table_with_reasons_inline():
    rows = _rows()
    text = _render(rows, Console(file=io.StringIO(), width=220))
    assert not any(ln.startswith("[1]") for ln in text.splitlines())
    assert sum(ln.rstrip().endswith(NO_FLOOR) for ln in text.splitlines()) == len(rows) - 4
    assert any(ln.startswith(LABELS[0] + "  step_ms") for ln in text.splitlines())


def test_at_80_columns_the_baseline_and_p_columns_give_way_and_say_so():
    text = _render(_rows(), Console(file=io.StringIO(), width=80))
    assert "(baseline, p left out at this width: every column is in comparison.md)" in text
    assert "10.00 ms" not in text and "12.00 ms" in text and "0.0010" not in text


def test_the_hint_counts_only_undecided_comparisons_short_of_processes():
    assert rerun_hint(pd.DataFrame(_rows(k=3))) is None  # three jobs a side: not for lack of processes
    rows = _rows()
    rows[5]["processes_needed"] = 6.2  # the largest estimate, rounded up
    assert rerun_hint(pd.DataFrame(rows)).endswith("trial=auto or trial=range(0,7)")
    rows[6]["processes_needed"] = 400.0
    assert rerun_hint(pd.DataFrame(rows)).endswith("trial=range(0,20)")  # capped: trial=auto finds more
    assert rerun_hint(pd.DataFrame()) is None


def test_verdict_words_follow_the_metric_direction():
    from yoloprof.render.comparison_layout import verdict_reason, verdict_word

    assert verdict_word({"verdict_code": "improved", "better": None}) == "increased"
    assert verdict_word({"verdict_code": "within_noise", "better": "lower"}) == "changed, within noise"
    assert verdict_word({"verdict_code": "insufficient", "verdict": "needs at least one process per side"}) == "too few"
    assert verdict_reason("inconclusive", NO_FLOOR) == "one process per side, run-to-run noise unknown"
    assert verdict_reason("improved", "improved") == ""


def test_a_key_swept_under_another_name_labels_the_configuration():
    """`model=ultralytics model.cfg=yolov8n.yaml,yolo11n.yaml`: the label is what tells them apart
    as typed (`model.cfg=yolo11n.yaml`), not `model=ultralytics:yolo11n.yaml`."""
    from yoloprof.analysis.configs import build_configs

    rows = [{"group_hash": f"{m}{b}", "mode": "infer", "model": f"ultralytics:{m}.yaml", "batch": b, "imgsz": 320,
             "overrides": json.dumps(["model=ultralytics", f"model.cfg={m}.yaml", f"batch={b}", "imgsz=320"])}
            for m in ("yolov8n", "yolo11n") for b in (1, 8)]
    assert list(build_configs(pd.DataFrame(rows)).table["config"]) == [
        "model.cfg=yolov8n.yaml, batch=1", "model.cfg=yolov8n.yaml, batch=8",
        "model.cfg=yolo11n.yaml, batch=1", "model.cfg=yolo11n.yaml, batch=8"]
    swept_by_model = [{**r, "overrides": json.dumps([f"model=ultralytics:{r['model'].split(':')[1]}",
                                                      f"batch={r['batch']}"])} for r in rows]
    assert build_configs(pd.DataFrame(swept_by_model)).table["config"].iloc[0] == \
        "model=ultralytics:yolov8n.yaml, batch=1"


@pytest.mark.parametrize("width", [80, 100])
def test_sweep_end_table_keeps_the_overrides_whole(monkeypatch, width):
    from yoloprof.sweep.progress import print_summary

    monkeypatch.setenv("COLUMNS", str(width))
    rows = [{"job_num": i, "status": "ok", "mode": "infer", "step_ms": 10.0 + i, "p50_ms": 3.0 + i,
             "overrides": json.dumps(["model=ultralytics", f"model.cfg={m}.yaml", f"batch={b}", "imgsz=320"])}
            for i, (m, b) in enumerate((m, b) for m in ("yolov8n", "yolo11n") for b in (1, 8))]
    buf = io.StringIO()
    print_summary(pd.DataFrame(rows), "runs/profile/sweeps/adhoc/20261206-041740-14215-5fe58e", file=buf)
    text = buf.getvalue()
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= width, text
    assert "p50 latency ms" in text and "(p50 latency)" not in text
    for m in ("yolov8n", "yolo11n"):
        for b in (1, 8):
            assert re.search(rf"│ model\.cfg={m}\.yaml batch={b}\s+│", text), text
