"""`yoloprof tune`: a planner over the sweep machinery, not a second runner (DESIGN.md section 9
"Tune", docs/tune.md).

For each knob (sweep/tune_knobs.py) with levels that apply, one `trial=auto` sweep of the baseline
and every level (`<knob>=<baseline>,<level>,...`, `analysis.vary=<knob>`: each level against the
baseline, one process per job, interleaved), within its share of the budget: what is left of it
divided by the sweeps still to run, the confirm sweep counted. Then the decided improvements (the
best improved level of each knob whose outputs are `same` or not measured) are combined and, when
two or more, confirmed the same way in one more sweep: the baseline and the combination as two
files of a config group `tune` (`+tune=baseline,combo`) in the run's own config dir `conf/`. The
best configuration is the combination when confirmed improved, else the single improvement with
the highest ratio, else the baseline; its overrides are `best.yaml` (also `conf/tune/best.yaml`,
so `yoloprof sweep --config-dir <run>/conf +tune=best` applies them).

Folder `<project>/tune/<id>/`: tune.json (settings, plan, state), sweeps/<knob>/ and
sweeps/confirm/ (ordinary sweep folders), best.yaml, tune.parquet, report.html. Ctrl-C: exit 130
with one line naming `yoloprof tune --resume DIR`; a resume re-uses every finished sweep and
restarts the one that was stopped (a trial=auto sweep's rule is applied from its first round).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from yoloprof.analysis import tune_rows
from yoloprof.config.capture_settings import OUTPUT_KEYS
from yoloprof.defs import files
from yoloprof.errors import EXIT_INTERRUPTED, UsageError, YoloprofError, one_line
from yoloprof.sweep import tune_knobs

PROG = "yoloprof tune"
SCHEMA = "yoloprof.tune/1"
SWEEPS = "sweeps"
CONFIRM = "confirm"
CONF = "conf"
GROUP = "tune"          # the config group of the confirm sweep and of best.yaml
COMBO, BASELINE = "combo", "baseline"


@dataclass
class TuneSettings:
    model: str = "yolo"
    mode: str = "train"
    device: str = "cpu"
    batch: int | None = None
    imgsz: int | None = None
    budget_s: float = tune_knobs.DEFAULT_BUDGET_S
    knobs: list[str] = field(default_factory=lambda: list(tune_knobs.DEFAULT_ORDER))
    project: str = OUTPUT_KEYS["project"][0]
    threads: int = 0
    overrides: list[str] = field(default_factory=list)  # extra Hydra overrides for every sweep
    config_dir: str | None = None
    metric: str = "step_ms"
    advised: list[str] = field(default_factory=list)    # knobs a profile's advice names (--from)


def _has_setting(name: str) -> bool:
    from yoloprof.config.capture_settings import FIELDS

    return name in FIELDS


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from yoloprof.profiles.io import write_bytes_atomic

    write_bytes_atomic(path, json.dumps(data, indent=1, default=str).encode())


class Tune:
    def __init__(self, folder: Path, s: TuneSettings, plans: list[tune_knobs.KnobPlan], spent_s: float = 0.0) -> None:
        self.folder, self.s, self.plans = folder, s, plans
        self.started = time.monotonic() - spent_s  # a resume goes on with what is left of the budget
        self.rows: list[dict[str, Any]] = []
        # every knob this build has is pinned at its baseline level (the CLI's threads included)
        self.baseline = {p.name: p.baseline for p in plans if "" not in p.not_applicable}

    # -- the state on disk
    def save(self, state: str, **extra: Any) -> None:
        _write_json(self.folder / files.TUNE_MANIFEST, {
            "schema": SCHEMA, "id": self.folder.name, "state": state, "settings": asdict(self.s),
            "plans": [asdict(p) for p in self.plans], "spent_s": round(time.monotonic() - self.started, 3),
            **extra})

    @property
    def resume_hint(self) -> str:
        return f"{PROG} --resume {self.folder}"

    # -- the sweeps
    def common(self) -> list[str]:
        dirs = ["--config-dir", self.s.config_dir] if self.s.config_dir else []
        return [*workload(self.s), *dirs]

    def share(self, left: int) -> float:
        spent = time.monotonic() - self.started
        return max(1.0, (self.s.budget_s - spent) / max(1, left))

    def run_sweep(self, name: str, overrides: list[str], left: int) -> tuple[int, Path]:
        """One trial=auto sweep into sweeps/<name> (a finished one is re-used): (exit code, dir)."""
        from yoloprof.sweep.app import _run
        from yoloprof.sweep.plan import read_manifest

        sweep_dir = self.folder / SWEEPS / name
        if sweep_dir.is_dir():
            try:
                if read_manifest(sweep_dir).get("state") == "finished":
                    print(f"{PROG}: {name}: re-using the finished sweep {sweep_dir}", file=sys.stderr)
                    return 0, sweep_dir
            except YoloprofError:
                pass
            shutil.rmtree(sweep_dir)  # stopped part-way: its rounds start again
        argv = [*overrides, "trial=auto", f"adaptive.budget_s={self.share(left):.6g}",
                f"adaptive.metric={self.s.metric}", f"hydra.sweep.dir={sweep_dir}", f"sweep_name=tune_{name}"]
        print(f"{PROG}: {name}: yoloprof sweep {' '.join(argv)}", file=sys.stderr)
        with contextlib.redirect_stdout(sys.stderr):  # stdout keeps the tune table alone
            code, _ = _run(argv, resume_hint=self.resume_hint)
        return code, sweep_dir

    def knob_overrides(self, plan: tune_knobs.KnobPlan) -> list[str]:
        pins = [f"{k}={v}" for k, v in self.baseline.items() if k != plan.name]
        return [*self.common(), *pins, f"{plan.name}={','.join([plan.baseline, *plan.levels])}",
                f"analysis.vary={plan.name}"]

    def run_knobs(self) -> int | None:
        runnable = [p for p in self.plans if p.levels]
        for plan in self.plans:
            for level, why in plan.not_applicable.items():
                self.rows.append(tune_rows.not_applicable("knob", plan.name, level, why))
            if not plan.levels:
                continue
            left = len(runnable) - runnable.index(plan) + 1
            try:
                code, sweep_dir = self.run_sweep(plan.name, self.knob_overrides(plan), left)
            except YoloprofError as exc:  # the whole knob cannot run here (pre-flight refused it)
                self.rows += [tune_rows.not_applicable("knob", plan.name, lv, one_line(str(exc)))
                              for lv in plan.levels]
                continue
            if code == EXIT_INTERRUPTED:
                return code
            self.rows += tune_rows.knob_rows(sweep_dir, plan.name, plan.levels, self.s.metric)
        return None

    # -- the combination
    def write_group(self, name: str, values: dict[str, str], comment: str) -> Path:
        from yoloprof.profiles.io import write_bytes_atomic

        lines = ["# @package _global_", f"# {comment}"]
        lines += [f"{k}: {_yaml_value(v)}" for k, v in values.items()]
        path = self.folder / CONF / GROUP / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, ("\n".join(lines) + "\n").encode())
        return path

    def confirm(self, chosen: dict[str, dict[str, Any]]) -> dict[str, Any] | int:
        """The confirm sweep of the combination; its row, or the exit code of an interrupt."""
        combo = {**self.baseline, **{k: r["level"] for k, r in chosen.items()}}
        self.write_group(BASELINE, self.baseline, "yoloprof tune: the baseline")
        self.write_group(COMBO, combo, "yoloprof tune: the combination of the decided improvements")
        text = " ".join(f"{k}={r['level']}" for k, r in chosen.items())
        pinned = set(self.baseline)
        common = [o for o in self.common() if o.lstrip("+~").partition("=")[0] not in pinned]
        # the run's conf/ joins the search path (a user's --config-dir stays theirs)
        overrides = [*common, f"+{GROUP}={BASELINE},{COMBO}", f"analysis.vary={GROUP}",
                     f"hydra.searchpath=[file://{(self.folder / CONF).resolve()}]"]
        try:
            code, sweep_dir = self.run_sweep(CONFIRM, overrides, 1)
        except YoloprofError as exc:
            return tune_rows.not_applicable("confirm", "combination", text, one_line(str(exc)))
        if code == EXIT_INTERRUPTED:
            return code
        [row] = tune_rows.knob_rows(sweep_dir, GROUP, [text], self.s.metric, stage="confirm",
                                    labels={text: COMBO})
        row.update(knob="combination", config=text)
        return row

    def best(self, chosen: dict[str, dict[str, Any]], confirmed: dict[str, Any] | None) -> tuple[dict[str, str], str]:
        if confirmed is not None and confirmed.get("verdict_code") == tune_rows.IMPROVED:
            return {**self.baseline, **{k: r["level"] for k, r in chosen.items()}}, \
                f"{confirmed['config']} (combination, {confirmed['ratio']:.3f}x)"
        if chosen:
            top = max(chosen.values(), key=lambda r: r["ratio"])
            return {**self.baseline, top["knob"]: top["level"]}, f"{top['config']} ({top['ratio']:.3f}x)"
        return dict(self.baseline), "the baseline (no level improved on it)"


def workload(s: TuneSettings) -> list[str]:
    """The Hydra overrides of the workload every sweep of the run shares."""
    out = [f"mode={s.mode}", f"device={s.device}", *model_overrides(s.model)]
    out += [f"batch={s.batch}"] if s.batch is not None else []
    out += [f"imgsz={s.imgsz}"] if s.imgsz is not None else []
    return out + list(s.overrides)


def model_overrides(model: str) -> list[str]:
    """`--model` as `run`/`infer` spell it (`ultralytics:yolov8n.yaml`, `libreyolo:yolo9`) in a
    sweep's words (`model=ultralytics model.cfg=yolov8n.yaml`: the family's name key), or a model
    config of conf/model/ (or the user's --config-dir) by its name (`yolo`, `custom_example`)."""
    from yoloprof.config.model_families import FAMILIES, SEPARATOR, split_model

    if SEPARATOR not in model:
        return [f"model={model}"]
    family, name = split_model(model)  # an unknown family: one line with "did you mean"
    return [f"model={family}", f"model.{FAMILIES[family].name_key or 'name'}={name}"]


def check_workload(s: TuneSettings) -> None:
    """Compose the workload once before any folder is made: a typo (`--model yolov9`, `imgsz=65`)
    is a usage error (exit 2), not a row of "not applicable" for every level. The sweep's own
    pre-flight (sweep/plan.py) of the baseline's one job; nothing is created."""
    from yoloprof.sweep.plan import plan_sweep

    plan_sweep(workload(s), multirun_flag=False, config_dir=s.config_dir)


def _yaml_value(v: str) -> str:
    return v if v.lstrip("-").isdigit() else json.dumps(v)


def new_folder(project: str) -> Path:
    from yoloprof.config.schema import new_sweep_id

    folder = Path(project) / files.TUNE_DIR / new_sweep_id()
    folder.mkdir(parents=True)
    return folder


def plan_for(s: TuneSettings) -> list[tune_knobs.KnobPlan]:
    from yoloprof.config.capture_settings import effective_threads, usable_cpus

    order = tune_knobs.advice_first(s.knobs, s.advised)
    return tune_knobs.plan_knobs(order, s.mode, s.device, threads=effective_threads(s.threads),
                                 cpus=usable_cpus() or 1, has_setting=_has_setting)


def load(folder: Path) -> tuple[TuneSettings, list[tune_knobs.KnobPlan], float]:
    """The settings and plan of an earlier run (`--resume DIR`), or one line refusing."""
    path = folder / files.TUNE_MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {folder}: not a tune folder ({path.name}: {one_line(str(exc))})") from exc
    if data.get("schema") != SCHEMA:
        raise UsageError(f"--resume {folder}: {path.name} is not {SCHEMA}")
    return (TuneSettings(**data["settings"]), [tune_knobs.KnobPlan(**p) for p in data["plans"]],
            float(data.get("spent_s") or 0.0))


def run_tune(s: TuneSettings | None, resume: Path | None = None) -> int:
    """The whole tune run; its exit code (0, or 130 after Ctrl-C)."""
    if resume is not None:
        s, plans, spent = load(resume)
        folder = resume
    else:
        assert s is not None
        check_workload(s)
        plans = plan_for(s)
        folder, spent = new_folder(s.project), 0.0
    tune = Tune(folder, s, plans, spent)
    tune.save("running")
    try:
        code = tune.run_knobs()
        if code is not None:
            tune.save("interrupted")
            return code
        chosen = tune_rows.decided_improvements(tune.rows)
        confirmed = None
        if len(chosen) > 1:
            got = tune.confirm(chosen)
            if isinstance(got, int):
                tune.save("interrupted")
                return got
            confirmed = got
            tune.rows.append(got)
        best, best_text = tune.best(chosen, confirmed)
        finish(tune, best, best_text)
    except KeyboardInterrupt:
        tune.save("interrupted")
        print(f"{PROG}: interrupted; nothing half-written; continue with: {tune.resume_hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def finish(tune: Tune, best: dict[str, str], best_text: str) -> None:
    """best.yaml (twice: the run's root, and conf/tune/best.yaml), tune.parquet, report.html, the table."""
    from yoloprof.profiles.io import write_bytes_atomic
    from yoloprof.render.report import _parquet_bytes
    from yoloprof.render.tune_table import render_tune, tune_html

    comment = f"yoloprof tune {tune.folder.name}: {best_text}"
    group_file = tune.write_group("best", best, comment)
    best_path = tune.folder / files.TUNE_BEST
    write_bytes_atomic(best_path, group_file.read_bytes())
    df = tune_rows.ranked(tune.rows)
    write_bytes_atomic(tune.folder / files.TUNE_ROWS, _parquet_bytes(df))
    s = tune.s
    result = {"id": tune.folder.name, "mode": s.mode, "device": s.device, "model": s.model,
              "budget_s": s.budget_s, "best_text": best_text, "best_yaml": str(best_path),
              "baseline_text": " ".join(f"{k}={v}" for k, v in tune.baseline.items()) or "defaults",
              "use": f"yoloprof sweep --config-dir {tune.folder / CONF} +{GROUP}=best ...",
              "reports": {d.name: f"{SWEEPS}/{d.name}/{files.ANALYSIS_DIR}/{files.REPORT_HTML}"
                          for d in sorted((tune.folder / SWEEPS).glob("*"))
                          if (d / files.ANALYSIS_DIR / files.REPORT_HTML).is_file()}}
    write_bytes_atomic(tune.folder / files.REPORT_HTML, tune_html(df, result).encode())
    tune.save("finished", best=best, best_text=best_text)
    render_tune(df, result)
