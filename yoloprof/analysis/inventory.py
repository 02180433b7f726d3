"""Every job folder of a sweep accounted for, and every row read as one dataset.

A job folder is a numbered folder of the sweep folder (or any folder holding a row file). Each
gets exactly one state:

- `ok`, `failed`, `skipped`: its row.parquet holds one row with that status;
- `missing_row`: no row.parquet (the job is still running, or was killed before writing it);
- `corrupt_row`: row.parquet is not a regular file, is empty, cannot be read as Parquet, holds
  no row, or has a status outside the schema's;
- `foreign_schema`: a Parquet file without the row schema's identity columns (job_num, status,
  group_hash) or with a column of another type;
- `duplicate_rows`: the file holds more than one row, or its row repeats the (sweep id, job
  number) of an earlier folder. Such a job is not analysed: which row is right cannot be told.

Only ok rows are analysed; anything but ok, failed or skipped is named in the table, the JSON and
the report, and makes `yoloprof analyze` exit 1 unless --allow-partial.

Reading 2,000 small Parquet files costs about a millisecond each in footer parsing alone, so the
rows are read as one dataset: the sweep's consolidated `results.parquet` (one file, written at the
end of every sweep) supplies the row of every job folder whose row file is not newer than it and
whose job number it holds exactly once; only the other folders (rewritten since, not in it, or
ambiguous) are read one by one, by a small thread pool. Without a consolidation every file is read.
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from yoloprof.defs import files
from yoloprof.profiles.jobstate import describe, planned_jobs, read_state
from yoloprof.profiles.rows import RESULTS_NAME, ROW_SCHEMA, STATUSES

ACCEPTED = ("ok", "failed", "skipped")
PROBLEMS = ("missing_row", "corrupt_row", "foreign_schema", "duplicate_rows")
STATES = ACCEPTED + PROBLEMS
IDENTITY = ("job_num", "status", "group_hash")
READ_THREADS = 4


@dataclass
class JobFolder:
    job: str        # the folder's name (the job number)
    state: str      # one of STATES
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"job": self.job, "state": self.state, "detail": self.detail}


def job_folders(sweep_dir: Path) -> list[Path]:
    """Numbered folders, plus any other (non-hidden) folder that holds a row file; by number."""
    out = []
    with os.scandir(sweep_dir) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False) and not e.name.startswith(".") and (
                    e.name.isdigit() or os.path.lexists(os.path.join(e.path, files.ROW))):
                out.append(Path(e.path))
    return sorted(out, key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name))


def _conform(table: pa.Table) -> pa.Table:
    """The file's columns in ROW_SCHEMA order and types; columns it lacks become nulls (an older
    writer); a column of another type raises (foreign schema)."""
    cols = []
    for f in ROW_SCHEMA:
        if f.name in table.column_names:
            cols.append(table.column(f.name).cast(f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=ROW_SCHEMA)


def read_one(path: Path) -> tuple[pa.Table | None, str, str]:
    """(the row as a ROW_SCHEMA table, state, detail) of one job's row file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, "missing_row", "no row.parquet (running, or killed before writing it)"
    except OSError as exc:
        return None, "corrupt_row", f"cannot stat row.parquet: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        return None, "corrupt_row", f"row.parquet is {kind}"
    if st.st_size == 0:
        return None, "corrupt_row", "row.parquet is empty (0 bytes)"
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException, ValueError) as exc:
        text = " ".join(str(exc).replace(f"'{path}'", "it").replace(str(path), "it").split())
        return None, "corrupt_row", f"unreadable row.parquet: {text[:160]}"
    missing = [c for c in IDENTITY if c not in table.column_names]
    if missing:
        return None, "foreign_schema", f"not a yoloprof row (no {', '.join(missing)} column)"
    try:
        table = _conform(table)
    except (pa.ArrowException, ValueError) as exc:
        return None, "foreign_schema", f"a column has another type: {' '.join(str(exc).split())[:160]}"
    if table.num_rows == 0:
        return None, "corrupt_row", "row.parquet holds no row"
    if table.num_rows > 1:
        return None, "duplicate_rows", f"row.parquet holds {table.num_rows} rows (one expected)"
    return _check_row(table)


def _consolidated(sweep_dir: Path, stats: dict[str, os.stat_result]) -> tuple[dict[str, pa.Table], set[str]]:
    """(folder -> its row from results.parquet, folders it speaks for); only folders whose row
    file is a regular file no newer than the consolidation and whose job number appears once."""
    path = sweep_dir / RESULTS_NAME
    try:
        st = os.stat(path)
        table = _conform(pq.read_table(path))
    except (OSError, pa.ArrowException, ValueError):
        return {}, set()
    nums = table.column("job_num").to_pylist()
    counts: dict[object, int] = {}
    for n in nums:
        counts[n] = counts.get(n, 0) + 1
    index = {str(n): i for i, n in enumerate(nums) if counts[n] == 1 and n is not None}
    out = {}
    for name, fst in stats.items():
        if name in index and stat.S_ISREG(fst.st_mode) and fst.st_mtime_ns <= st.st_mtime_ns:
            out[name] = table.slice(index[name], 1)
    return out, set(out)


def _check_row(table: pa.Table) -> tuple[pa.Table | None, str, str]:
    status = table.column("status")[0].as_py()
    if status not in STATUSES:
        return None, "corrupt_row", f"unknown status {status!r}"
    return table, str(status), ""


def read_sweep(sweep_dir: Path) -> tuple[pa.Table, list[JobFolder]]:
    """(every good row as one table, one JobFolder per job folder)."""
    folders = job_folders(sweep_dir)
    stats = {}
    for f in folders:
        try:
            stats[f.name] = os.lstat(f / files.ROW)
        except OSError:
            pass
    known, covered = _consolidated(sweep_dir, stats)
    rest = [f for f in folders if f.name not in covered]
    with ThreadPoolExecutor(max_workers=min(READ_THREADS, max(1, len(rest)))) as pool:
        read = dict(zip((f.name for f in rest), pool.map(read_one, [f / files.ROW for f in rest])))
    tables, states = [], []
    seen: dict[tuple[Any, Any], str] = {}  # (sweep_id, job_num) -> the folder holding it
    for folder in folders:
        table, state, detail = _check_row(known[folder.name]) if folder.name in known else read[folder.name]
        if table is not None:
            key = (table.column("sweep_id")[0].as_py(), table.column("job_num")[0].as_py())
            if key in seen:
                state, detail = "duplicate_rows", f"same job ({key[0]}/{key[1]}) as folder {seen[key]}"
                table = None
            else:
                seen[key] = folder.name
                tables.append(table)
        record = read_state(folder) if state == "missing_row" else None
        if record:  # what its job_state.json says (profiles/jobstate.py): running, preempted, ...
            detail = describe(record)
        states.append(JobFolder(folder.name, state, detail))
    names = {f.name for f in folders}  # planned jobs that have not even started (no folder yet)
    states += [JobFolder(str(n), "missing_row", describe(None)) for n in planned_jobs(sweep_dir)
               if str(n) not in names]
    rows = pa.concat_tables(tables) if tables else ROW_SCHEMA.empty_table()
    return rows, states
