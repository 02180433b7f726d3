"""A small stand-in for SLURM's commands, for testing the real `submitit_slurm` launcher on one machine.

`install(bin_dir, state_dir)` writes executables `sbatch`, `srun`, `sacct`, `squeue`, `scancel` and
`scontrol` that all run this file. They implement just what submitit 1.5 uses (read from its
source, submitit/slurm/slurm.py and core/core.py):

- `sbatch FILE` parses the `#SBATCH --key=value` lines (kept in `<state>/jobs/<id>.json`, so a test
  can check the resources asked for), answers `Submitted batch job <id>` and starts a detached
  runner that executes each array task (`--array=0-N%P`: at most P at once) with `bash FILE` and
  the environment SLURM gives a task (SLURM_JOB_ID, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID,
  SLURM_JOB_NODELIST, SLURMD_NODENAME, SLURM_PROCID, ...).
- `srun [--unbuffered] --output F [--error F] CMD...` runs CMD with its output appended to F
  (`%A`, `%a`, `%j`, `%t` expanded as SLURM does).
- `sacct -o JobID,State,NodeList --parsable2 -j ID...` prints `JobID|State|NodeList` and one line
  per array task (`<id>_<task>|RUNNING|fakenode1`); `squeue` prints the unfinished tasks.
- `scancel ID [--signal SIG]` signals or cancels tasks; `scontrol requeue ID` puts a task back in
  the queue (submitit calls it from a preempted job that checkpointed itself).

Preemption is simulated from the environment of `sbatch`: `FAKE_SLURM_PREEMPT=TASK:MODE:FILE`
waits until a file matching the glob FILE (`{task}` = the task index) exists while TASK runs, then either
signals the task as SLURM does before preempting a requeueable job (MODE `requeue`: SIGTERM, then
SIGUSR2; submitit checkpoints and calls `scontrol requeue`) or kills it outright and marks it
PREEMPTED for good (MODE `kill`). Only the task's first attempt is preempted. The other ends a
task can meet on one node are modes too, each killing the task and leaving the state SLURM gives:
`cancel` (as `scancel ID` does: CANCELLED), `timeout` (a task over its time limit: TIMEOUT),
`node_fail` (its node set down: NODE_FAIL). Several tasks: `1:cancel:F;3:timeout:F`.
`FAKE_SLURM_NO_SACCT=1` makes sacct fail as it does where accounting is off; then only
`squeue -t all -j ID` and `scontrol show job ID` say what became of a task.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = ("sbatch", "srun", "sacct", "squeue", "scancel", "scontrol")
NODE = "fakenode1"
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "PREEMPTED", "TIMEOUT", "NODE_FAIL")
# MODE of FAKE_SLURM_PREEMPT -> the final state of a task killed that way
KILL_STATES = {"kill": "PREEMPTED", "cancel": "CANCELLED", "timeout": "TIMEOUT", "node_fail": "NODE_FAIL"}


def install(bin_dir: Path, state_dir: Path) -> dict[str, str]:
    """Write the command wrappers; returns the environment variables that put them on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" {name} "$@"\n')
        path.chmod(0o755)
    return {"PATH": f"{bin_dir.resolve()}{os.pathsep}{os.environ.get('PATH', '')}", "FAKE_SLURM_DIR": str(state_dir.resolve())}


# --- state (one JSON file per submitted job, updated under a lock) --------------------------------

def _state_dir() -> Path:
    return Path(os.environ["FAKE_SLURM_DIR"])


class _Locked:
    def __enter__(self) -> "_Locked":
        self.fh = open(_state_dir() / "lock", "a+")
        fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def _job_path(job_id: str) -> Path:
    return _state_dir() / "jobs" / f"{job_id}.json"


def load_job(job_id: str) -> dict:
    return json.loads(_job_path(job_id).read_text())


