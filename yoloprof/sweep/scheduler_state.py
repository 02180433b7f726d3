"""What the scheduler says became of a cluster job that ended without a result: cancelled,
preempted, timed out, node failure, out of memory - written into the job's state file, so `analyze`
and resume= say what happened instead of calling every loss a preemption.

Why not submitit's own state alone: submitit asks only `sacct`, which fails where accounting is
off (`Slurm accounting storage is disabled`); its state then stays UNKNOWN, which it counts as
unfinished, and a cancelled task left the sweep waiting until it was killed. `query` asks sacct,
then `squeue -t all` (which still lists a job for MinJobAge after it ends), then `scontrol show
job`; a job none of them knows any more, without a result, is `lost`. `wait` polls the result file
(a stat) and the scheduler at submitit's pace, and returns once the job has a result or a final
state.
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any, Callable

# SLURM's job states (sacct, squeue and scontrol spell them alike) that end a job -> the name the
# job's state file gets when the job wrote no result (profiles/jobstate.py JOB_STATES).
FINAL = {"CANCELLED": "cancelled", "PREEMPTED": "preempted", "TIMEOUT": "timed_out", "DEADLINE": "timed_out",
         "NODE_FAIL": "node_failure", "BOOT_FAIL": "node_failure", "OUT_OF_MEMORY": "out_of_memory",
         "FAILED": "lost", "COMPLETED": "lost", "REVOKED": "cancelled", "SPECIAL_EXIT": "lost"}
# A PREEMPTED job may be requeued by SLURM within seconds: it counts as final only after this long.
PREEMPTED_GRACE_S = 60.0
# How often the scheduler is asked when submitit's own answer is UNKNOWN (a subprocess each time).
ASK_S = 5.0
# How long a final state waits for the result file to appear (a job that completed writes it last).
RESULT_GRACE_S = 3.0
Runner = Callable[[list[str]], str]


def normalise(state: str) -> str:
    """`CANCELLED by 1000` -> `CANCELLED`; `node_fail` -> `NODE_FAIL`."""
    return (state or "").strip().split(" ")[0].rstrip("+").upper()


def _run(command: list[str]) -> str:
    """stdout of a scheduler command; raises OSError/CalledProcessError when it fails."""
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=30).stdout


def _from_sacct(job_id: str, run: Runner) -> str | None:
    for line in run(["sacct", "-n", "-P", "-o", "JobID,State", "-j", job_id]).splitlines():
        jid, _, state = line.partition("|")
        if jid.strip() == job_id:
            return normalise(state)
    return None


def _from_squeue(job_id: str, run: Runner) -> str | None:
    lines = [ln for ln in run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%i|%T"]).splitlines() if ln]
    for line in lines:
        jid, _, state = line.partition("|")
        if jid.strip() == job_id:
            return normalise(state)
    return None


def _from_scontrol(job_id: str, run: Runner) -> str | None:
    match = re.search(r"\bJobState=(\S+)", run(["scontrol", "show", "job", job_id]))
    return normalise(match.group(1)) if match else None


def query(job_id: str, run: Runner = _run) -> str | None:
    """The scheduler's state of one job (an array task `123_4` included), from the first of sacct,
    squeue, scontrol that answers; None when none knows it."""
    for ask in (_from_sacct, _from_squeue, _from_scontrol):
        try:
            state = ask(job_id, run)
        except (OSError, subprocess.SubprocessError, ValueError):
            continue
        if state:
            return state
    return None


def _final(state: str | None, since: dict[str, float], grace_s: float) -> bool:
    """A state that ends the job; PREEMPTED only once it has stayed so `grace_s`; GONE (no
    scheduler command knows the job) only when asked twice."""
    if state in ("PREEMPTED", "GONE"):
        first = since.setdefault(state, time.monotonic())
        since["GONE_ASKS"] = since.get("GONE_ASKS", 0) + (state == "GONE")
        return time.monotonic() - first > grace_s if state == "PREEMPTED" else since["GONE_ASKS"] >= 2
    since.clear()
    return state in FINAL


def _is_slurm(job: Any) -> bool:
    """A SLURM job (submitit.slurm): only those are asked of sacct/squeue/scontrol. A local job's
    state is submitit's own (its process); asking a SLURM that is installed but not this job's
    scheduler cost up to a 30 s time-out per job."""
    return type(job).__module__.startswith("submitit.slurm")


def outcome(job: Any, run: Runner = _run) -> str:
    """The yoloprof state of a job that ended without a result: submitit's last state when it is
    a final one, else the scheduler's (query), else `lost`."""
    state = normalise(str(job.state))
    if state not in FINAL and _is_slurm(job):
        state = query(str(job.job_id), run) or ""
    return FINAL.get(state, "lost")


def wait(job: Any, poll_s: float = 0.2, run: Runner = _run,
         preempted_grace_s: float | None = None) -> str | None:
    """Wait for a submitit job: None once it is done (its result, if any, is submitit's to read),
    else the yoloprof state of its end (`cancelled`, `timed_out`, `node_failure`, `preempted`,
    `out_of_memory`, `lost`), when submitit would wait on (sacct unavailable, PREEMPTED)."""
    grace = PREEMPTED_GRACE_S if preempted_grace_s is None else preempted_grace_s
    since: dict[str, float] = {}
    asked = 0.0
    while not job.done():
        state = normalise(str(job.state))
        if state not in FINAL and _is_slurm(job):
            if time.monotonic() - asked < ASK_S:
                time.sleep(poll_s)
                continue
            asked = time.monotonic()
            state = query(str(job.job_id), run) or ("GONE" if state == "UNKNOWN" else state)
        if _final(state, since, grace):
            deadline = time.monotonic() + RESULT_GRACE_S
            while time.monotonic() < deadline:  # a completed job's result may land a moment later
                if job.done():
                    return None
                time.sleep(poll_s)
            return "lost" if state == "GONE" else FINAL[state]
        time.sleep(poll_s)
    return None
