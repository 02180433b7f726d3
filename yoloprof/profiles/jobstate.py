"""Where each job of a sweep stands, for a sweep that is still running or was cut short.

A row (`row.parquet`) exists only once a job has finished. While a cluster sweep runs, the
analysis needs more: which jobs are pending, running, failed or done. Two files say it (both
written atomically; both JSON):

- the sweep manifest `yoloprof_sweep.json` lists every planned job (`planned`: job_num ->
  overrides), written before the first job starts;
- each job writes `<sweep>/<job_num>/job_state.json` when it starts and again when it ends:
  `{"schema": "yoloprof.job_state/1", "job_num": 3, "state": "running", "attempt": 1,
    "launcher": "submitit_slurm", "cluster_job_id": "1001_3", "node": "gpu-12", "pid": 4242,
    "updated_at": "2026-11-30T14:00:00+00:00"}`
  with `state` one of JOB_STATES. A job that is preempted and requeued rewrites it with the next
  `attempt`.

`job_states(sweep_dir)` combines them: a planned job without a state file is `pending`; the row,
when there is one, decides between `done` and `failed`; otherwise the state file's state stands.
The sweep layer writes these files; the analysis layer only reads them (this module sits below
both).
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from yoloprof.defs import files
from yoloprof.profiles.io import write_bytes_atomic

STATE_NAME = files.JOB_STATE
STATE_SCHEMA = "yoloprof.job_state/1"
# pending: planned, not started; running: started, no row yet; done / failed: its row says so;
# preempted: the scheduler stopped it (it reruns on requeue or resume=); interrupted: Ctrl-C;
# kept: resume kept its earlier ok row. What the scheduler says of a job that ended without a
# result (sweep/scheduler_state.py): cancelled (scancel), timed_out (time limit), node_failure
# (the node went down), out_of_memory (the cgroup's limit), lost (it ended, nobody says how).
JOB_STATES = ("pending", "running", "done", "failed", "preempted", "interrupted", "kept",
              "cancelled", "timed_out", "node_failure", "out_of_memory", "lost")
# What `analyze` says of a job without a row, per state.
_DESCRIBED = {"running": "running", "preempted": "preempted by the scheduler; rerun it with resume=",
              "interrupted": "interrupted (Ctrl-C); rerun it with resume=",
              "pending": "pending (planned, not started)",
              "cancelled": "cancelled on the scheduler (scancel); rerun it with resume=",
              "timed_out": "stopped at its time limit by the scheduler; rerun it with resume= (a longer "
                           "hydra.launcher.timeout_min?)",
              "node_failure": "its node failed; rerun it with resume=",
              "out_of_memory": "killed for memory by the scheduler; rerun it with resume= (more mem_gb?)",
              "lost": "ended on the scheduler without a result; rerun it with resume="}
_ROW_STATUS = {"ok": "done", "failed": "failed", "skipped": "done"}


def write_state(job_dir: str | Path, job_num: int, state: str, **info: Any) -> None:
    """Write one job's state file atomically (the sweep's task function calls this)."""
    assert state in JOB_STATES, state
    record = {"schema": STATE_SCHEMA, "job_num": job_num, "state": state, **info,
              "updated_at": _dt.datetime.now(_dt.timezone.utc).isoformat()}
    write_bytes_atomic(Path(job_dir) / STATE_NAME, json.dumps(record, indent=1, default=str).encode())


def read_state(job_dir: str | Path) -> dict[str, Any] | None:
    """A job's state file, or None when absent, unreadable or of another schema."""
    try:
        record = json.loads((Path(job_dir) / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("schema") != STATE_SCHEMA:
        return None
    return record


def _manifest(sweep_dir: str | Path) -> dict[str, Any]:
    try:
        manifest = json.loads((Path(sweep_dir) / files.MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def read_manifest_field(sweep_dir: str | Path, key: str) -> Any:
    """One field of the sweep manifest (None when absent or unreadable): what a job reads of the
    plan, e.g. the resources its launcher asked for."""
    return _manifest(sweep_dir).get(key)


def planned_jobs(sweep_dir: str | Path) -> dict[int, list[str]]:
    """job_num -> overrides from the manifest's `planned` list ({} when the manifest has none)."""
    planned = _manifest(sweep_dir).get("planned")
    out: dict[int, list[str]] = {}
    for item in planned if isinstance(planned, list) else []:
        if isinstance(item, dict) and isinstance(item.get("job_num"), int):
            out[item["job_num"]] = [str(o) for o in item.get("overrides") or []]
    return out


def job_states(sweep_dir: str | Path, row_status: dict[int, str] | None = None) -> dict[int, dict[str, Any]]:
    """Every job's standing: job_num -> {"state", "overrides", "cluster_job_id", "node", "attempt"}.

    `row_status` (job_num -> row status) is what the caller read from the rows; when omitted, a
    job folder with a `row.parquet` counts as done (its status is the caller's to read)."""
    sweep_dir = Path(sweep_dir)
    planned = planned_jobs(sweep_dir)
    nums = set(planned)
    nums.update(int(p.name) for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit())
    out: dict[int, dict[str, Any]] = {}
    for num in sorted(nums):
        record = read_state(sweep_dir / str(num)) or {}
        state = record.get("state") or "pending"
        if row_status is not None and num in row_status:
            state = _ROW_STATUS.get(row_status[num], "failed")
        elif row_status is None and (sweep_dir / str(num) / files.ROW).is_file():
            state = "done" if state in ("running", "pending", "kept") else state
        out[num] = {"state": state, "overrides": planned.get(num),
                    **{k: record.get(k) for k in ("cluster_job_id", "node", "attempt", "launcher")}}
    return out


def describe(record: dict[str, Any] | None) -> str:
    """One phrase for a job without a row, from its state file: what `analyze` shows for it."""
    if not record:
        return "pending (planned, not started)"
    state = record.get("state") or "pending"
    where = ", ".join(p for p in (f"node {record['node']}" if record.get("node") else "",
                                  f"cluster job {record['cluster_job_id']}" if record.get("cluster_job_id") else "",
                                  f"attempt {record['attempt']}" if record.get("attempt") else "") if p)
    text = _DESCRIBED.get(state, f"{state}, but no row")
    return f"{text} ({where})" if where else text


def count_states(states: dict[int, dict[str, Any]]) -> dict[str, int]:
    """How many jobs are in each state (every state listed, zeros included)."""
    counts = {name: 0 for name in JOB_STATES}
    for info in states.values():
        counts[info["state"]] = counts.get(info["state"], 0) + 1
    return counts
