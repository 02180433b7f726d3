"""The analysis stages end to end: collect -> read -> compare, returning view tables.

`analyze` resolves the settings (the sweep's recorded ones, replaced by what was given) and
computes everything (`analyze_collected`): the comparison table, best rows, Pareto set, scaling,
drift, notes. Nothing here renders, writes or prints: `yoloprof.render.report.analyze_sweep`
(what the sweep app calls after every sweep and what `yoloprof analyze` runs) renders every
output in memory, writes them together into the analysis' own folder (analysis/outputs.py) and
prints the terminal table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from yoloprof.analysis.collect import Collected, collect
from yoloprof.analysis.compare_configs import choose_metrics, compare_configs, gmean_table, profile_floors, regressions
from yoloprof.analysis.configs import Configs, build_configs, plan_baseline
from yoloprof.analysis.contended import apply_contention, contended_jobs, judged, warnings_for
from yoloprof.analysis.drift import apply_drift, drift_table, drift_warnings, job_values
from yoloprof.analysis.envdiff import apply_env_flags, env_differences, env_warnings
from yoloprof.analysis.inventory import PROBLEMS
from yoloprof.analysis.dominance import THROUGHPUT, best_within_modes, modes_of, pareto_within_modes
from yoloprof.analysis.insights import pareto_memory, scaling
from yoloprof.analysis.outputs import analysis_dir, recorded_settings
from yoloprof.analysis.settings import DEFAULT_NAME, AnalysisSettings, check_name, command
from yoloprof.analysis.knob_effects import apply_knob_effects
from yoloprof.config.stat_defaults import ALPHA, CORRECTION, NOISE, OUTPUT_TOL
from yoloprof.analysis.tables import metric_meta, process_means, read_tables
from yoloprof.defs import metrics as registry


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
    name: str = DEFAULT_NAME          # the analysis' name: "default" lives in analysis/
    command: str = ""                 # the exact command that reproduces it
    folder: Path | None = None        # where its files are (set by analyze_sweep)

    @property
    def title(self) -> str:
        """`<sweep name> / <sweep id folder>` (just the folder when rows carry no name)."""
        name = self.sweep_name if self.sweep_name and self.sweep_name != self.sweep_dir.name else ""
        return f"{name} / {self.sweep_dir.name}" if name else self.sweep_dir.name

    @property
    def out_dir(self) -> Path:
        return self.folder if self.folder is not None else analysis_dir(self.sweep_dir, self.name)

    folders: list[dict[str, str]] = field(default_factory=list)  # job folders not ok (state, detail)
    drift: pd.DataFrame = field(default_factory=pd.DataFrame)    # per configuration and metric
    env_diffs: pd.DataFrame = field(default_factory=pd.DataFrame)  # per compared pair and field

    def regressions(self) -> pd.DataFrame:
        return regressions(self.comparisons)

    def unaccounted(self) -> list[dict[str, str]]:
        """Job folders neither ok, failed nor skipped: missing, corrupt, foreign or duplicate rows."""
        return [f for f in self.folders if f["state"] in PROBLEMS]

    def to_json(self) -> dict[str, Any]:
        """The `--json` document: the comparison table plus the context needed to read it."""
        cmp = self.comparisons.drop(columns=["group_hash", "baseline_hash"], errors="ignore")
        front = self.pareto[self.pareto["pareto"]] if "pareto" in self.pareto else self.pareto.iloc[0:0]
        return {"sweep_dir": str(self.sweep_dir), "analysis": self.name, "analysis_dir": str(self.out_dir),
                "command": self.command, "baseline": self.baseline, "varying_axes": self.varying,
                "metrics": self.metrics_compared, "settings": self.settings, "jobs": self.jobs,
                "comparisons": _records(cmp), "best": _records(self.best),
                "pareto": _records(front.drop(columns=["group_hash"], errors="ignore")),
                "scaling": _records(self.scaling), "job_folders": self.folders,
                "drift": _records(self.drift.drop(columns=["group_hash"], errors="ignore")),
                "env_differences": _records(self.env_diffs.drop(columns=["group_hash", "baseline_hash"],
                                                                errors="ignore")),
                "warnings": self.warnings, "notes": self.notes,
                "module_growth": _records(self.tables.get("module_growth", pd.DataFrame()))}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return df.astype(object).where(df.notna(), None).to_dict("records")


def analyze_collected(c: Collected, *, baseline: list[str] | None = None, vary: str | None = None,
                      metrics: list[str] | None = None, alpha: float = ALPHA, noise: float = NOISE,
                      correction: str = CORRECTION, output_tol: float = OUTPUT_TOL) -> AnalysisResult:
    """Compute every table from collected rows/profiles; no files written, nothing printed."""
    tables = read_tables(c)
    hit = contended_jobs(c.ok)  # jobs that ran contended: kept in the tables, left out of verdicts
    scored = judged(tables["metrics"], hit)
    cfg: Configs = build_configs(c.ok)
    plan = plan_baseline(cfg, baseline=baseline, vary=vary)
    modes = sorted(c.ok["mode"].dropna().unique()) if "mode" in c.ok else []
    devices = sorted(c.ok["device"].dropna().astype(str).unique()) if "device" in c.ok else []
    names, metric_notes = choose_metrics(tables["metrics"], metrics, modes, devices)
    comparisons = compare_configs(scored, cfg, plan, names, alpha=alpha, noise=noise,
                                  correction=correction, floor_for=profile_floors(scored, c.profiles))
    jobs = job_values(scored[scored["metric"].isin(names)], c.ok)
    comparisons = apply_drift(comparisons, jobs, alpha=alpha, noise=noise)
    drift = drift_table(jobs, dict(zip(cfg.table.index, cfg.table["config"].astype(str))), alpha=alpha)
    env_diffs = env_differences(c.ok, cfg, plan.pairs)
    comparisons = apply_env_flags(comparisons, env_diffs)
    from yoloprof.analysis.adaptive_verdicts import apply_sequential  # trial=auto: the rule that stopped it

    comparisons = apply_sequential(comparisons, scored, c.sweep_dir, alpha=alpha, noise=noise)
    comparisons = apply_contention(comparisons, scored, hit)
    comparisons = apply_knob_effects(comparisons, scored, output_tol)  # outputs, payback_calls
    memory = pareto_memory(names, tables["metrics"], devices)
    view = sorted(set(names) | set(registry.names("view")) | {memory})
    gm = gmean_table(scored, cfg, view, alpha)
    front_metrics = set(names) | {THROUGHPUT, "p50_ms", "step_ms", memory}
    samples = process_means(scored[scored["metric"].isin(front_metrics)])
    modes_map = modes_of(c.ok)  # best and Pareto: within a mode, with the comparisons' statistics
    best = best_within_modes(gm, samples, metric_meta(tables["metrics"]), names, modes_map,
                             comparisons["p"].tolist() if "p" in comparisons else [],
                             alpha=alpha, noise=noise, correction=correction)
    front = pareto_within_modes(gm, samples, modes_map, memory, alpha=alpha, noise=noise, correction=correction)
    notes = list(c.notes) + metric_notes
    notes += [f"{cfg.label(g)}: no baseline configuration with the same other axes; not compared"
              for g in plan.unpaired]
    from yoloprof.analysis.module_growth import growth_notes, module_growth

    tables["module_growth"] = module_growth(c, cfg)  # which modules scale worst along an axis
    notes += growth_notes(tables["module_growth"])
    labels = cfg.table["config"]
    for name in ("metrics", "phases", "categories", "kernels", "ops"):
        if "group_hash" in tables[name]:
            tables[name].insert(0, "config", tables[name]["group_hash"].map(labels))
    states = pd.Series([f.state for f in c.folders], dtype=object)
    status = states.value_counts() if c.folders else c.rows["status"].value_counts()
    return AnalysisResult(
        sweep_dir=c.sweep_dir, baseline=plan.description, varying=cfg.varying, metrics_compared=names,
        comparisons=comparisons, configs=cfg.table.reset_index(drop=True), tables=tables, best=best,
        pareto=front, scaling=scaling(gm, cfg, noise=noise), gmeans=gm,
        settings=AnalysisSettings(tuple(baseline or ()), vary, tuple(metrics or ()), alpha, noise,
                                  correction, output_tol).to_dict(),
        warnings=list(c.warnings) + warnings_for(hit) + env_warnings(env_diffs) + drift_warnings(drift), notes=notes,
        drift=drift,
        env_diffs=env_diffs,
        jobs={"total": int(len(c.folders) or len(c.rows)), **{str(k): int(v) for k, v in status.items()}},
        folders=[f.to_dict() for f in c.folders if f.state != "ok"],
        sweep_name=str(c.ok["sweep_name"].dropna().iloc[0]) if c.ok.get("sweep_name") is not None
        and c.ok["sweep_name"].notna().any() else "",
    )


def resolve(sweep_dir: Path, *, name: str | None = None, auto_baseline: bool = False,
            **given: Any) -> tuple[AnalysisSettings, str, str]:
    """(settings, analysis name, reproducing command): the sweep's recorded settings with the
    given ones replacing them; the recorded settings unchanged and no name = the default analysis."""
    recorded, _ = recorded_settings(sweep_dir)
    settings = recorded.with_given(auto_baseline=auto_baseline, **given).validate()
    given_name = check_name(name) if name else None
    final = given_name or (settings.derived_name(recorded) if settings != recorded else DEFAULT_NAME)
    return settings, final, command(sweep_dir, settings, recorded, given_name)


def analyze(sweep_dir: str | Path, *, baseline: list[str] | None = None, vary: str | None = None,
            metrics: list[str] | None = None, alpha: float | None = None, noise: float | None = None,
            correction: str | None = None, auto_baseline: bool = False,
            name: str | None = None, output_tol: float | None = None) -> AnalysisResult:
    """Resolve the settings (the sweep's recorded ones, replaced by what was given) and compute
    every view table: no files written, nothing printed. `yoloprof.render.report.analyze_sweep`
    (the sweep app, `yoloprof analyze`) then writes the analysis folder and prints the table."""
    sweep_dir = Path(sweep_dir)
    # the sweep app passes its Hydra config values (ListConfig, "" or [] for "not set")
    settings, name, cmd = resolve(sweep_dir, name=name, auto_baseline=auto_baseline, baseline=baseline,
                                  vary=vary, metrics=metrics, alpha=alpha, noise=noise, correction=correction,
                                  output_tol=output_tol)
    c = collect(sweep_dir)
    result = analyze_collected(c, baseline=list(settings.baseline) or None, vary=settings.vary,
                               metrics=list(settings.metrics) or None, alpha=settings.alpha,
                               noise=settings.noise, correction=settings.correction,
                               output_tol=settings.output_tol)
    result.name, result.command, result.folder = name, cmd, analysis_dir(sweep_dir, name)
    return result
