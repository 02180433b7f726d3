"""`yoloprof sweep [hydra args]`: the Hydra app behind capture sweeps (DESIGN.md section 8).

Flow: parse Hydra's own flags -> pre-flight (compose + validate every job, create the sweep dir
with its manifest) -> run `hydra.main` with the argv we built (the basic launcher runs the jobs in
this process, each writing profile.json + row.parquet) -> consolidate `results.parquet` -> job
table -> analysis -> exit 1 if any job failed.

Hydra reports its own errors as multi-line text and calls `sys.exit`; we run it with
`HYDRA_FULL_ERROR=1` so errors arrive as exceptions that become one `yoloprof: error:` line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import hydra
from omegaconf import DictConfig

from yoloprof.analysis.settings import analysis_record
from yoloprof.config.compose import normalise_overrides, one_line
from yoloprof.config.paths import conf_dir
from yoloprof.config.schema import SWEEP_ID_ENV, new_sweep_id, register
from yoloprof.defs import files
from yoloprof.errors import UsageError, YoloprofError
from yoloprof.sweep import resume as resumes
from yoloprof.sweep.plan import (dir_overrides, discard_if_unused, new_manifest, plan_sweep, prepare_dir,
                                 read_manifest, set_manifest_state)

register()
PROG = "yoloprof sweep"
# Hydra flags that only show information: handed to Hydra untouched, no sweep is planned.
_INFO_FLAGS = ("help", "hydra_help", "cfg", "info", "shell_completion")


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
def hydra_app(cfg: DictConfig) -> str | float:
    from yoloprof.sweep.job import run_job

    return run_job(cfg)


def _parse(argv: list[str]) -> argparse.Namespace:
    from yoloprof.config.hydra_adapter import args_parser

    try:
        # intermixed: `yoloprof sweep batch=1,2 -m` works as well as `-m batch=1,2`
        return args_parser().parse_intermixed_args(argv)
    except SystemExit as exc:  # argparse already printed the usage line
        raise UsageError(f"invalid arguments for {PROG}: {' '.join(argv)}") from exc


def split_resume(overrides: list[str]) -> tuple[list[str], Path | None]:
    """Split off `resume=DIR` (ours, not a config key); `+sweep=X` becomes `sweep=X`."""
    out, resume = [], None
    for item in normalise_overrides(overrides):
        if item.startswith("resume="):
            resume = Path(item.split("=", 1)[1])
            continue
        out.append(item)
    return out, resume


class NoFeasiblePoint(YoloprofError):
    """A search sweep ran its trials and none was feasible (sweep/search.py): the rows say why."""

    def __init__(self) -> None:
        super().__init__("the search found no feasible point: every job failed, had no value of "
                         "search.metric or was above search.max_peak_mem_mib (see the job table)")


def _launch(overrides: list[str], multirun: bool, config_dir: str | None) -> None:
    """Run hydra.main with our argv; restore argv and the environment whatever happens."""
    from hydra.core.global_hydra import GlobalHydra

    saved_argv, saved_full = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    sys.argv = [PROG, *(["-m"] if multirun else []), *(["--config-dir", config_dir] if config_dir else []),
                *overrides]
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        hydra_app()  # the sweeper is yoloprof's own (hydra/sweeper: yoloprof, sweep/sweeper.py)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise YoloprofError(f"hydra stopped the sweep (exit {exc.code})") from exc
    except YoloprofError:
        raise
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        if "No trials are completed" in str(exc):  # optuna: every trial failed or was infeasible
            raise NoFeasiblePoint() from exc
        raise YoloprofError(f"sweep stopped: {one_line(exc)}") from exc
    finally:
        sys.argv = saved_argv
        if saved_full is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved_full
        GlobalHydra.instance().clear()


# Hydra's output-dir keys: `hydra.sweep.dir=X` (and for a single run `hydra.run.dir=X`) is the
# sweep folder, with the jobs, manifest and results.parquet in it (plan.sweep_dir_of); the job
# folders inside it are always named by job number, because resume, consolidation and analysis
# find the jobs there.
FIXED_DIR_KEYS = ("hydra.sweep.subdir",)


def refuse_dir_overrides(overrides: list[str]) -> None:
    """`hydra.sweep.subdir` would rename the job folders, which yoloprof finds by job number."""
    for item in overrides:
        key = item.lstrip("+~").partition("=")[0]
        if key in FIXED_DIR_KEYS:
            raise UsageError(f"{key} is set by yoloprof: jobs go to <sweep dir>/<job number>; choose the "
                             "sweep folder with hydra.sweep.dir=DIR (or project=DIR and sweep_name=NAME)")


def implied_sweep_name(overrides: list[str], composed: str) -> str | None:
    """A user's experiment file without `sweep_name` is named after the file (`+sweep=mine` ->
    `mine`); None when the file names itself or no file is chosen."""
    choice = next((o.split("=", 1)[1] for o in overrides if o.startswith("sweep=")), None)
    if composed == "adhoc" and choice and choice != "null":
        return choice.replace("/", "_")
    return None


def _flags_then_overrides(argv: list[str], overrides: list[str], extra: list[str]) -> list[str]:
    """Hydra's parser takes the overrides as one positional run: flags first (`--cfg job`,
    `--config-dir conf`), then every override, the implied ones last."""
    rest, left = [], list(overrides)
    for arg in argv:
        if left and arg == left[0]:
            left.pop(0)
        else:
            rest.append(arg)
    return [*rest, *normalise_overrides(overrides), *extra]


def _passthrough(argv: list[str], args: argparse.Namespace) -> int:
    """--help, --cfg job, --info ...: Hydra prints, nothing runs. The config shown is the one a
    run would use, the implied sweep name included."""
    extra: list[str] = []
    if args.cfg:
        from yoloprof.config.compose import compose_job

        overrides = normalise_overrides(list(args.overrides))
        if not any(o.startswith("sweep_name=") for o in overrides):
            name = implied_sweep_name(overrides, str(compose_job(overrides, args.config_dir).sweep_name))
            extra = [f"sweep_name={name}"] if name else []
    saved = sys.argv
    sys.argv = [PROG, *_flags_then_overrides(argv, list(args.overrides), extra)]
    try:
        hydra_app()
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 2
    finally:
        sys.argv = saved
    return 0


# `-sc/--shell-completion` answers for the whole `yoloprof` command, which only the CLI layer
# above this one knows: the CLI installs its handler here (yoloprof.completion.hydra_flag).
ShellCompletion = Callable[[list[str]], int]
SHELL_COMPLETION: "ShellCompletion | None" = None


def _shell_completion(overrides: list[str]) -> int:
    if SHELL_COMPLETION is None:
        raise UsageError("shell completion: run `yoloprof sweep -sc install=bash` "
                         "(or `yoloprof completion bash`)")
    return SHELL_COMPLETION(overrides)


def run_analysis(sweep_dir: Path, settings: dict[str, Any]) -> None:
    """The analysis stages over the finished sweep (conf/analysis: its keys are analyze_sweep's
    keyword arguments, plus `enabled`)."""
    if not settings.get("enabled", True):
        return
    from yoloprof.render.report import analyze_sweep

    kwargs = {k: v for k, v in settings.items() if k != "enabled"}
    try:
        analyze_sweep(sweep_dir, **kwargs)
    except YoloprofError as exc:
        print(f"{PROG}: analysis: {exc}", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - the rows are safe; say so, rerun with `yoloprof analyze`
        print(f"{PROG}: analysis failed ({type(exc).__name__}: {exc}); the rows are intact, rerun it "
              f"with: yoloprof analyze {sweep_dir}", file=sys.stderr)


def finish(sweep_dir: Path, total: int | None, analysis: dict[str, Any]) -> int:
    """Consolidate, show every job, analyse; 1 if any job failed or a row is unreadable."""
    import warnings

    from yoloprof.sweep.progress import print_summary
    from yoloprof.profiles.rows import CorruptRowsWarning, consolidate, read_rows

    corrupt: list[Path] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorruptRowsWarning)  # listed below instead
        consolidate(sweep_dir, corrupt)
        df = read_rows(sweep_dir)
    print_summary(df, str(sweep_dir))
    for path in corrupt:
        print(f"{PROG}: warning: unreadable row skipped: {path}", file=sys.stderr)
    missing = max(0, total - len(df) - len(corrupt)) if total is not None else 0
    if missing:  # e.g. a job the scheduler killed without requeueing it (its job_state.json says so)
        print(f"{PROG}: warning: {missing} of {total} jobs wrote no row; "
              f"rerun them with resume={sweep_dir}", file=sys.stderr)
    from yoloprof.sweep.machine import WAITS, wait_summary

    if wait_summary():
        print(f"{PROG}: {wait_summary()}", file=sys.stderr)
    WAITS.clear()
    failed = int((df["status"] == "failed").sum()) if len(df) else 0
    if failed:
        print(f"{PROG}: {failed} of {len(df)} jobs failed (tracebacks in <job dir>/{files.JOB_LOG})",
              file=sys.stderr)
    run_analysis(sweep_dir, analysis)
    return 1 if failed or corrupt or missing else 0


def main(argv: list[str]) -> int:
    """Entry point of `yoloprof sweep ...` and `python -m yoloprof.sweep ...`.

    `--json` (ours, not Hydra's): everything that normally goes to stdout (Hydra's job log, the job
    table, the analysis table) goes to stderr instead, and stdout gets one JSON document: the sweep
    dir, every job's row headline and where the results and analysis are."""
    argv = list(argv)
    if "--json" not in argv:
        return _run(argv)[0]
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # before Hydra binds its log handler to stdout
        code, sweep_dir = _run([a for a in argv if a != "--json"])
    if sweep_dir is not None:
        from yoloprof.render.jsonout import emit_json

        emit_json(json_summary(sweep_dir), real_stdout)
    return code


