"""The project's results store: every capture's row, kept for `yoloprof history` and `gate`.

Layout (docs/history.md "The results store"):

    <project>/results/machine=<fingerprint hash>/part-<utc>-<uuid>.parquet     one capture each
    <project>/results/machine=<fingerprint hash>/compact-<utc>-<uuid>.parquet  merged parts

Why this layout:
- One Parquet *dataset*, hive-partitioned by the machine fingerprint: `pyarrow.dataset`,
  `pandas.read_parquet(<project>/results)` and DuckDB (`read_parquet('<project>/results/**/*.parquet',
  hive_partitioning=true, union_by_name=true)`) read it as one table with a `machine` column.
  History never mixes machines, so each series lives in one partition and compaction stays local.
- An append is a new file, written under a temporary dot-name and renamed (`os.replace`): readers
  (which skip dot- and underscore-names) see a whole file or none, and concurrent writers (sweep
  jobs on a cluster, two terminals) never touch the same file. No file is ever rewritten.
- 100,000 one-row files would make every read open 100,000 files, so the writer that finds
  `COMPACT_AT` part files in its partition merges them into one compact file (a new file), then
  removes the parts. Every row carries a unique `row_id` and readers drop repeated ids, so the
  moment where a part and its compact copy both exist (or two writers compacted the same parts)
  never counts a capture twice; a reader that finds a file removed under it lists again.
- Every file has the same fixed columns (STORE_SCHEMA: the sweep row's columns plus the store's
  own); a user's swept keys are kept as JSON text in `swept`, so the schema never forks.

The store is optional: nothing here is needed to capture, `YOLOPROF_RESULTS=0` turns it off, and
callers turn a failure to append into a warning (capturing/builtin/store_record.py).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from yoloprof.defs import files
from yoloprof.profiles.io import write_bytes_atomic
from yoloprof.profiles.rows import ROW_SCHEMA

STORE_DIR = files.RESULTS_DIR
ENV_SWITCH = "YOLOPROF_RESULTS"  # "0", "off", "no", "false": captures append nothing
PARTITION = "machine"
PART_PREFIX, COMPACT_PREFIX = "part-", "compact-"
COMPACT_AT = 64  # part files in a partition before a writer merges them
MERGE_COMPACT_AT = 8  # compact files in a partition before they are merged too
# What makes two captures comparable machines (the series key beside the configuration):
# hardware model, the software that runs the kernels, and the intra-op thread count.
FINGERPRINT = ("cpu_model", "device_name", "torch_version", "cuda_version", "threads")
# Columns the store adds to the sweep row (docs/CONTRACTS.md "Results store").
STORE_COLUMNS = [
    ("row_id", pa.string()), ("source", pa.string()), ("config_key", pa.string()),
    ("cpu_model", pa.string()), ("cuda_version", pa.string()), ("swept", pa.string()),
    ("profile_created_at", pa.string()), ("recorded_at", pa.timestamp("us", tz="UTC")),
]
STORE_SCHEMA = pa.schema(list(ROW_SCHEMA) + [pa.field(n, t) for n, t in STORE_COLUMNS])
SOURCES = ("run", "infer", "api", "profile", "sweep")


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "no", "false")


def store_dir(project: str | os.PathLike) -> Path:
    return Path(project) / STORE_DIR


def fingerprint(row: dict[str, Any]) -> str:
    """The machine as one readable line (what history prints beside each series)."""
    return " | ".join(f"{name}={row.get(name)}" for name in FINGERPRINT)


def machine_key(row: dict[str, Any]) -> str:
    """The partition value: a short hash of the fingerprint (CPU names hold spaces, '@', '(')."""
    return hashlib.sha256(fingerprint(row).encode()).hexdigest()[:12]


def config_key(row: dict[str, Any], config: dict[str, Any] | None = None) -> str | None:
    """The configuration a row measured, trial and seed left out: the row's `group_hash` (the
    sweep's pooling key, from the resolved settings and a user task's target and arguments);
    for a capture without settings (`yoloprof.profile` around a user's loop), a hash of the
    profile's config without what changes from run to run."""
    if row.get("group_hash"):
        return str(row["group_hash"])
    if not config:
        return None
    volatile = {"trial", "seed", "iterations_run", "iterations_lacking", "rank", "world_size", "tensorboard",
                "warmup_used", "autobatch"}  # what the capture found (warm-up until steady, batch probes)
    kept = {k: v for k, v in sorted(config.items()) if k not in volatile}
    text = json.dumps(kept, sort_keys=True, default=str)
    return "p" + hashlib.sha256(text.encode()).hexdigest()[:15]


def _store_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row conformed to STORE_SCHEMA: unknown keys refused, `swept` as JSON text, an id."""
    out: dict[str, Any] = {name: None for name in STORE_SCHEMA.names}
    swept = row.get("swept")
    for key, value in row.items():
        if key == "swept":
            continue
        assert key in out, f"row column outside STORE_SCHEMA: {key}"
        out[key] = value
    out["swept"] = None if not swept else (swept if isinstance(swept, str)
                                            else json.dumps(swept, sort_keys=True, default=str))
    out["row_id"] = out["row_id"] or uuid.uuid4().hex
    out["recorded_at"] = out["recorded_at"] or _dt.datetime.now(_dt.timezone.utc)
    return out


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime())


def _write(path: Path, table: pa.Table) -> Path:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return write_bytes_atomic(path, sink.getvalue().to_pybytes())


def append(project: str | os.PathLike, row: dict[str, Any]) -> Path:
    """Add one capture's row to the project's store as a new file; returns its path. Merges the
    partition's part files when there are `COMPACT_AT` of them."""
    record = _store_row(row)
    folder = store_dir(project) / f"{PARTITION}={machine_key(record)}"
    table = pa.Table.from_pylist([record], schema=STORE_SCHEMA)
    path = _write(folder / f"{PART_PREFIX}{_stamp()}-{uuid.uuid4().hex}.parquet", table)
    if len(_files(folder, PART_PREFIX)) >= COMPACT_AT:
        compact(folder)
    return path


def _files(folder: Path, prefix: str) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.name.startswith(prefix) and p.suffix == ".parquet")
    except FileNotFoundError:
        return []


