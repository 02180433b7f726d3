"""The sweep's pre-flight: compose the sweep once, expand its grid as Hydra's BasicSweeper will,
check the launcher and create the sweep dir - before the first capture starts.

The per-job checks of a grid run inside Hydra's own pre-launch composition (sweep/sweeper.py, which
calls `validate_job_configs`), so each job is composed twice (check, run), not three times. The
expansion here uses the sweeper's own `split_arguments`, so order and count match what Hydra runs;
it gives the progress display its total and the joblib check each job's device.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from yoloprof.capture.settings import CaptureSettings
from yoloprof.config.compose import (CONFIG_NAME, hydra_session, normalise_overrides, one_line,
                                      sweep_options)
from yoloprof.config.translate import check_target, job_values, settings_from_cfg
from yoloprof.errors import UsageError
from yoloprof.profiles.io import write_bytes_atomic

MANIFEST_NAME = "yoloprof_sweep.json"
MANIFEST_SCHEMA = "yoloprof.sweep/1"
# Launchers that run several jobs at once on one machine: never two captures on one GPU.
PARALLEL_LOCAL_LAUNCHERS = ("joblib",)
# Launchers whose jobs run on this machine: their devices can be checked here, before job 0.
LOCAL_LAUNCHERS = ("basic", "joblib", "submitit_local")


@dataclass
class SweepPlan:
    multirun: bool
    sweep_dir: Path
    sweep_name: str
    launcher: str
    jobs: list[list[str]] | None  # per-job overrides; None when a non-basic sweeper decides
    settings: list[CaptureSettings] = field(default_factory=list)
    analysis: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int | None:
        return None if self.jobs is None else len(self.jobs)


def quote_value(value: str) -> str:
    """A path as a Hydra override value: quoted, so `=`, `,` or spaces in it stay literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def dir_overrides(sweep_dir: Path) -> list[str]:
    """Pin Hydra's run/sweep dirs to the planned dir, so the launching process and every job agree."""
    return [f"hydra.sweep.dir={quote_value(str(sweep_dir))}",
            f"hydra.run.dir={quote_value(str(sweep_dir / '0'))}"]


def check_sweep_name(hydra: Any, overrides: list[str]) -> None:
    """`+sweep=nope` would silently run nothing special (the group is optional): name the files."""
    for item in overrides:
        key, _, value = item.lstrip("+~").partition("=")
        if key == "sweep" and value and value != "null":
            options = sweep_options(hydra)
            if value not in options:
                raise UsageError(f"unknown sweep {value!r}; available: {', '.join(options) or 'none'}")


def expand_jobs(hydra: Any, cfg: DictConfig) -> list[list[str]] | None:
    """Job override lists in launch order, from the sweeper's params + the command line."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    sweeper = OmegaConf.select(cfg, "hydra.sweeper._target_") or ""
    if not sweeper.endswith("BasicSweeper"):
        return None
    node = cfg.hydra.sweeper.params
    params = OmegaConf.to_container(node, resolve=False) if node is not None else {}
    args = [f"{k}={v}" for k, v in params.items()]
    args += list(OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False))
    parsed = OverridesParser.create(config_loader=hydra.config_loader).parse_overrides(args)
    return BasicSweeper.split_arguments(parsed, None)[0]


def check_launcher(launcher: str, launcher_cfg: dict[str, Any], devices: list[str]) -> None:
    """joblib runs jobs in parallel processes on this machine: fine for CPU-bound sweeps, but two
    captures sharing a GPU would time each other, so refuse that combination."""
    if not any(name in launcher for name in PARALLEL_LOCAL_LAUNCHERS):
        return
    n_jobs = launcher_cfg.get("n_jobs", -1)
    gpu = sorted({d for d in devices if d not in ("cpu",)})
    if gpu and (n_jobs is None or n_jobs != 1):
        raise UsageError(f"the {launcher} launcher runs jobs in parallel (n_jobs={n_jobs}), which would "
                         f"put several captures on one GPU (device {', '.join(gpu)}); use the basic or a "
                         "submitit launcher for GPU sweeps, or hydra.launcher.n_jobs=1")


def check_local_devices(launcher: str, devices: list[str]) -> None:
    """A CUDA device on a machine without one would fail every job; say so once, up front. Remote
    launchers (SLURM) are skipped: a login node often has no GPU while the compute nodes do."""
    if launcher not in LOCAL_LAUNCHERS:
        return
    from yoloprof.capture.device import resolve_device

    for device in sorted(set(devices) - {"cpu"}):
        resolve_device(device)


def validate_job_configs(jobs: list[list[str]], compose: Callable[[list[str]], DictConfig]
                         ) -> list[CaptureSettings]:
    """Compose (via `compose`) and validate every job; the first problem raises one UsageError line
    naming the job. Model targets are imported once each."""
    settings, targets = [], set()
    for num, job in enumerate(jobs):
        try:
            job_cfg = compose(list(job))
            settings.append(settings_from_cfg(job_cfg))
            targets.add(OmegaConf.select(job_cfg, "model._target_"))
        except UsageError as exc:
            raise UsageError(f"job {num} ({' '.join(job)}): {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - Hydra/OmegaConf composition errors
            raise UsageError(f"job {num} ({' '.join(job)}): {one_line(exc)}") from exc
    for target in sorted(t for t in targets if t):
        check_target(target)
    return settings


def job_devices(cfg: DictConfig, jobs: list[list[str]]) -> list[str]:
    """Each job's device without composing it: `device` is a plain top-level key, so a job's value
    is its `device=` override or the composed sweep config's."""
    default = str(cfg.device)
    out = []
    for job in jobs:
        values = [item.split("=", 1)[1] for item in job if item.lstrip("+").startswith("device=")]
        out.append(values[-1] if values else default)
    return out


