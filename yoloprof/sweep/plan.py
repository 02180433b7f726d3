"""The sweep's pre-flight: compose the sweep once, expand its grid as Hydra's BasicSweeper will,
check the launcher and create the sweep dir - before the first capture starts.

The per-job checks of a grid run in yoloprof's sweeper before its first job (sweep/sweeper.py, which
calls `validate_grid`), and the launcher reuses the configs they composed (sweeper.py): a job is
composed once, or twice past the first 32 or when it shares its check with other trials, never
three times. The expansion here is the sweeper's own (sweep/grid.py), so order and count match
what Hydra runs; it gives the progress display its total and the joblib check each job's device.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from yoloprof.config.compose import (AUTO_TRIAL, CONFIG_NAME, hydra_session, normalise_overrides, one_line,
                                      sweep_options)
from yoloprof.config.analysis_settings import check_analysis
from yoloprof.config.device_spec import AUTO, canonical_device, is_auto
from yoloprof.config.resources import AUTO_ON_CLUSTER
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.config.translate import (BUILTIN_TARGET, check_known_keys, check_target, ignored_settings,
                                        job_values, node_dict, node_list, settings_from_cfg)
from yoloprof.errors import UsageError
from yoloprof.defs import files
from yoloprof.profiles.io import write_bytes_atomic
from yoloprof.sweep import launchers
from yoloprof.workloads.inputcheck import HYDRA, check_inputs

MANIFEST_SCHEMA = "yoloprof.sweep/1"
# What the manifest's `config_hash` covers: what resume= would run from it.
_HASHED = ("overrides", "multirun", "config_dir")


@dataclass
class SweepPlan:
    multirun: bool
    sweep_dir: Path
    sweep_name: str
    launcher: str
    jobs: list[list[str]] | None  # per-job overrides; None when a non-basic sweeper decides
    settings: list[CaptureSettings] = field(default_factory=list)
    analysis: dict[str, Any] = field(default_factory=dict)
    launch: dict[str, Any] = field(default_factory=dict)  # the `launch` settings (isolation, order, machine)
    launcher_resources: str | None = None  # what the launcher asks for per job, resolved (JSON)
    adaptive: bool = False  # trial=auto: `jobs` is the first round; the sweeper adds rounds

    @property
    def total(self) -> int | None:
        return None if self.jobs is None or self.adaptive else len(self.jobs)


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


def _trial_of(job: list[str]) -> str | None:
    values = [item.split("=", 1)[1] for item in job if item.lstrip("+").startswith("trial=")]
    return values[-1] if values else None


def interleave(jobs: list[list[str]]) -> list[list[str]]:
    """Trials outermost, configurations alternating, every other trial in reverse (A B B A A B ...):
    a drift of the machine over the sweep (heap, clocks, temperature, other load) then falls on
    every configuration alike; a linear drift cancels between consecutive trials. Grids without
    several trials keep Hydra's order."""
    trials: dict[str | None, list[list[str]]] = {}
    for job in jobs:
        trials.setdefault(_trial_of(job), []).append(job)
    if len(trials) < 2:
        return jobs
    out: list[list[str]] = []
    for k, group in enumerate(trials.values()):
        out.extend(group if k % 2 == 0 else group[::-1])
    return out


def expand_jobs(hydra: Any, cfg: DictConfig) -> list[list[str]] | None:
    """Job override lists in Hydra's order, from the sweeper's params + the command line, as the
    yoloprof sweeper expands them (sweep/grid.py; `interleave` reorders them unless
    launch.order=as_given); for `trial=auto` the first round's jobs. None under a search sweeper."""
    from yoloprof.sweep import grid

    sweeper = OmegaConf.select(cfg, "hydra.sweeper._target_") or ""
    if not sweeper.endswith(("BasicSweeper", "YoloprofSweeper")):
        return None
    node = cfg.hydra.sweeper.params
    params = OmegaConf.to_container(node, resolve=False) if node is not None else {}
    args = grid.params_items(params) + node_list(cfg.hydra.overrides.task, resolve=False)
    jobs = grid.expand(grid.parse(hydra.config_loader, args))
    if jobs and grid.is_auto(jobs[0]):
        from yoloprof.sweep.adaptive import first_round

        return first_round(jobs, int(cfg.adaptive.min_trials), order="as_given")
    return jobs