def json_summary(sweep_dir: Path) -> dict[str, Any]:
    import json

    from yoloprof.defs import metrics as registry
    from yoloprof.profiles.rows import read_rows

    df = read_rows(sweep_dir)
    wanted = ("job_num", "status", "overrides", *registry.names("row"), "verdict_bound", "error", "profile_path")
    jobs = json.loads(df[[c for c in wanted if c in df.columns]].to_json(orient="records")) if len(df) else []
    for job in jobs:  # the row keeps overrides as a JSON string (one flat Parquet column)
        job["overrides"] = json.loads(job["overrides"]) if job.get("overrides") else []
    analysis = sweep_dir / files.ANALYSIS_DIR
    return {"sweep_dir": str(sweep_dir), "results": str(sweep_dir / files.RESULTS),
            "analysis_dir": str(analysis) if analysis.is_dir() else None,
            "jobs": jobs, "failed": sum(1 for j in jobs if j.get("status") == "failed")}


def _run(argv: list[str], resume_hint: str | None = None) -> tuple[int, Path | None]:
    """(exit code, sweep dir or None when nothing was swept). `resume_hint`: the command the
    Ctrl-C line names (a planner over sweeps, `yoloprof tune`, names its own)."""
    yes = "--yes" in argv  # ours: confirms rerun= of finished jobs
    args = _parse([a for a in argv if a != "--yes"])
    if args.shell_completion:
        return _shell_completion(list(args.overrides)), None
    if any(getattr(args, flag, None) for flag in _INFO_FLAGS):
        return _passthrough(list(argv), args), None
    overrides, resume = split_resume(list(args.overrides))
    overrides, rerun_text = resumes.split_rerun(overrides)
    refuse_dir_overrides(overrides)
    multirun, config_dir = bool(args.multirun), args.config_dir
    if rerun_text is not None and resume is None:
        raise UsageError("rerun= reruns finished jobs of a sweep: give it with resume=DIR")
    if resume is not None:
        manifest = read_manifest(resume)  # its overrides, -m and config dir, or one line refusing
        overrides, multirun, config_dir = resumes.check_overrides(manifest, resume, overrides, multirun, config_dir)
        os.environ[SWEEP_ID_ENV] = resume.name
    else:
        os.environ[SWEEP_ID_ENV] = new_sweep_id()
    if os.getcwd() not in sys.path:  # `_target_: mymodels.Net` from the user's project
        sys.path.insert(0, os.getcwd())
    pinned = dir_overrides(resume) if resume is not None else []
    plan = plan_sweep(overrides + pinned, multirun_flag=multirun, config_dir=config_dir)
    implied = implied_sweep_name(overrides, plan.sweep_name)
    if implied:  # a user file without sweep_name
        overrides.append(f"sweep_name={implied}")
        plan = plan_sweep(overrides + pinned, multirun_flag=multirun, config_dir=config_dir)
    selected: set[int] | None = None
    rerun: set[int] = set()
    if resume is not None:
        selected, rerun = resume_selection(plan, manifest, rerun_text, yes)
    prepare_dir(plan, resume=resume is not None, manifest=new_manifest(
        plan, overrides, config_dir, analysis=analysis_record(plan.analysis)))
    from yoloprof.sweep.progress import SweepProgress

    started = time.time()
    set_manifest_state(plan.sweep_dir, "running")
    from yoloprof.sweep.machine import WAITS

    WAITS.clear()  # "waits for another timed capture": said once per sweep, then counted
    try:
        with SweepProgress(plan.total), resumes.launch_only(selected, rerun):
            _launch(overrides + dir_overrides(plan.sweep_dir), plan.multirun, config_dir)
    except UsageError:
        if resume is None:
            discard_if_unused(plan.sweep_dir)
        raise
    except KeyboardInterrupt:
        set_manifest_state(plan.sweep_dir, "interrupted")
        return interrupted(plan.sweep_dir, plan.total, started, resume_hint), None
    except NoFeasiblePoint as exc:  # the rows are whole: consolidate and show them, then say so
        finish(plan.sweep_dir, plan.total, plan.analysis)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1, plan.sweep_dir
    set_manifest_state(plan.sweep_dir, "finished")
    return finish(plan.sweep_dir, plan.total, plan.analysis), plan.sweep_dir


