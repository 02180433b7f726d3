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
the report, and makes `yoloprof analyze` exit 1 unless --allow-partial. The row files are read
concurrently by a thread pool (Arrow releases the GIL while decoding), then concatenated once:
2,000 files take a fraction of the one-at-a-time time.
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from yoloprof.analysis.folder import ROW_FILE
from yoloprof.sweep.rows import ROW_SCHEMA, STATUSES

ACCEPTED = ("ok", "failed", "skipped")
PROBLEMS = ("missing_row", "corrupt_row", "foreign_schema", "duplicate_rows")
STATES = ACCEPTED + PROBLEMS
IDENTITY = ("job_num", "status", "group_hash")
READ_THREADS = 8


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
                    e.name.isdigit() or os.path.lexists(os.path.join(e.path, ROW_FILE))):
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
        return None, "corrupt_row", f"unreadable row.parquet: {' '.join(str(exc).split())[:160]}"
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
    status = table.column("status")[0].as_py()
    if status not in STATUSES:
        return None, "corrupt_row", f"unknown status {status!r}"
    return table, str(status), ""


def read_sweep(sweep_dir: Path) -> tuple[pa.Table, list[JobFolder]]:
    """(every good row as one table, one JobFolder per job folder)."""
    folders = job_folders(sweep_dir)
    with ThreadPoolExecutor(max_workers=min(READ_THREADS, max(1, len(folders)))) as pool:
        results = list(pool.map(read_one, [f / ROW_FILE for f in folders]))
    tables, states, seen = [], [], {}
    for folder, (table, state, detail) in zip(folders, results):
        if table is not None:
            key = (table.column("sweep_id")[0].as_py(), table.column("job_num")[0].as_py())
            if key in seen:
                state, detail = "duplicate_rows", f"same job ({key[0]}/{key[1]}) as folder {seen[key]}"
                table = None
            else:
                seen[key] = folder.name
                tables.append(table)
        states.append(JobFolder(folder.name, state, detail))
    rows = pa.concat_tables(tables) if tables else ROW_SCHEMA.empty_table()
    return rows, states
