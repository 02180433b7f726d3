"""The analysis stages end to end: collect -> read -> compare -> report.

`analyze_sweep` is what the sweep app calls after every sweep and what `yoloprof analyze` runs;
it computes everything first (`analyze_collected`, no files, no printing) and then writes the
report files under `<sweep_dir>/analysis/` and prints the terminal table.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from yoloprof.analysis.collect import Collected, collect
from yoloprof.analysis.compare import choose_metrics, compare_configs, gmean_table, regressions
from yoloprof.analysis.configs import Configs, build_configs, plan_baseline
from yoloprof.analysis.insights import best_per_metric, pareto, scaling
from yoloprof.analysis.tables import metric_meta, pooled_samples, read_tables
from yoloprof.profiles.io import write_bytes_atomic

OUT_DIR = "analysis"


@dataclass
class AnalysisResult:
    """Everything the report shows. DataFrames are the tidy tables also written as parquet."""

    sweep_dir: Path
    baseline: str
    varying: list[str]
    metrics_compared: list[str]
    comparisons: pd.DataFrame
    configs: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    best: pd.DataFrame
    pareto: pd.DataFrame
    scaling: pd.DataFrame
    gmeans: pd.DataFrame
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    sweep_name: str = ""

    @property
    def title(self) -> str:
        """`<sweep name> / <sweep id folder>` (just the folder when rows carry no name)."""
        name = self.sweep_name if self.sweep_name and self.sweep_name != self.sweep_dir.name else ""
        return f"{name} / {self.sweep_dir.name}" if name else self.sweep_dir.name

    @property
    def out_dir(self) -> Path:
        return self.sweep_dir / OUT_DIR

    def regressions(self) -> pd.DataFrame:
        return regressions(self.comparisons)

    def to_json(self) -> dict[str, Any]:
        """The `--json` document: the comparison table plus the context needed to read it."""
        cmp = self.comparisons.drop(columns=["group_hash", "baseline_hash"], errors="ignore")
        front = self.pareto[self.pareto["pareto"]] if "pareto" in self.pareto else self.pareto.iloc[0:0]
        return {"sweep_dir": str(self.sweep_dir), "baseline": self.baseline, "varying_axes": self.varying,
                "metrics": self.metrics_compared, "settings": self.settings, "jobs": self.jobs,
                "comparisons": _records(cmp), "best": _records(self.best),
                "pareto": _records(front.drop(columns=["group_hash"], errors="ignore")),
                "scaling": _records(self.scaling), "warnings": self.warnings, "notes": self.notes}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return df.astype(object).where(df.notna(), None).to_dict("records")


def analyze_collected(c: Collected, *, baseline: list[str] | None = None, vary: str | None = None,
                      metrics: list[str] | None = None, alpha: float = 0.05, noise: float = 0.02,
                      correction: str = "holm") -> AnalysisResult:
    """Compute every table from collected rows/profiles; no files written, nothing printed."""
    tables = read_tables(c)
    cfg: Configs = build_configs(c.ok)
    plan = plan_baseline(cfg, baseline=baseline, vary=vary)
    modes = sorted(c.ok["mode"].dropna().unique()) if "mode" in c.ok else []
    names, metric_notes = choose_metrics(tables["metrics"], metrics, modes)
    comparisons = compare_configs(tables["metrics"], cfg, plan, names, alpha=alpha, noise=noise,
                                  correction=correction)
    view = sorted(set(names) | {"img_per_s", "step_ms", "p50_ms", "peak_mem_mb"})
    gm = gmean_table(tables["metrics"], cfg, view, alpha)
    samples = pooled_samples(tables["metrics"][tables["metrics"]["metric"].isin(names)])
    best = best_per_metric(gm, samples, metric_meta(tables["metrics"]), names, alpha=alpha, noise=noise)
    notes = list(c.notes) + metric_notes
    notes += [f"{cfg.label(g)}: no baseline configuration with the same other axes; not compared"
              for g in plan.unpaired]
    labels = cfg.table["config"]
    for name in ("metrics", "phases", "categories", "kernels", "ops"):
        if "group_hash" in tables[name]:
            tables[name].insert(0, "config", tables[name]["group_hash"].map(labels))
    status = c.rows["status"].value_counts()
    return AnalysisResult(
        sweep_dir=c.sweep_dir, baseline=plan.description, varying=cfg.varying, metrics_compared=names,
        comparisons=comparisons, configs=cfg.table.reset_index(drop=True), tables=tables, best=best,
        pareto=pareto(gm), scaling=scaling(gm, cfg, noise=noise), gmeans=gm,
        settings={"alpha": alpha, "noise": noise, "correction": correction},
        warnings=list(c.warnings), notes=notes,
        jobs={"total": int(len(c.rows)), **{str(k): int(v) for k, v in status.items()}},
        sweep_name=str(c.ok["sweep_name"].dropna().iloc[0]) if c.ok.get("sweep_name") is not None
        and c.ok["sweep_name"].notna().any() else "",
    )


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df = df.copy()
    for col in df.columns:  # mixed-type axis columns (numbers and None/strings) -> strings
        if df[col].dtype == object and df[col].map(type).nunique() > 1 and \
                not df[col].map(lambda v: isinstance(v, list)).any():
            df[col] = df[col].map(lambda v: None if v is None or v != v else str(v))
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def write_outputs(result: AnalysisResult, *, html: bool = True) -> dict[str, Path]:
    """comparison.md/.csv, one parquet per tidy table, report.html; each written atomically."""
    from yoloprof.render.csvout import comparison_csv
    from yoloprof.render.markdown import comparison_markdown

    out = result.out_dir
    files = {
        "comparison.md": write_bytes_atomic(out / "comparison.md", comparison_markdown(result).encode()),
        "comparison.csv": write_bytes_atomic(out / "comparison.csv", comparison_csv(result.comparisons).encode()),
    }
    frames = {"comparisons": result.comparisons, "configs": result.configs, "best": result.best,
              "pareto": result.pareto, "scaling": result.scaling, "gmeans": result.gmeans, **result.tables}
    for name, df in frames.items():
        files[f"{name}.parquet"] = write_bytes_atomic(out / f"{name}.parquet", _parquet_bytes(df))
    if html:
        from yoloprof.render.html import render_report

        files["report.html"] = write_bytes_atomic(out / "report.html", render_report(result).encode())
    result.files = files
    return files


def analyze_sweep(sweep_dir: str | Path, *, baseline: list[str] | None = None, vary: str | None = None,
                  metrics: list[str] | None = None, alpha: float = 0.05, noise: float = 0.02,
                  correction: str = "holm", html: bool = True, console: Any = None) -> AnalysisResult:
    """Run every stage over a sweep folder, write `<sweep_dir>/analysis/`, print the table on
    `console` (a rich Console; None = a new one on stdout). Raises yoloprof.errors types."""
    c = collect(sweep_dir)
    # the sweep app passes its Hydra config values (ListConfig, "" or [] for "not set")
    baseline = [str(b) for b in baseline] if baseline else None
    metrics = [str(m) for m in metrics] if metrics else None
    result = analyze_collected(c, baseline=baseline, vary=vary, metrics=metrics, alpha=alpha,
                               noise=noise, correction=correction)
    write_outputs(result, html=html)
    from yoloprof.render.analysis_terminal import print_analysis

    print_analysis(result, console)
    return result
