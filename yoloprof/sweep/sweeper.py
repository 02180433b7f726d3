"""What yoloprof's Hydra sweeper does (the plugin class is hydra_plugins/yoloprof_sweeper).

Selected by config (`hydra/sweeper: yoloprof`, the default of conf/config.yaml), loaded by Hydra's
own plugin discovery; nothing of Hydra or submitit is patched. Over the basic sweeper it adds:

- **pre-flight before the first job**: every job is checked with yoloprof's rules
  (`plan.validate_grid`: capture value rules, model `_target_` imports), with one composition
  per configuration, so a bad grid fails before the first capture and a 1,000-job grid of trials
  plans in seconds;
- **composition reuse**: the launcher gets a config loader (`ReusingLoader`) that hands it the
  configs validation composed (the first `REUSED_CONFIGS`, each once) instead of composing each
  job a second time;
- **job order**: `plan.interleave` unless launch.order=as_given (the pre-flight records the same);
- **submitit**: jobs go through the submitit launcher's own executor and callable, but their
  results are gathered here (`gather`): a job killed by the scheduler without a result is marked
  with what the scheduler says happened (sweep/scheduler_state.py: cancelled, preempted, timed_out,
  node_failure, ...) in its state file (it reruns with resume=) instead of abandoning every other job;
- **trial=auto**: rounds of jobs until each comparison is decided (sweep/adaptive.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Sequence

log = logging.getLogger("yoloprof.sweep")

# A job whose SLURM state stays PREEMPTED this long is taken as killed for good (not requeued): the
# scheduler-state module's value (one home), a module attribute here so a test can shorten it.
from yoloprof.sweep.scheduler_state import PREEMPTED_GRACE_S  # noqa: E402
# How often a finished submitit job is looked for: its result file (a stat; the scheduler's own
# state is asked for at submitit's slower pace). submitit's own wait sleeps 1 s.
POLL_S = 0.2
# At most this many configs composed by validation are kept for the launcher (a composed config
# holds a few hundred kB of objects: a large grid composes the rest again, one at a time).
REUSED_CONFIGS = 32


class ReusingLoader:
    """The launcher's config loader: Hydra's own, except that a job config validation already
    composed is handed over once instead of composed again.

    Composing is the per-job cost of a sweep's own work (0.07 s idle, far more on a loaded
    machine); the launcher's composition of a job is the same call with the same master config and
    overrides (`load_sweep_config`), so the validated config is that result. It is handed over, not
    copied: validation only reads it, and the launcher is its one user afterwards. Pickled (submitit
    ships the launcher to every job) without its cache."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._configs: dict[tuple[int, tuple[str, ...]], Any] = {}

    def keep(self, master: Any, job: Sequence[str], cfg: Any) -> Any:
        if len(self._configs) < REUSED_CONFIGS:
            self._configs[(id(master), tuple(job))] = cfg
        return cfg

    def load_sweep_config(self, master_config: Any, sweep_overrides: list[str]) -> Any:
        cfg = self._configs.pop((id(master_config), tuple(sweep_overrides)), None)
        return cfg if cfg is not None else self._loader.load_sweep_config(master_config, sweep_overrides)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_loader", "_configs"):
            raise AttributeError(name)
        return getattr(self._loader, name)

    def __getstate__(self) -> dict[str, Any]:
        return {"_loader": self._loader, "_configs": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def is_submitit(launcher: Any) -> bool:
    """A submitit launcher (local or SLURM), by its class's module (submitit may not be installed)."""
    return any(c.__module__.startswith("hydra_plugins.hydra_submitit_launcher") for c in type(launcher).__mro__)


def _result(job: Any, job_dir: Path) -> Any:
    """One submitit job's JobReturn; a job that ended without a result (killed by the scheduler)
    becomes a completed return whose value says so, and its state file says what the scheduler
    says happened (sweep/scheduler_state.py: cancelled, preempted, timed_out, node_failure, ...)."""
    from hydra.core.utils import JobReturn, JobStatus
    from submitit.core.utils import FailedJobError, UncompletedJobError

    from yoloprof.profiles.jobstate import read_state, write_state
    from yoloprof.sweep import scheduler_state

    try:
        ended = scheduler_state.wait(job, POLL_S, preempted_grace_s=PREEMPTED_GRACE_S)
        if ended is None:
            return job.results()[0]
    except (UncompletedJobError, FailedJobError):
        ended = scheduler_state.outcome(job)
    state = read_state(job_dir) or {}
    if state.get("state") in (None, "running", "pending", "preempted"):  # the job's own guess: replaced
        write_state(job_dir, int(job_dir.name), ended,
                    **{k: state.get(k) for k in ("attempt", "launcher", "cluster_job_id", "node")})
    ret = JobReturn()
    ret.status, ret.return_value = JobStatus.COMPLETED, ended
    return ret


def submit(launcher: Any, jobs: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
    """The submitit launcher's `launch`, with its own executor settings and job callable (the
    launcher object itself, as its `launch` submits it), gathering every job's result (`_result`)
    instead of raising at the first one the scheduler killed."""
    import submitit
    from hydra.core.singleton import Singleton
    from hydra.core.utils import filter_overrides
    from omegaconf import OmegaConf
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    kind, params = launcher._EXECUTOR, dict(launcher.params)
    init_keys = {"max_num_timeout"}
    executor = submitit.AutoExecutor(cluster=kind, folder=params["submitit_folder"],
                                     **{f"{kind}_{k}": v for k, v in params.items() if k in init_keys})
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(**{k if k in base else f"{kind}_{k}": v for k, v in params.items()
                                  if k not in init_keys | {"submitit_folder"}})
    sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    args = []
    for idx, overrides in enumerate(jobs, start=initial_job_idx):
        log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
        args.append((list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state()))
    made = executor.map_array(launcher, *zip(*args))
    for job in made:
        job._results_timeout_s = min(job._results_timeout_s, 5)  # a killed job never writes one
    return [_result(job, sweep_dir / str(initial_job_idx + i)) for i, job in enumerate(made)]


Launch = Callable[[Sequence[Sequence[str]], int], Sequence[Any]]


class SweepRunner:
    """The sweep itself, behind the plugin class: expand, validate, order, launch (in rounds for
    trial=auto). Returns Hydra's list of batches of JobReturns, as the basic sweeper does."""

    def __init__(self, max_batch_size: int | None, params: Any) -> None:
        self.max_batch_size, self.params = max_batch_size, dict(params or {})
        self.config: Any = None
        self.launcher: Any = None
        self.loader: ReusingLoader | None = None
        self.next_job = 0

    def setup(self, *, hydra_context: Any, task_function: Any, config: Any) -> None:
        from hydra.core.plugins import Plugins
        from hydra.types import HydraContext

        self.config = config
        self.loader = ReusingLoader(hydra_context.config_loader)
        context = HydraContext(config_loader=self.loader, callbacks=hydra_context.callbacks)  # type: ignore[arg-type]
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=context, task_function=task_function, config=config)

    def jobs(self, arguments: list[str]) -> list[list[str]]:
        from yoloprof.sweep import grid

        assert self.loader is not None
        return grid.expand(grid.parse(self.loader, grid.params_items(self.params) + list(arguments)))

    def order(self) -> str:
        from omegaconf import OmegaConf

        value = OmegaConf.select(self.config, "launch.order", default="interleave")
        return str(getattr(value, "name", value))  # the schema's Enum member, or a plain string

    def validate(self, jobs: list[list[str]], total: int | None = None) -> None:
        """yoloprof's pre-flight of these jobs, keeping what it composed for the launcher."""
        from yoloprof.sweep import progress
        from yoloprof.sweep.plan import validate_grid

        loader, master = self.loader, self.config
        assert loader is not None
        validate_grid(jobs, lambda job: loader.keep(master, job, loader._loader.load_sweep_config(master, job)))
        if total is not None:
            progress.set_total(total)

    def launch(self, jobs: list[list[str]]) -> list[Any]:
        """Run jobs (numbered on from the last), in batches of max_batch_size; their JobReturns."""
        from yoloprof.sweep.resume import launch_selected

        out: list[Any] = []
        size = self.max_batch_size or len(jobs) or 1
        for start in range(0, len(jobs), size):
            batch = jobs[start:start + size]
            results = launch_selected(self._launch_batch, batch, self.next_job)  # resume: only what runs
            for r in results:
                _ = r.return_value  # raises as the basic sweeper would for a job that raised
            self.next_job += len(batch)
            out.append(results)
        return out

    def _launch_batch(self, batch: Sequence[Sequence[str]], start: int) -> Sequence[Any]:
        if is_submitit(self.launcher):
            return submit(self.launcher, batch, start)
        return self.launcher.launch(batch, initial_job_idx=start)

    def sweep(self, arguments: list[str]) -> list[Any]:
        from omegaconf import OmegaConf

        from yoloprof.sweep import grid
        from yoloprof.sweep.plan import interleave

        jobs = self.jobs(arguments)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        if jobs and grid.is_auto(jobs[0]):
            from yoloprof.sweep.adaptive import run_adaptive

            return run_adaptive(self, jobs, sweep_dir)
        if self.order() == "interleave":
            jobs = interleave(jobs)
        self.validate(jobs, total=len(jobs))
        return self.launch(jobs)
