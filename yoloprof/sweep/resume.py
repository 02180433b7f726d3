"""`resume=DIR`: continue a sweep exactly as its manifest planned it, or refuse.

Why so strict: a resume that merged other overrides into a stored sweep ran other configurations
under the old job numbers and replaced finished rows, profiles and states without a word. Here:

- `resume=DIR` alone takes the manifest's overrides, `-m` and `--config-dir` whole; overrides given
  with it must be the stored ones (any order), else one line names each difference
  (`check_overrides`); the grid they expand to must be the planned one, job for job
  (`check_planned`), so new work never reuses a job number: it is a new sweep;
- a job with an `ok` row is finished: it is not launched at all (`launch_only`: the launcher is
  handed the jobs that need to run, in contiguous runs with their own numbers, so a SLURM resume
  submits those tasks alone) and nothing in its folder is written. Only `rerun=3,5` (or `rerun=all`)
  confirmed with `--yes` (or at the prompt) reruns finished jobs, replacing their files;
- what `describe` prints is computed by the same `to_run` that selects what is launched.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Sequence

from yoloprof.errors import UsageError
from yoloprof.profiles.rows import ROW_NAME, read_row

PROG = "yoloprof sweep"
# The launching process tells each job which finished jobs the user confirmed to rerun (the jobs
# inherit the environment, under submitit too): job.py then does not keep their rows.
RERUN_ENV = "YOLOPROF_RERUN"
# The job numbers a resume launches while a sweep runs (None: every job): the sweeper asks
# (`launch_selected`); nothing of Hydra's launchers is patched.
_SELECTED: list[set[int] | None] = [None]


def split_rerun(overrides: list[str]) -> tuple[list[str], str | None]:
    """Split off `rerun=JOBS` (ours, like resume=): the finished jobs to run again."""
    out, rerun = [], None
    for item in overrides:
        if item.startswith("rerun="):
            rerun = item.split("=", 1)[1]
        else:
            out.append(item)
    return out, rerun


def parse_rerun(text: str, total: int) -> set[int]:
    """`3`, `3,5`, `2-4`, `all` -> job numbers; each must be a planned job."""
    if text.strip() == "all":
        return set(range(total))
    nums: set[int] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        lo, sep, hi = part.partition("-")
        try:
            nums.update(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError as exc:
            raise UsageError(f"rerun={text}: give job numbers (3,5 or 2-4) or 'all'") from exc
    bad = sorted(n for n in nums if not 0 <= n < total)
    if bad or not nums:
        raise UsageError(f"rerun={text}: the sweep plans jobs 0-{total - 1}; no job {bad[0] if bad else text}")
    return nums


def _implied_name(items: Sequence[str]) -> str | None:
    choice = next((o.split("=", 1)[1] for o in items if o.startswith("sweep=")), None)
    return choice.replace("/", "_") if choice and choice != "null" else None


def _key(item: str) -> str:
    return item.partition("=")[0]


def check_overrides(manifest: dict[str, Any], sweep_dir: Path, given: list[str], multirun: bool,
                    config_dir: str | None) -> tuple[list[str], bool, str | None]:
    """The overrides, -m flag and config dir to resume with: the manifest's. Anything given that
    differs is refused with one line naming every difference (never merged)."""
    stored = [str(o) for o in manifest["overrides"]]
    stored_dir = manifest.get("config_dir")
    diffs: list[str] = []
    if given:
        implied = _implied_name(given)
        # a user file without sweep_name was named after it (app.implied_sweep_name): not given
        compared = [o for o in stored if not (o == f"sweep_name={implied}" and o not in given)]
        extra, missing = Counter(given) - Counter(compared), Counter(compared) - Counter(given)
        stored_by_key = {_key(o): o for o in missing}
        for item in sorted(extra.elements()):
            old = stored_by_key.pop(_key(item), None)
            diffs.append(f"{item} (the sweep has {old})" if old else f"{item} (not in the sweep)")
        diffs += [f"{item} missing" for item in sorted(stored_by_key.values())]
        if multirun and not manifest.get("multirun"):
            diffs.append("-m (the sweep was a single run)")
    if config_dir and os.path.abspath(config_dir) != stored_dir:
        diffs.append(f"--config-dir {config_dir} (the sweep used {stored_dir or 'none'})")
    if diffs:
        raise UsageError(f"resume={sweep_dir}: differs from the sweep's manifest: {'; '.join(diffs)}. "
                         f"resume={sweep_dir} alone continues it as started; other settings are a new sweep")
    return stored, bool(manifest.get("multirun")), stored_dir


def check_planned(manifest: dict[str, Any], sweep_dir: Path, jobs: list[list[str]] | None) -> None:
    """The grid must expand as it did (a config file edited since can change it): else a job
    number would mean another configuration than its row."""
    planned = [list(p.get("overrides") or []) for p in manifest.get("planned") or []]
    if jobs is None or not planned:
        return
    if len(jobs) != len(planned):
        raise UsageError(f"resume={sweep_dir}: the grid now has {len(jobs)} jobs, the sweep planned "
                         f"{len(planned)} (config files changed since?); start a new sweep")
    for num, (now, then) in enumerate(zip(jobs, planned)):
        if list(now) != then:
            raise UsageError(f"resume={sweep_dir}: job {num} is now {' '.join(now)}, the sweep planned "
                             f"{' '.join(then)} (config files changed since?); start a new sweep")


def finished(sweep_dir: Path, num: int) -> bool:
    """A job is finished when its row says ok (a failed or unreadable row runs again)."""
    return (read_row(sweep_dir / str(num) / ROW_NAME) or {}).get("status") == "ok"


def to_run(sweep_dir: Path, total: int, rerun: set[int]) -> list[int]:
    """The job numbers a resume launches: every unfinished job and the confirmed reruns."""
    return [n for n in range(total) if n in rerun or not finished(sweep_dir, n)]


def confirm_rerun(sweep_dir: Path, rerun: set[int], yes: bool) -> None:
    """Rerunning finished jobs replaces their rows, profiles and states: asked once, or --yes."""
    done = sorted(n for n in rerun if finished(sweep_dir, n))
    if not done or yes:
        return
    what = f"rerun replaces the row, profile and state of finished job(s) {', '.join(map(str, done))}"
    if not sys.stdin.isatty():
        raise UsageError(f"{what}; add --yes to confirm")
    answer = input(f"{PROG}: {what}. Continue? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise UsageError("rerun not confirmed; nothing was run")


def describe(sweep_dir: Path, jobs: list[list[str]], run: list[int], rerun: set[int], limit: int = 20) -> None:
    """Before a resume runs anything: how many jobs are finished and the overrides of those it runs."""
    print(f"{PROG}: resume {sweep_dir}: {len(jobs) - len(run) + len(rerun & set(run))} of {len(jobs)} jobs "
          f"have an ok row; running {len(run)}{f' ({len(rerun)} rerun)' if rerun else ''}:", file=sys.stderr)
    for n in run[:limit]:
        print(f"{PROG}:   job {n}: {' '.join(jobs[n]) or '(defaults)'}", file=sys.stderr)
    if len(run) > limit:
        print(f"{PROG}:   ... and {len(run) - limit} more", file=sys.stderr)


def _skipped(job: Sequence[str]) -> Any:
    from hydra.core.utils import JobReturn, JobStatus

    ret = JobReturn(overrides=list(job))
    ret.status, ret.return_value = JobStatus.COMPLETED, "kept"
    return ret


def runs_of(nums: Sequence[int]) -> list[tuple[int, int]]:
    """Contiguous runs [(start, stop)) of sorted job numbers: one launch (one SLURM array) each."""
    out: list[tuple[int, int]] = []
    for n in sorted(nums):
        if out and out[-1][1] == n:
            out[-1] = (out[-1][0], n + 1)
        else:
            out.append((n, n + 1))
    return out


def launch_selected(launch: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
    """`launch(batch, start)` (the sweeper's launch of a batch) for only the jobs a resume selected,
    in contiguous runs that keep their numbers (one SLURM array each); a job not selected is
    finished: it is not launched, its folder stays untouched, and it returns `kept`."""
    selected = _SELECTED[0]
    if selected is None:
        return list(launch(job_overrides, initial_job_idx))
    results: dict[int, Any] = {}
    wanted = [initial_job_idx + i for i in range(len(job_overrides)) if initial_job_idx + i in selected]
    for start, stop in runs_of(wanted):
        batch = job_overrides[start - initial_job_idx:stop - initial_job_idx]
        results.update(zip(range(start, stop), launch(batch, start)))
    from yoloprof.sweep import progress

    for num in sorted(set(range(initial_job_idx, initial_job_idx + len(job_overrides))) - set(results)):
        progress.notify_done(num, "kept")  # finished: not launched, its folder untouched
    return [results.get(initial_job_idx + i) or _skipped(job) for i, job in enumerate(job_overrides)]


@contextlib.contextmanager
def launch_only(selected: set[int] | None, rerun: set[int]) -> Iterator[None]:
    """While active, the sweeper launches only the `selected` job numbers (None: all;
    `launch_selected`), and the jobs learn which reruns were confirmed (RERUN_ENV)."""
    saved_env, saved = os.environ.get(RERUN_ENV), _SELECTED[0]
    os.environ[RERUN_ENV] = ",".join(map(str, sorted(rerun)))
    _SELECTED[0] = selected
    try:
        yield
    finally:
        _SELECTED[0] = saved
        if saved_env is None:
            os.environ.pop(RERUN_ENV, None)
        else:
            os.environ[RERUN_ENV] = saved_env


def rerun_requested(num: int) -> bool:
    """In a job: did the user confirm rerunning this finished job?"""
    return str(num) in (os.environ.get(RERUN_ENV) or "").split(",")
