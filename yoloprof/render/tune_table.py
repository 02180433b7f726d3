"""`yoloprof tune`'s ranked table (terminal, fitted by render/fit.py through Out) and its
`report.html` (self-contained, the sweep report's CSS; links to each sweep's own report)."""

from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any

import pandas as pd

from yoloprof.render._out import Out
from yoloprof.render.fmt import NA, fmt_num, fmt_ratio, missing
from yoloprof.render.html import CSS, _badge, _table

HEADERS = ["#", "knob=level", "ratio [CI]", "verdict", "outputs", "setup_s", "payback"]
NUMERIC = (0, 2, 5, 6)
NOTE = ("ratio > 1 = better than the baseline on the decision metric (the sweep's repeated CI); "
        "payback = calls (inference) or steps (training) after which the one-time setup is repaid")


def _cells(r: dict[str, Any], rank: int) -> list[str]:
    def num(v: Any) -> str:
        return "" if missing(v) else fmt_num(v)

    label = str(r["config"]) if r["stage"] != "confirm" else f"{r['level']} (combination)"
    return [str(rank), label, fmt_ratio(r.get("ratio"), r.get("ci_low"), r.get("ci_high")) if not missing(
        r.get("ratio")) else "", str(r.get("verdict") or r.get("verdict_code") or NA),
        "" if missing(r.get("outputs")) else str(r["outputs"]), num(r.get("setup_s")), num(r.get("payback_calls"))]


def rows_of(df: pd.DataFrame) -> list[list[str]]:
    return [_cells(r, i + 1) for i, r in enumerate(df.to_dict("records"))]


def render_tune(df: pd.DataFrame, result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    out.table(HEADERS, rows_of(df), title=f"tune {result['id']} ({result['mode']}, {result['device']}; "
              f"baseline {result['baseline_text']})", right=NUMERIC, shrink=3)
    out.note(NOTE)
    out.note(f"best: {result['best_text']}; {result['best_yaml']} (use: {result['use']})")


def tune_html(df: pd.DataFrame, result: dict[str, Any]) -> str:
    rows = []
    for cells, r in zip(rows_of(df), df.to_dict("records")):
        html = [escape(c) for c in cells]
        code = str(r.get("verdict_code") or "")
        html[3] = _badge(code, cells[3]) if code != "not applicable" else escape(cells[3])
        link = result.get("reports", {}).get(r.get("sweep")) if not missing(r.get("sweep")) else None
        if link:
            html[1] += f' <span class="detail"><a href="{escape(link)}">sweep report</a></span>'
        rows.append(html)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<h1>yoloprof tune {escape(result['id'])}</h1>",
             f'<p class="sub">{escape(result["mode"])} on {escape(result["device"])}, model '
             f'{escape(result["model"])}; baseline {escape(result["baseline_text"])}; budget '
             f'{escape(fmt_num(result["budget_s"]))} s.</p>',
             f"<h2>Knobs, best first</h2><p>{escape(NOTE)}</p>", _table(HEADERS, rows, set(NUMERIC)),
             f"<h2>Best configuration</h2><p>{escape(result['best_text'])}</p>",
             f"<p><code>{escape(result['best_yaml'])}</code>; use it with <code>{escape(result['use'])}</code></p>",
             f"<footer>yoloprof tune - {escape(stamp)}</footer>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>yoloprof tune {escape(result['id'])}</title><style>{CSS}</style>"
            f"</head><body><main>{''.join(parts)}</main></body></html>\n")