def _save_job(job: dict) -> None:
    path = _job_path(job["id"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(job, indent=1))
    os.replace(tmp, path)


def _update_task(job_id: str, task: str, **values: object) -> dict:
    with _Locked():
        job = load_job(job_id)
        job["tasks"][task].update(values)
        _save_job(job)
        return job


def all_jobs() -> list[dict]:
    folder = _state_dir() / "jobs"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


# --- sbatch ----------------------------------------------------------------------------------------

def _sbatch_params(text: str) -> dict[str, str]:
    params = {}
    for line in text.splitlines():
        match = re.match(r"#SBATCH\s+--([\w-]+)(?:=(.*))?$", line.strip())
        if match:
            value = match.group(2)
            params[match.group(1)] = value.strip("'\"") if value is not None else "true"
    return params


def sbatch(args: list[str]) -> int:
    script = Path(args[-1])
    params = _sbatch_params(script.read_text())
    array = params.get("array")
    if array:
        match = re.match(r"(\d+)-(\d+)(?:%(\d+))?$", array)
        assert match, f"fake sbatch: unsupported --array={array}"
        tasks = [str(i) for i in range(int(match.group(1)), int(match.group(2)) + 1)]
        parallel = int(match.group(3) or len(tasks))
    else:
        tasks, parallel = ["0"], 1
    with _Locked():
        counter = _state_dir() / "next_id"
        # ids unique across test runs in one process: submitit caches finished jobs' states by id
        job_id = str(int(counter.read_text()) if counter.exists() else int(time.time() * 1000) % 10**9)
        counter.write_text(str(int(job_id) + 1))
        (_state_dir() / "jobs").mkdir(exist_ok=True)
        _save_job({"id": job_id, "script": str(script), "params": params, "array": bool(array),
                   "parallel": parallel, "preempt": os.environ.get("FAKE_SLURM_PREEMPT"),
                   "tasks": {t: {"state": "PENDING", "attempts": 0, "pid": None, "exit": None}
                             for t in tasks}})
    log = open(_state_dir() / f"runner-{job_id}.log", "ab")
    subprocess.Popen([sys.executable, __file__, "_run", job_id], stdin=subprocess.DEVNULL, stdout=log,
                     stderr=log, start_new_session=True, env=dict(os.environ))
    print(f"Submitted batch job {job_id}")
    return 0


def _task_env(job: dict, task: str) -> dict[str, str]:
    params = job["params"]
    env = dict(os.environ)
    env.update({"SLURM_JOB_ID": str(int(job["id"]) * 1000 + int(task)) if job["array"] else job["id"],
                "SLURM_JOB_NODELIST": NODE, "SLURMD_NODENAME": NODE, "SLURM_JOB_NUM_NODES": "1",
                "SLURM_NTASKS": "1", "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
                "SLURM_JOB_PARTITION": params.get("partition", "fakepart"),
                "SLURM_CPUS_PER_TASK": params.get("cpus-per-task", "1"),
                "SLURM_RESTART_COUNT": str(job["tasks"][task]["attempts"] - 1)})
    if job["array"]:
        env.update({"SLURM_ARRAY_JOB_ID": job["id"], "SLURM_ARRAY_TASK_ID": task})
    gpus = params.get("gpus-per-task") or params.get("gpus-per-node")
    if gpus:
        env["SLURM_GPUS_ON_NODE"] = gpus
    return env


def _fate(job: dict, task: str) -> tuple[str, str] | None:
    """(mode, trigger glob) that FAKE_SLURM_PREEMPT sets for `task`, if any."""
    for item in (job.get("preempt") or "").split(";"):
        target, _, rest = item.partition(":")
        if item and target == task:
            mode, _, trigger = rest.partition(":")
            return mode, trigger
    return None


def _preempt_watch(job: dict, task: str, proc: subprocess.Popen) -> None:
    """Wait for the trigger file while the task runs, then preempt it (first attempt only)."""
    mode, trigger = _fate(job, task)
    pattern = trigger.replace("{task}", task)
    while proc.poll() is None and not glob.glob(pattern):
        time.sleep(0.05)
    if proc.poll() is not None:
        return
    if mode == "requeue":  # what submitit's own SlurmJob._interrupt does to simulate preemption
        step = _state_dir() / f"srun-{_task_env(job, task)['SLURM_JOB_ID']}.pid"
        while proc.poll() is None and not step.exists():
            time.sleep(0.05)
        for sig in (signal.SIGTERM, signal.SIGUSR2):  # to the job step (srun forwards it)
            try:
                os.kill(int(step.read_text()), sig)
            except (ProcessLookupError, ValueError, FileNotFoundError):
                return
            time.sleep(0.3)
        return
    _update_task(job["id"], task, state=KILL_STATES[mode], final=True)
    _signal_task(proc, signal.SIGKILL)


def _signal_task(proc: subprocess.Popen, sig: int) -> None:
    """Signal the task's processes (srun and the program it runs): SLURM signals every step."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _run_task(job_id: str, task: str) -> None:
    while True:
        job = load_job(job_id)
        attempts = job["tasks"][task]["attempts"] + 1
        job = _update_task(job_id, task, state="RUNNING", attempts=attempts, node=NODE)
        proc = subprocess.Popen(["bash", job["script"]], env=_task_env(job, task), start_new_session=True,
                                stdin=subprocess.DEVNULL)
        _update_task(job_id, task, pid=proc.pid)
        if _fate(job, task) and attempts == 1:
            _preempt_watch(job, task, proc)
        code = proc.wait()
        state = load_job(job_id)["tasks"][task]
        if state["state"] == "REQUEUED":
            _update_task(job_id, task, state="PENDING")
            continue  # `scontrol requeue`: run it again
        if state.get("final"):
            _update_task(job_id, task, exit=code)
            return
        _update_task(job_id, task, state="COMPLETED" if code == 0 else "FAILED", exit=code)
        return


def run(job_id: str) -> int:
    """The detached runner behind one sbatch: array tasks, at most `parallel` at once."""
    import threading

    job = load_job(job_id)
    pending = list(job["tasks"])
    threads: list[threading.Thread] = []
    while pending or threads:
        threads = [t for t in threads if t.is_alive()]
        while pending and len(threads) < job["parallel"]:
            task = pending.pop(0)
            if load_job(job_id)["tasks"][task]["state"] != "PENDING":
                continue  # cancelled before it started
            thread = threading.Thread(target=_run_task, args=(job_id, task))
            thread.start()
            threads.append(thread)
        time.sleep(0.05)
    return 0


# --- srun ------------------------------------------------------------------------------------------

def _expand(pattern: str) -> str:
    env = os.environ
    job = env.get("SLURM_ARRAY_JOB_ID") or env.get("SLURM_JOB_ID", "0")
    return (pattern.replace("%A", job).replace("%a", env.get("SLURM_ARRAY_TASK_ID", "0"))
            .replace("%j", env.get("SLURM_JOB_ID", "0")).replace("%t", env.get("SLURM_PROCID", "0")))


def srun(args: list[str]) -> int:
    out = err = None
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag in ("--output", "--error"):
            value = _expand(args.pop(0))
            out, err = (value, err) if flag == "--output" else (out, value)
    stdout = open(out, "ab") if out else None
    stderr = open(err, "ab") if err else stdout
    holder: list[subprocess.Popen] = []
    for sig in (signal.SIGTERM, signal.SIGUSR2, signal.SIGCONT):  # srun forwards signals to the step
        signal.signal(sig, lambda s, _f: holder and holder[0].send_signal(s))
    proc = subprocess.Popen(args, stdout=stdout, stderr=stderr)
    holder.append(proc)
    (_state_dir() / f"srun-{os.environ.get('SLURM_JOB_ID', '0')}.pid").write_text(str(os.getpid()))
    while True:
        try:
            return proc.wait()
        except InterruptedError:
            continue


# --- sacct / squeue / scancel / scontrol -----------------------------------------------------------

def _task_lines(ids: list[str]) -> list[tuple[str, dict]]:
    out = []
    for job in all_jobs():
        for task, info in job["tasks"].items():
            name = f"{job['id']}_{task}" if job["array"] else job["id"]
            if not ids or job["id"] in ids or name in ids:
                out.append((name, info))
    return out


def sacct(args: list[str]) -> int:
    if os.environ.get("FAKE_SLURM_NO_SACCT"):
        print("sacct: error: Slurm accounting storage is disabled", file=sys.stderr)
        return 1
    ids = [args[i + 1] for i, a in enumerate(args) if a == "-j"]
    fields = args[args.index("-o") + 1].split(",") if "-o" in args else ["JobID", "State", "NodeList"]
    if "-n" not in args:
        print("|".join(fields))
    for name, info in _task_lines(ids):
        values = {"JobID": name, "State": info["state"], "NodeList": info.get("node") or "None assigned"}
        print("|".join(values.get(f, "") for f in fields))
    return 0


def squeue(args: list[str]) -> int:
    """`squeue [-h] [-t all] [-j ID] [-o %i|%T]`: unfinished tasks; with `-t all` the finished ones
    too (SLURM keeps them for MinJobAge)."""
    ids = [args[i + 1] for i, a in enumerate(args) if a == "-j"]
    every = "-t" in args and args[args.index("-t") + 1].lower() == "all"
    if "-h" not in args:
        print("JOBID|STATE|NODELIST")
    for name, info in _task_lines(ids):
        if every or info["state"] not in FINAL:
            print(f"{name}|{info['state']}" + ("" if "-o" in args else f"|{info.get('node') or ''}"))
    return 0


def _tasks_of(job_id: str) -> list[tuple[str, str]]:
    main, _, task = job_id.partition("_")
    job = load_job(main)
    return [(main, t) for t in job["tasks"] if not task or t == task]


def scancel(args: list[str]) -> int:
    sig = args[args.index("--signal") + 1] if "--signal" in args else None
    for job_id in [a for a in args if re.match(r"^\d+(_\d+)?$", a)]:
        for main, task in _tasks_of(job_id):
            info = load_job(main)["tasks"][task]
            if sig:
                if info["pid"]:
                    os.killpg(info["pid"], getattr(signal, sig if sig.startswith("SIG") else f"SIG{sig}"))
                continue
            _update_task(main, task, state="CANCELLED", final=True)
            if info["pid"] and info["state"] == "RUNNING":
                try:
                    os.killpg(info["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return 0


def scontrol(args: list[str]) -> int:
    if args[:1] == ["requeue"]:
        for main, task in _tasks_of(args[1]):
            _update_task(main, task, state="REQUEUED")
        return 0
    if args[:2] == ["show", "job"]:
        for name, info in _task_lines([args[2]]):
            print(f"JobId={name} JobName=fake JobState={info['state']} Reason=None NodeList={info.get('node')}")
        return 0
    print(f"fake scontrol: unsupported {' '.join(args)}", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    name, args = argv[0], argv[1:]
    if name == "_run":
        return run(args[0])
    return {"sbatch": sbatch, "srun": srun, "sacct": sacct, "squeue": squeue, "scancel": scancel,
            "scontrol": scontrol}[name](args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