def _adaptive(hydra: Any, cfg: DictConfig) -> bool:
    """Does the grid say `trial=auto` (a sweep file's params or the command line; the last wins)?"""
    from yoloprof.sweep import grid

    node = cfg.hydra.sweeper.params
    params = OmegaConf.to_container(node, resolve=False) if node is not None else {}
    args = grid.params_items(params) + node_list(cfg.hydra.overrides.task, resolve=False)
    trials = [a.split("=", 1)[1] for a in args if a.lstrip("+").startswith(f"{grid.TRIAL_KEY}=")]
    return bool(trials) and trials[-1] == grid.AUTO


def check_launcher(launcher: str, launcher_cfg: dict[str, Any], devices: list[str], machine: str) -> None:
    """Timed jobs never overlap unless asked for: a parallel local launcher is serialised by the
    machine lock (one line says so); with launch.machine=shared it may overlap jobs - but never two
    captures on one GPU. A SLURM GPU sweep gets one GPU per job (launchers.check_cluster)."""
    launchers.check_cluster(launcher, launcher_cfg, devices)
    note = launchers.parallel_note(launcher, launcher_cfg, machine)
    gpu = sorted({d for d in devices if d != "cpu"})
    if note and gpu and machine == "shared":
        raise UsageError(f"the {launcher} launcher runs jobs in parallel and launch.machine=shared would put "
                         f"several captures on one GPU (device {', '.join(gpu)}); drop launch.machine=shared "
                         "(the jobs then take turns) or use the basic launcher")
    if note:
        launchers.say(note)
    if launchers.kind(launcher_cfg) == "cluster":
        launchers.say(f"{launcher}: each job asks for {launchers.resources(launcher_cfg)}")


def check_local_devices(launcher_cfg: dict[str, Any], devices: list[str]) -> None:
    """A CUDA device on a machine without one would fail every job; say so once, up front. Remote
    launchers (SLURM) are skipped: a login node often has no GPU while the compute nodes do."""
    if launchers.kind(launcher_cfg) == "cluster":
        return
    from yoloprof.capturing.device.torch_device import resolve_device

    for device in sorted(set(devices) - {"cpu"}):
        resolve_device(device, flag="device")


