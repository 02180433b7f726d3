"""The analysis report: an AnalysisResult (computed by yoloprof.analysis.run) rendered in memory
(comparison.md/.csv, one parquet per view table, report.html, settings.json), written into the
analysis' folder together or not at all (analysis/outputs.py), and printed as the terminal table.
`analyze_sweep` is what the sweep app calls after every sweep and what `yoloprof analyze` runs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from yoloprof.analysis.outputs import SETTINGS_FILE, analysis_dir, check_target, commit, record
from yoloprof.analysis.run import AnalysisResult, analyze, resolve
from yoloprof.analysis.settings import AnalysisSettings
from yoloprof.defs import files as names


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df = df.copy()
    for col in df.columns:  # mixed-type axis columns (numbers and None/strings) -> strings
        if df[col].dtype == object and df[col].map(type).nunique() > 1 and \
                not df[col].map(lambda v: isinstance(v, list)).any():
            df[col] = df[col].map(lambda v: None if v is None or v != v else str(v))
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def render_outputs(result: AnalysisResult, *, html: bool = True) -> dict[str, bytes]:
    """Every file of one analysis, rendered in memory (nothing is written if one fails):
    comparison.md/.csv, one parquet per tidy table, report.html, settings.json."""
    from yoloprof.render.csvout import comparison_csv
    from yoloprof.render.markdown import comparison_markdown

    out = {names.COMPARISON_MD: comparison_markdown(result).encode(),
           names.COMPARISON_CSV: comparison_csv(result.comparisons).encode()}
    frames = {"comparisons": result.comparisons, "configs": result.configs, "best": result.best,
              "pareto": result.pareto, "scaling": result.scaling, "gmeans": result.gmeans, "drift": result.drift,
              "env_diffs": result.env_diffs,
              **result.tables}
    for name, df in frames.items():
        out[f"{name}.parquet"] = _parquet_bytes(df)
    if html:
        out[names.REPORT_HTML] = _report_html(result)
    rec = record(AnalysisSettings.from_mapping(result.settings), result.name, result.command,
                 result.sweep_dir, [*out, SETTINGS_FILE], {"jobs": result.jobs, "baseline": result.baseline})
    out[SETTINGS_FILE] = (json.dumps(rec, indent=1) + "\n").encode()
    return out


def _report_html(result: AnalysisResult) -> bytes:
    """The HTML report; what matplotlib warns while drawing (layout chatter) becomes one note line
    each in the terminal output, never a raw Python warning with its source line."""
    import warnings

    from yoloprof.render.html import render_report

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = render_report(result).encode()
    for text in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
        result.notes.append(f"report figures: {text[:200]}")
    return data


def write_outputs(result: AnalysisResult, *, html: bool = True) -> dict[str, Path]:
    """Render and write every output into the analysis' folder, together or not at all."""
    result.files = commit(result.out_dir, result.name, render_outputs(result, html=html),
                          AnalysisSettings.from_mapping(result.settings),
                          keep=() if html else (names.REPORT_HTML,))  # not asked for: left as it is
    return result.files


def analyze_sweep(sweep_dir: str | Path, *, baseline: list[str] | None = None, vary: str | None = None,
                  metrics: list[str] | None = None, alpha: float | None = None, noise: float | None = None,
                  correction: str | None = None, auto_baseline: bool = False, name: str | None = None,
                  html: bool = True, console: Any = None, output_tol: float | None = None) -> AnalysisResult:
    """Run every stage over a sweep folder, write the analysis' folder (analysis/ for the sweep's
    recorded settings, analysis/<name>/ otherwise), print the table on `console` (a rich Console;
    None = a new one on stdout). Settings left None are the sweep's recorded ones. Raises
    yoloprof.errors types; an analysis with other settings already in the target folder is a
    usage error (nothing is overwritten)."""
    given: dict[str, Any] = dict(baseline=baseline, vary=vary, metrics=metrics, alpha=alpha, noise=noise,
                 correction=correction, auto_baseline=auto_baseline, name=name, output_tol=output_tol)
    settings, final, _ = resolve(Path(sweep_dir), **given)
    check_target(analysis_dir(Path(sweep_dir), final), settings, final)  # before any work
    result = analyze(sweep_dir, **given)
    write_outputs(result, html=html)
    from yoloprof.render.analysis_terminal import print_analysis

    print_analysis(result, console)
    return result