def _sweep_dir(cfg: DictConfig, multirun: bool) -> Path:
    if multirun:
        return Path(str(cfg.hydra.sweep.dir))
    return Path(str(cfg.hydra.run.dir)).parent


def plan_sweep(overrides: list[str], *, multirun_flag: bool, config_dir: str | None) -> SweepPlan:
    """Compose and validate the whole sweep; raise UsageError (one line) on the first problem."""
    from hydra.types import RunMode

    overrides = normalise_overrides(overrides)
    with hydra_session(config_dir) as hydra:
        check_sweep_name(hydra, overrides)
        try:
            multirun = multirun_flag or hydra.get_mode(CONFIG_NAME, overrides) == RunMode.MULTIRUN
            cfg = hydra.compose_config(CONFIG_NAME, overrides, with_log_configuration=False,
                                       run_mode=RunMode.MULTIRUN if multirun else RunMode.RUN)
            jobs = expand_jobs(hydra, cfg) if multirun else [list(cfg.hydra.overrides.task)]
        except Exception as exc:  # noqa: BLE001 - any composition problem is the user's input
            raise UsageError(one_line(exc)) from exc
        launcher = str(OmegaConf.select(cfg, "hydra.runtime.choices.hydra/launcher") or "basic")
        launcher_cfg = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
        devices = job_devices(cfg, jobs or [])
        check_launcher(launcher, launcher_cfg, devices)
        check_local_devices(launcher, devices)
        settings = []
        if not multirun:  # a grid is validated inside Hydra's own pre-launch pass (sweep/sweeper.py)
            settings = validate_job_configs(jobs, lambda job: cfg)
        values = job_values(cfg)
        return SweepPlan(multirun=multirun, sweep_dir=_sweep_dir(cfg, multirun),
                         sweep_name=str(values["sweep_name"]), launcher=launcher, jobs=jobs,
                         settings=settings, analysis=dict(values["analysis"]))


def prepare_dir(plan: SweepPlan, *, resume: bool, manifest: dict[str, Any]) -> None:
    """Create the sweep dir (exclusively for a new sweep: ids never collide) and write the manifest
    that `resume=` reads back; a dir that cannot be written fails here, before any job."""
    try:
        plan.sweep_dir.mkdir(parents=True, exist_ok=resume)
        write_bytes_atomic(plan.sweep_dir / MANIFEST_NAME, json.dumps(manifest, indent=1).encode())
    except FileExistsError as exc:
        raise UsageError(f"sweep dir {plan.sweep_dir} already exists; resume it with "
                         f"resume={plan.sweep_dir}") from exc
    except OSError as exc:
        raise UsageError(f"cannot write the sweep dir {plan.sweep_dir}: {exc.strerror or exc}") from exc


def discard_if_unused(sweep_dir: Path) -> None:
    """Remove a new sweep dir that a failed validation left without any job in it."""
    import shutil

    if sweep_dir.is_dir() and not any(p.is_dir() for p in sweep_dir.iterdir()):
        shutil.rmtree(sweep_dir, ignore_errors=True)


def read_manifest(sweep_dir: Path) -> dict[str, Any]:
    """The manifest of an earlier sweep, for `resume=`; a dir without one is not a sweep dir."""
    path = sweep_dir / MANIFEST_NAME
    if not sweep_dir.is_dir():
        raise UsageError(f"resume: {sweep_dir} is not a directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"resume: {sweep_dir} is not a yoloprof sweep dir (no {MANIFEST_NAME})") from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"resume: cannot read {path}: {exc}") from exc
    if manifest.get("schema") != MANIFEST_SCHEMA:
        raise UsageError(f"resume: {path} has schema {manifest.get('schema')!r}; expected {MANIFEST_SCHEMA}")
    return manifest
