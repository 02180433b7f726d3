"""Stage 1, collect: the sweep's rows plus the profile.json of every ok job.

Works on a sweep that is still running or partly failed: what is there is analysed, what is not is
said (failed jobs with their error, every job folder whose row is missing, corrupt, foreign or
duplicated: analysis/inventory.py, ok rows whose profile is gone).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from yoloprof.analysis.folder import check_sweep_folder
from yoloprof.analysis.inventory import PROBLEMS, JobFolder, read_sweep
from yoloprof.defs import files
from yoloprof.errors import ProfileError, YoloprofError
from yoloprof.profiles.io import read_profile

ENV_COLUMNS = ("device_name", "torch_version")


@dataclass
class Collected:
    """Everything later stages need from disk. `ok` rows carry a `job_id` ("<sweep_id>/<job_num>")
    that keys `profiles`; jobs from several sweep ids under one folder are pooled by group_hash."""

    sweep_dir: Path
    rows: pd.DataFrame
    ok: pd.DataFrame
    failed: pd.DataFrame
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    folders: list[JobFolder] = field(default_factory=list)


def read_rows(sweep_dir: Path) -> tuple[pd.DataFrame, list[JobFolder]]:
    """(the good rows, one state per job folder: nothing dropped without being named)."""
    from yoloprof.profiles.rows import to_pandas

    table, folders = read_sweep(sweep_dir)
    return to_pandas(table), folders


def folder_notes(folders: list[JobFolder]) -> list[str]:
    """One note per job folder that is not analysed for a reason other than its own failure."""
    return [f"job {f.job}: {f.state.replace('_', ' ')}: {f.detail}" for f in folders if f.state in PROBLEMS]


def _job_ids(rows: pd.DataFrame) -> pd.Series:
    sid = rows["sweep_id"].astype("string").fillna("") if "sweep_id" in rows else ""
    return sid + "/" + rows["job_num"].astype("Int64").astype("string").fillna("?")


def _profile_candidates(sweep_dir: str, rel: object, sid: object, job: Any) -> list[str]:
    """The row's profile_path is relative to its sweep-id folder; the user may have pointed us at
    that folder or at the sweep-name folder above it. (Plain strings: 2,000 jobs x 4 candidates
    of pathlib joins cost more than the reads.)"""
    out: list[str] = []
    if isinstance(rel, str) and rel:
        out += [os.path.join(sweep_dir, rel), os.path.join(sweep_dir, str(sid), rel)]
    if pd.notna(job):
        out += [os.path.join(sweep_dir, str(int(job)), files.PROFILE),
                os.path.join(sweep_dir, str(sid), str(int(job)), files.PROFILE)]
    return out


def _load_profiles(sweep_dir: Path, ok: pd.DataFrame) -> tuple[dict[str, dict], list[str]]:
    profiles: dict[str, dict] = {}
    missing: list[str] = []
    cols = [ok[c] if c in ok else pd.Series([None] * len(ok)) for c in ("job_id", "profile_path", "sweep_id", "job_num")]
    for job_id, rel, sid, job in zip(*(c.tolist() for c in cols)):
        path = next((Path(p) for p in _profile_candidates(str(sweep_dir), rel, sid, job) if os.path.isfile(p)), None)
        if path is None:
            missing.append(f"job {job_id}: {files.PROFILE} not found (headline metrics from its row)")
            continue
        try:
            profiles[job_id] = read_profile(path)  # version-checked like every reader
        except YoloprofError as exc:
            missing.append(f"job {job_id}: {path.name} unreadable ({exc}); headline metrics from its row")
    return profiles, missing


def _env_warnings(ok: pd.DataFrame) -> list[str]:
    out = []
    for col in ENV_COLUMNS:
        if col in ok:
            vals = sorted(ok[col].dropna().astype(str).unique())
            if len(vals) > 1:
                out.append(f"jobs mix {col.replace('_', ' ')}s ({', '.join(vals)}): "
                           "comparisons cross environments")
    return out


def collect(sweep_dir: str | Path, *, load_profiles: bool = True) -> Collected:
    """Rows and profiles of a sweep folder. Missing folder = usage error; a folder with no rows or
    no ok job = profile error (exit 1), naming what was found instead."""
    sweep_dir = check_sweep_folder(sweep_dir)
    rows, folders = read_rows(sweep_dir)
    problems = folder_notes(folders)
    if rows.empty:
        listed = f": {'; '.join(problems[:5])}" if problems else ""
        raise ProfileError(f"{sweep_dir}: not a sweep: no readable {files.ROW} files in its job folders{listed}")
    c = collect_rows(rows, sweep_dir, load_profiles=load_profiles)
    c.folders = folders
    c.notes[:0] = problems
    return c


def collect_rows(rows: pd.DataFrame, sweep_dir: Path, *, load_profiles: bool = True) -> Collected:
    """The rest of collect on rows already in memory (the benchmark and tests enter here)."""
    rows = rows.copy()
    if "status" not in rows:
        raise ProfileError(f"{sweep_dir}: rows have no 'status' column; not a yoloprof sweep")
    rows["job_id"] = _job_ids(rows)
    rows = rows.sort_values([c for c in ("sweep_id", "job_num") if c in rows], kind="stable", ignore_index=True)
    ok = rows[rows["status"] == "ok"].reset_index(drop=True)
    failed = rows[rows["status"] == "failed"].reset_index(drop=True)
    notes = [f"job {r.job_id} failed: {r.error if isinstance(r.error, str) else 'no error recorded'}"
             for r in failed.reindex(columns=["job_id", "error"]).itertuples()]
    skipped = int((rows["status"] == "skipped").sum())
    if skipped:
        notes.append(f"{skipped} job(s) skipped")
    if ok.empty:
        listed = "; ".join(notes) or "no job has status ok"
        raise ProfileError(f"{sweep_dir}: no ok job to analyse ({len(rows)} row(s)): {listed}")
    profiles, missing = _load_profiles(sweep_dir, ok) if load_profiles else ({}, [])
    return Collected(sweep_dir, rows, ok, failed, profiles, notes + missing, _env_warnings(ok) + _inprocess_warnings(ok))


def _inprocess_warnings(ok: pd.DataFrame) -> list[str]:
    """Verdicts take one job as one independent replicate: jobs that ran in the launcher's own
    process (`launch.isolation=inprocess`) are not, and its drift can read as a change."""
    n = int((ok["isolation"] == "inprocess").sum()) if "isolation" in ok else 0
    if n < 2:
        return []
    return [f"{n} jobs ran in one process (launch.isolation=inprocess): they are not independent replicates, "
            "so a verdict may read that process's drift (warm-up, caches, allocator) as a change; decide with "
            "launch.isolation=process"]