def validate_job_configs(jobs: list[list[str]], compose: Callable[[list[str]], DictConfig],
                         first_num: int = 0, nums: list[int] | None = None,
                         composed: list[DictConfig] | None = None) -> list[CaptureSettings]:
    """Compose (via `compose`) and validate every job; the first problem raises one UsageError line
    naming the job. Model targets are imported once each. `composed` collects the configs."""
    from yoloprof.workloads.families import check_model

    settings, targets, models = [], set(), set()
    for num, job in zip(nums or range(first_num, first_num + len(jobs)), jobs):
        try:
            job_cfg = compose(list(job))
            if composed is not None:
                composed.append(job_cfg)
            settings.append(settings_from_cfg(job_cfg))
            check_inputs(settings[-1], HYDRA)  # data and model keywords, named by their Hydra keys
            model = json.dumps([str(settings[-1].model), settings[-1].size, settings[-1].mode])
            if model not in models:  # a family's model names and sizes, once each
                check_model(settings[-1], strict_size=False)  # one size=t may serve several families
                models.add(model)
            for line in ignored_settings(job_values(job_cfg)):
                warnings.warn(line, stacklevel=1)  # once per message (Python's default filter)
            targets.add(OmegaConf.select(job_cfg, "model._target_"))
            targets.add(OmegaConf.select(job_cfg, "task._target_", default=None))
        except UsageError as exc:
            raise UsageError(f"job {num} ({' '.join(job)}): {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - Hydra/OmegaConf composition errors
            raise UsageError(f"job {num} ({' '.join(job)}): {one_line(exc)}") from exc
    # the built-in factory is yoloprof's own: importing it to check it would only load torch early
    for target in sorted(t for t in targets if t and t != BUILTIN_TARGET):
        check_target(target)
    from yoloprof.workloads.families import check_installed, family_of  # a family's extra, before any job

    for family in sorted({family_of(s.model) for s in settings}):
        check_installed(family)
    check_imgsz_axis(settings)
    return settings


def check_imgsz_axis(settings: list[Any]) -> None:
    """An imgsz axis over a model that ignores imgsz (a torchvision classifier's fixed resize, say)
    would compare identical work under different labels: refused, naming the model."""
    if len({s.imgsz for s in settings}) < 2:
        return
    from yoloprof.workloads.families import input_size

    for s in settings:
        size = input_size(s)
        if size.imgsz is None:
            why = size.note or "it resizes its inputs itself"
            raise UsageError(f"imgsz is swept but model {s.model} ignores it ({why}): every imgsz would be "
                             "the same work; drop the imgsz axis")


_TRIAL_USE = re.compile(r"\$\{[^}]*\btrial\b")  # an interpolation that reads `trial`


def _is_trial(item: str) -> bool:
    return item.lstrip("+").startswith("trial=")


def validate_grid(jobs: list[list[str]], compose: Callable[[list[str]], DictConfig]) -> int:
    """Validate a grid with one composition per configuration rather than per job: jobs that differ
    only in `trial` share one composed config, each member checked with its own trial value - when
    nothing in the composed config interpolates `trial` (otherwise every member is composed).
    Returns the number of compositions.

    Why: composing is the per-job cost of planning (~0.07 s on an idle machine, 1.8 s on a loaded
    one); a 1,000-job grid of 2 configurations x 500 trials is validated with 2 compositions."""
    import dataclasses

    groups: dict[tuple[str, ...], list[int]] = {}
    for num, job in enumerate(jobs):
        groups.setdefault(tuple(i for i in job if not _is_trial(i)), []).append(num)
    composed = 0
    for members in groups.values():
        first = members[0]
        seen: list[DictConfig] = []
        checked = validate_job_configs([jobs[first]], compose, first_num=first, composed=seen)
        composed += 1
        if _TRIAL_USE.search(OmegaConf.to_yaml(seen[0], resolve=False)):
            validate_job_configs([jobs[n] for n in members[1:]], compose, nums=members[1:])
            composed += len(members) - 1
            continue
        for num in members[1:]:
            trial = _trial_of(jobs[num])
            try:
                dataclasses.replace(checked[0], trial=int(str(trial))).validate()
            except (TypeError, ValueError, UsageError) as exc:
                raise UsageError(f"job {num} ({' '.join(jobs[num])}): trial={trial}: {exc}") from exc
    return composed


def job_device_values(cfg: DictConfig, jobs: list[list[str]]) -> list[str]:
    """Each job's device as written, without composing it: `device` is a plain top-level key, so a
    job's value is its `device=` override or the composed sweep config's."""
    default = str(cfg.device)
    out = []
    for job in jobs:
        # Hydra's job overrides escape its special characters (`cuda:1` comes back as `cuda\\:1`)
        values = [re.sub(r"\\(.)", r"\1", item.split("=", 1)[1].strip("'\""))
                  for item in job if item.lstrip("+").startswith("device=")]
        out.append(values[-1] if values else default)
    return out


def job_devices(cfg: DictConfig, jobs: list[list[str]], *, cluster: bool = False) -> list[str]:
    """Each job's device in the one device parser's canonical spelling (`cpu`, `cuda:N`; `CPU` is
    the CPU, `0` and `cuda` are cuda:0, `auto` this machine's choice). A cluster job's `auto` is
    refused: it would be decided on the submitting machine, not on the node that runs the job."""
    values = job_device_values(cfg, jobs)
    if cluster and any(is_auto(v) for v in values):
        raise UsageError(AUTO_ON_CLUSTER)
    return [canonical_device(v) for v in values]


def auto_note(cfg: DictConfig, jobs: list[list[str]]) -> str | None:
    """The line that says what `device=auto` chose on this machine (None when no job asks for it)."""
    if not any(is_auto(v) for v in job_device_values(cfg, jobs)):
        return None
    chosen = canonical_device(AUTO)
    why = "the first GPU" if chosen != "cpu" else "no GPU on this machine"
    return f"device=auto runs on {chosen} ({why}; name another with device=...)"


def _sweep_dir(cfg: DictConfig, multirun: bool, overrides: list[str] = ()) -> Path:  # type: ignore[assignment]
    """The sweep folder: hydra.sweep.dir; for a single run the parent of its job folder, or
    `hydra.run.dir` itself when the user set it (the run's folder, with its one job in it as 0/)."""
    if multirun:
        return Path(str(cfg.hydra.sweep.dir))
    if any(o.lstrip("+").startswith("hydra.run.dir=") for o in overrides):
        return Path(str(cfg.hydra.run.dir))
    return Path(str(cfg.hydra.run.dir)).parent


def plan_sweep(overrides: list[str], *, multirun_flag: bool, config_dir: str | None) -> SweepPlan:
    """Compose and validate the whole sweep; raise UsageError (one line) on the first problem."""
    from hydra.types import RunMode

    overrides = normalise_overrides(overrides)
    with hydra_session(config_dir) as hydra:
        check_sweep_name(hydra, overrides)
        try:
            # trial=auto is a sweep, -m or not
            multirun = multirun_flag or AUTO_TRIAL[1] in overrides or \
                hydra.get_mode(CONFIG_NAME, overrides) == RunMode.MULTIRUN
            cfg = hydra.compose_config(CONFIG_NAME, overrides, with_log_configuration=False,
                                       run_mode=RunMode.MULTIRUN if multirun else RunMode.RUN)
            jobs = expand_jobs(hydra, cfg) if multirun else [list(cfg.hydra.overrides.task)]
            adaptive = multirun and jobs is not None and _adaptive(hydra, cfg)
        except Exception as exc:  # noqa: BLE001 - any composition problem is the user's input
            raise UsageError(one_line(exc, hydra)) from exc
        launcher = str(OmegaConf.select(cfg, "hydra.runtime.choices.hydra/launcher") or "basic")
        launcher_cfg = node_dict(cfg.hydra.launcher, resolve=False)
        try:  # resolved as the launcher will be (resources derived from the sweep's settings)
            resolved = node_dict(cfg.hydra.launcher, resolve=True)
        except Exception as exc:  # noqa: BLE001 - a bad interpolation is the user's input
            raise UsageError(f"hydra.launcher: {one_line(exc)}") from exc
        values = job_values(cfg)
        check_known_keys(values)  # a typo is named before any device or launcher question
        check_analysis(values["analysis"])  # analysis.alpha=2 fails now, not after the last job
        launch = dict(values.get("launch") or {})
        if jobs is not None and launch.get("order", "interleave") == "interleave":
            jobs = interleave(jobs)
        devices = job_devices(cfg, jobs or [], cluster=launchers.kind(launcher_cfg) == "cluster")
        note = auto_note(cfg, jobs or [])
        if note:
            launchers.say(note)
        check_launcher(launcher, resolved, devices, str(launch.get("machine", "wait")))
        check_local_devices(launcher_cfg, devices)
        settings = []
        if not multirun and jobs is not None:  # a grid: inside Hydra's own pre-launch (sweep/sweeper.py)
            settings = validate_job_configs(jobs, lambda job: cfg)
        return SweepPlan(multirun=multirun, sweep_dir=_sweep_dir(cfg, multirun, overrides),
                         sweep_name=str(values["sweep_name"]), launcher=launcher, jobs=jobs,
                         settings=settings, analysis=dict(values["analysis"]), launch=launch,
                         launcher_resources=launchers.resources(resolved), adaptive=adaptive)


def prepare_dir(plan: SweepPlan, *, resume: bool, manifest: dict[str, Any]) -> None:
    """Create the sweep dir (exclusively for a new sweep: ids never collide) and write the manifest
    that `resume=` reads back; a dir that cannot be written fails here, before any job."""
    try:
        # an empty folder given as hydra.sweep.dir is taken as it is
        empty = plan.sweep_dir.is_dir() and not any(plan.sweep_dir.iterdir())
        plan.sweep_dir.mkdir(parents=True, exist_ok=resume or empty)
        write_bytes_atomic(plan.sweep_dir / files.MANIFEST, json.dumps(manifest, indent=1).encode())
    except FileExistsError as exc:
        raise UsageError(f"sweep dir {plan.sweep_dir} already exists; resume it with "
                         f"resume={plan.sweep_dir}") from exc
    except OSError as exc:
        raise UsageError(f"cannot write the sweep dir {plan.sweep_dir}: {exc.strerror or exc}") from exc


# the manifest's `state` (not part of its config_hash): where the sweep stands, for a person or a
# script reading the folder; `resume=` accepts any of them
MANIFEST_STATES = ("running", "interrupted", "finished")


def set_manifest_state(sweep_dir: Path, state: str) -> None:
    """Record where the sweep stands in its manifest, atomically; a manifest that cannot be read
    or written is left as it is (its jobs' rows and states stay the record)."""
    assert state in MANIFEST_STATES, state
    path = sweep_dir / files.MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(manifest, dict):
            manifest["state"] = state
            write_bytes_atomic(path, json.dumps(manifest, indent=1).encode())
    except (OSError, ValueError):
        pass


def discard_if_unused(sweep_dir: Path) -> None:
    """Remove a new sweep dir that a failed validation left without any job in it."""
    import shutil

    if sweep_dir.is_dir() and not any(p.is_dir() for p in sweep_dir.iterdir()):
        shutil.rmtree(sweep_dir, ignore_errors=True)


def manifest_hash(manifest: dict[str, Any]) -> str:
    """sha256 of what resume= would run from a manifest: its overrides, multirun flag, config dir."""
    import hashlib

    text = json.dumps({k: manifest.get(k) for k in _HASHED}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def new_manifest(plan: SweepPlan, overrides: list[str], config_dir: str | None, **extra: Any) -> dict[str, Any]:
    """The manifest resume= reads: what was asked for (+ its hash), every planned job, and `extra`
    records of other stages (the analysis settings)."""
    import os

    manifest = {"schema": MANIFEST_SCHEMA, "sweep_name": plan.sweep_name, "sweep_id": plan.sweep_dir.name,
                "overrides": overrides, "multirun": plan.multirun, "launcher": plan.launcher,
                "jobs": plan.total, "config_dir": os.path.abspath(config_dir) if config_dir else None,
                "launcher_resources": plan.launcher_resources,
                "planned": [{"job_num": n, "overrides": job} for n, job in enumerate(plan.jobs or [])], **extra}
    manifest["config_hash"] = manifest_hash(manifest)
    return manifest


def read_manifest(sweep_dir: Path) -> dict[str, Any]:
    """The manifest of an earlier sweep, for `resume=`; a dir without one is not a sweep dir."""
    path = sweep_dir / files.MANIFEST
    if not sweep_dir.is_dir():
        raise UsageError(f"resume: {sweep_dir} is not a directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"resume: {sweep_dir} is not a yoloprof sweep dir (no {files.MANIFEST})") from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"resume: cannot read {path}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        found = manifest.get("schema") if isinstance(manifest, dict) else type(manifest).__name__
        raise UsageError(f"resume: {path} has schema {found!r}; expected {MANIFEST_SCHEMA}")
    if not isinstance(manifest.get("overrides"), list) or not all(isinstance(o, str) for o in manifest["overrides"]):
        raise UsageError(f"resume: {path}: 'overrides' is not a list of strings")
    if "config_hash" not in manifest:
        raise UsageError(f"resume: {path} has no config_hash (written by an older yoloprof); start a new sweep")
    if manifest.get("config_hash") != manifest_hash(manifest):
        raise UsageError(f"resume: {path} does not match its config_hash (edited after the sweep wrote it?); "
                         "a sweep folder is trusted like code: check its overrides, then start a new sweep")
    return manifest
