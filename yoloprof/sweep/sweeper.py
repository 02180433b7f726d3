"""yoloprof's hooks into Hydra's basic sweeper and the submitit launchers, for one `yoloprof sweep`.

Hydra only instantiates sweepers and launchers from the `hydra_plugins` namespace, so instead of
subclasses these hooks wrap three methods for the duration of one sweep (restored afterwards):

- `BasicSweeper.validate_batch_is_legal`, Hydra's pre-launch composition of every job, runs
  yoloprof's checks instead (capture value rules, model `_target_` imports) with one composition
  per configuration (`plan.validate_grid`), so a bad grid fails before the first capture and a
  1,000-job grid of trials plans in seconds;
- `ConfigLoaderImpl.load_sweep_config` hands the launcher the configs that validation composed
  (the first `REUSED_CONFIGS` of them, each once) instead of composing each job a second time;
- `BasicSweeper.split_arguments` applies the job order (`plan.interleave`, unless
  launch.order=as_given), so the jobs run in the order the pre-flight planned and recorded;
- `BaseSubmititLauncher.launch` waits for every job even when one was killed by the scheduler
  without a result (submitit would raise and abandon the others): that job is marked `preempted`
  in its state file (what the scheduler says: cancelled, timed_out, ...) and reruns with resume=.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Sequence


# A job whose SLURM state stays PREEMPTED this long is taken as killed for good (not requeued).
PREEMPTED_GRACE_S = 60.0
# How often a finished submitit job is looked for: its result file (a stat; the scheduler's own
# state is asked for at submitit's slower pace). submitit's own wait sleeps 1 s.
POLL_S = 0.2
# At most this many configs composed by validation are kept for the launcher (a composed config
# holds a few hundred kB of objects: a large grid composes the rest again, one at a time).
REUSED_CONFIGS = 32
_INHERITED = object()  # a patched method the class inherits: restored by deleting the patch


class _Composed:
    """Job configs composed while validating, kept for the launcher, which takes each once.

    Composing is the per-job cost of a sweep's own work (0.07 s idle, far more on a loaded
    machine); the launcher's composition of a job is the same call with the same master config and
    overrides (Hydra's `load_sweep_config`), so the validated config is that result. It is handed
    over, not copied: validation only reads it, and the launcher is its one user afterwards."""

    def __init__(self) -> None:
        self._configs: dict[tuple[int, tuple[str, ...]], Any] = {}

    def keep(self, master: Any, job: Sequence[str], cfg: Any) -> Any:
        if len(self._configs) < REUSED_CONFIGS:
            self._configs[(id(master), tuple(job))] = cfg
        return cfg

    def take(self, master: Any, job: Sequence[str]) -> Any:
        return self._configs.pop((id(master), tuple(job)), None)


def _reusing(original: Any, composed: _Composed) -> Any:
    def load_sweep_config(self: Any, master_config: Any, sweep_overrides: list[str]) -> Any:
        cfg = composed.take(master_config, sweep_overrides)
        return cfg if cfg is not None else original(self, master_config, sweep_overrides)

    load_sweep_config.__wrapped__ = original  # type: ignore[attr-defined]
    return load_sweep_config


def _validating(original: Any, composed: _Composed) -> Any:
    def validate_batch_is_legal(self: Any, batch: Sequence[Sequence[str]]) -> None:
        from yoloprof.sweep import progress
        from yoloprof.sweep.plan import validate_grid

        loader = self.hydra_context.config_loader
        jobs = [list(job) for job in batch]
        validate_grid(jobs, lambda job: composed.keep(self.config, job, loader.load_sweep_config(self.config, job)))
        if self.max_batch_size is None:
            progress.set_total(len(jobs))

    validate_batch_is_legal.__wrapped__ = original  # type: ignore[attr-defined]
    return validate_batch_is_legal


def _ordering(original: Any, order: str) -> Any:
    def split_arguments(overrides: Any, max_batch_size: Any) -> list[list[list[str]]]:
        from yoloprof.sweep.plan import interleave

        batches = original(overrides, max_batch_size)
        if order != "interleave":
            return batches
        jobs = interleave([job for batch in batches for job in batch])
        size = max_batch_size or len(jobs) or 1
        return [jobs[i:i + size] for i in range(0, len(jobs), size)]

    return staticmethod(split_arguments)


def _results(job: Any, job_dir: Path) -> Any:
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


def _tolerant_launch(original: Any) -> Any:
    def launch(self: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        import submitit

        jobs_made: list[Any] = []
        real_map = submitit.AutoExecutor.map_array

        def map_array(executor: Any, *args: Any) -> Any:
            jobs_made.extend(real_map(executor, *args))
            return []  # the original then gathers no results: we do, below

        submitit.AutoExecutor.map_array = map_array  # type: ignore[method-assign]
        try:
            original(self, job_overrides, initial_job_idx)
        finally:
            submitit.AutoExecutor.map_array = real_map  # type: ignore[method-assign]
        for job in jobs_made:
            job._results_timeout_s = min(job._results_timeout_s, 5)  # a killed job never writes one
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        return [_results(job, sweep_dir / str(initial_job_idx + i)) for i, job in enumerate(jobs_made)]

    launch.__wrapped__ = original  # type: ignore[attr-defined]
    return launch


@contextlib.contextmanager
def sweep_hooks(order: str = "interleave") -> Iterator[None]:
    """While active, Hydra's basic sweeper validates, orders and (with submitit) gathers as above."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    composed = _Composed()
    patches: list[tuple[Any, str, Any]] = [
        (BasicSweeper, "validate_batch_is_legal", _validating(BasicSweeper.validate_batch_is_legal, composed)),
        (ConfigLoaderImpl, "load_sweep_config", _reusing(ConfigLoaderImpl.load_sweep_config, composed)),
        (BasicSweeper, "split_arguments", _ordering(BasicSweeper.split_arguments, order))]
    try:
        from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher
    except ImportError:
        pass
    else:
        patches.append((BaseSubmititLauncher, "launch", _tolerant_launch(BaseSubmititLauncher.launch)))
    saved = [(owner, name, owner.__dict__.get(name, _INHERITED)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            if value is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