def compact(folder: str | os.PathLike) -> Path | None:
    """Merge a partition's part files (and its compact files, once there are MERGE_COMPACT_AT)
    into one new compact file, then remove the merged ones. One compactor at a time per partition
    (a non-blocking lock; a busy partition is left for the next writer); a compactor that dies
    half-way leaves duplicates that readers drop by `row_id`, never a lost row."""
    folder = Path(folder)
    with _lock(folder / ".compact.lock") as held:
        if not held:
            return None
        parts = _files(folder, PART_PREFIX)
        compacts = _files(folder, COMPACT_PREFIX)
        inputs = parts + (compacts if len(compacts) + 1 >= MERGE_COMPACT_AT else [])
        if len(inputs) < 2:
            return None
        tables = [_read_file(p) for p in inputs]
        merged = _dedup(pa.concat_tables([t for t in tables if t is not None]))
        out = _write(folder / f"{COMPACT_PREFIX}{_stamp()}-{uuid.uuid4().hex}.parquet", merged)
        for p in inputs:
            p.unlink(missing_ok=True)
        return out


class _lock:
    """fcntl.flock(LOCK_EX | LOCK_NB) where the platform has it; elsewhere always 'held' (the
    row ids keep a doubled compaction harmless)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> bool:
        try:
            import fcntl
        except ImportError:
            return True
        self.fd = fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the lock


def _read_file(path: Path, columns: list[str] | None = None) -> pa.Table | None:
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        return None
    cols = [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
            for f in STORE_SCHEMA]
    out = pa.Table.from_arrays(cols, schema=STORE_SCHEMA)
    return out.select(columns) if columns else out


def _dedup(table: pa.Table) -> pa.Table:
    """Drop repeated `row_id`s (a part and its compact copy seen together), keeping the first."""
    import numpy as np
    import pyarrow.compute as pc

    ids = table.column("row_id")
    if pc.count_distinct(ids).as_py() == table.num_rows:
        return table
    _, first = np.unique(np.asarray(ids.to_pylist(), dtype=object).astype(str), return_index=True)
    return table.take(pa.array(np.sort(first)))


def read_store(project: str | os.PathLike, columns: Iterable[str] | None = None) -> pa.Table:
    """Every stored row (ids unique) with the `machine` partition column; only `columns` (plus
    `row_id` and `machine`) when given. An absent store is an empty table.

    Read file by file (pyarrow.parquet, not pyarrow.dataset, whose import alone costs a command's
    start-up more than reading 100,000 rows): a column a file lacks (written by an older version)
    is null, and a file a compactor removed between listing and reading makes it list again."""
    wanted = list(STORE_SCHEMA.names) if columns is None else list(dict.fromkeys(["row_id", *columns]))
    wanted = [c for c in wanted if c != PARTITION]
    unknown = [c for c in wanted if c not in STORE_SCHEMA.names]
    if unknown:
        raise ValueError(f"not a results-store column: {', '.join(unknown)}")
    schema = pa.schema([STORE_SCHEMA.field(c) for c in wanted] + [pa.field(PARTITION, pa.string())])
    for attempt in range(5):
        try:
            tables = [_read_part(path, wanted, schema) for path in _all_files(store_dir(project))]
            break
        except FileNotFoundError:
            if attempt == 4:
                raise
            time.sleep(0.05)
    return _dedup(pa.concat_tables(tables)) if tables else schema.empty_table()


def _all_files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [p for d in sorted(root.iterdir()) if d.is_dir() and d.name.startswith(f"{PARTITION}=")
            for p in sorted(d.iterdir()) if p.suffix == ".parquet" and not p.name.startswith((".", "_"))]


def _read_part(path: Path, wanted: list[str], schema: pa.Schema) -> pa.Table:
    present = set(pq.read_schema(path).names)
    table = pq.read_table(path, columns=[c for c in wanted if c in present])
    cols = [table.column(c).cast(schema.field(c).type) if c in present else pa.nulls(table.num_rows, schema.field(c).type)
            for c in wanted]
    machine = path.parent.name.split("=", 1)[1]
    cols.append(pa.array([machine] * table.num_rows, pa.string()))
    return pa.Table.from_arrays(cols, schema=schema)


def rows_count(project: str | os.PathLike) -> int:
    return read_store(project, ["row_id"]).num_rows