def interrupted(sweep_dir: Path, total: int | None, since: float = 0.0, hint: str | None = None) -> int:
    """Ctrl-C: one line, exit 130. Every row on disk is whole (atomic writes); the job that was
    running wrote none and is marked `interrupted`; results.parquet is left as it was. Counted:
    the planned jobs with a row, and those of them written by this run (since `since`)."""
    from yoloprof.profiles.rows import row_files

    rows = [p for p in row_files(sweep_dir) if p.parent.name.isdigit()
            and (total is None or int(p.parent.name) < total)]
    new = sum(1 for p in rows if p.stat().st_mtime >= since)
    by_run = f" ({new} by this run)" if new != len(rows) else ""
    print(f"{PROG}: interrupted after {len(rows)} of {total if total is not None else '?'} jobs{by_run}; "
          f"nothing half-written; continue with: {hint or f'yoloprof sweep resume={sweep_dir}'}", file=sys.stderr)
    return 130


def resume_selection(plan: Any, manifest: dict[str, Any], rerun_text: str | None,
                     yes: bool) -> tuple[set[int] | None, set[int]]:
    """(the job numbers a resume launches, None for a search sweeper; the confirmed reruns),
    after checking the grid is the planned one and printing what will run (sweep/resume.py)."""
    if plan.jobs is None:
        if rerun_text is not None:
            raise UsageError("rerun= needs a grid sweep (the basic sweeper): a search decides its own jobs")
        return None, set()
    resumes.check_planned(manifest, plan.sweep_dir, plan.jobs)
    rerun = resumes.parse_rerun(rerun_text, len(plan.jobs)) if rerun_text is not None else set()
    resumes.confirm_rerun(plan.sweep_dir, rerun, yes)
    run = resumes.to_run(plan.sweep_dir, len(plan.jobs), rerun)
    resumes.describe(plan.sweep_dir, plan.jobs, run, rerun)
    return set(run), rerun
