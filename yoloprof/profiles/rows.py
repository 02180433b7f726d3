"""The sweep rows store: one Parquet file per job, one fixed schema (docs/CONTRACTS.md,
docs/sweeps.md). It sits in profiles/, below sweep/ (which writes rows) and analysis/ (which
reads them), so neither imports the other.

Why one file per job and never a shared file: jobs may run in other processes (submitit) or die
with SIGKILL; a per-job file written with temp + `os.replace` is either complete or absent, so a
killed sweep never leaves a half-written table behind. `results.parquet` is only a consolidation
that can be rebuilt from the job files at any time.
"""

from __future__ import annotations

import datetime as _dt
import json
import warnings
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from yoloprof.config import axes
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.defs import files
from yoloprof.defs import metrics as registry
from yoloprof.defs.envfields import RUNTIME_FIELDS
from yoloprof.profiles.io import write_bytes_atomic

ROW_NAME = files.ROW
RESULTS_NAME = files.RESULTS
STATUSES = ("ok", "failed", "skipped")
# The headline metric columns: the registry's "row" role (value + `<name>_samples` each).
METRICS = registry.names("row")
# How the job was run (sweep/job.py, docs/sweeps.md "How jobs are run"): isolation, launcher
# placement (node, cluster job id, resources), and what else was running on the machine.
EXEC_STR = ("isolation", "node", "cluster_job_id", "machine_policy", "concurrency", "launcher_resources")
EXEC_FLOAT = ("start_footprint_mib", "load_avg_1m", "machine_wait_s")
EXEC_INT = ("other_captures", "attempt")
ENV_STR = ("torch_version", "python_version", "device_name", "hostname", "launcher", "yoloprof_version",
           "git_commit")
# Model and data facts (profile `model` section, capturing/extras/model_facts.py): counted, not measured.
FACTS_INT = ("params_total", "params_trainable", "batch_bytes")
FACTS_FLOAT = ("model_mb",)
# The runtime settings of the capture's env (defs/envfields.py): cuDNN/TF32 flags, launch blocking,
# allocator settings, driver.
_ARROW = {"bool": pa.bool_(), "str": pa.string()}
ENV_RUNTIME = tuple((key, _ARROW[kind]) for key, _, kind in RUNTIME_FIELDS)
# Other processes' CPU while the job's capture ran, in cores, and the machine's cores (the profile's
# `contention` block; metrics/contention.py judges it).
OTHER_CPU, CPU_CORES = "other_cpu_cores", "cpu_cores"
# The sweep axes' columns come from the capture settings (config/axes.py): a field's Python type ->
# its column type. int32, and the order (str, then int, each in field order), are what every
# existing results.parquet holds.
AXIS_ARROW = {"str": pa.string(), "int": pa.int32(), "bool": pa.bool_(), "float": pa.float64()}


def axis_fields(settings_cls: type[CaptureSettings] = CaptureSettings) -> list[tuple[str, pa.DataType]]:
    return [(name, AXIS_ARROW[kind]) for name, kind in axes.row_axes(settings_cls)]


ROW_SCHEMA = pa.schema(
    [("sweep_name", pa.string()), ("sweep_id", pa.string()), ("job_num", pa.int32()),
     ("config_hash", pa.string()), ("group_hash", pa.string()), ("status", pa.string()),
     ("error", pa.string()), ("started_at", pa.timestamp("us", tz="UTC")), ("wall_s", pa.float64())]
    + axis_fields()
    + [("overrides", pa.string())]
    + [(name, pa.float64()) for name in METRICS]
    + [(f"{name}_samples", pa.list_(pa.float64())) for name in METRICS]
    + [("verdict_bound", pa.string()), ("verdict_why", pa.string())]
    + [(name, pa.string()) for name in ENV_STR]
    + [("profile_path", pa.string())]
    + [("seed", pa.int32()), ("git_dirty", pa.bool_()), ("warnings", pa.list_(pa.string()))]
    + [(name, pa.string()) for name in EXEC_STR]
    + [(name, pa.float64()) for name in EXEC_FLOAT]
    + [(name, pa.int32()) for name in EXEC_INT]
    + [(name, pa.int64()) for name in FACTS_INT] + [(name, pa.float64()) for name in FACTS_FLOAT]
    + list(ENV_RUNTIME)
    + [("warmup_used", pa.int32()), ("warmup_steady", pa.bool_())]  # config.warmup_used, summarised
    # other processes' CPU while the capture ran and the machine's cores (profile `contention`)
    + [(OTHER_CPU, pa.float64()), (CPU_CORES, pa.int32())]
)


def row_schema(settings_cls: type[CaptureSettings]) -> pa.Schema:
    """ROW_SCHEMA with the axis columns of `settings_cls` in place of CaptureSettings' (a
    subclass that adds an axis gets its column)."""
    fields, ours = list(ROW_SCHEMA), axis_fields()
    start = ROW_SCHEMA.get_field_index(ours[0][0])
    fields[start:start + len(ours)] = [pa.field(name, kind) for name, kind in axis_fields(settings_cls)]
    return pa.schema(fields)


class CorruptRowsWarning(UserWarning):
    """A job's row.parquet could not be read; it is listed, skipped, never silently dropped."""


def empty_row() -> dict[str, Any]:
    return {name: None for name in ROW_SCHEMA.names}


def _metric_columns(profile: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    metrics = profile.get("metrics") or {}
    for name in METRICS:
        entry = metrics.get(name) or {}
        value = entry.get("value")
        out[name] = None if value is None else float(value)
        samples = entry.get("samples")
        out[f"{name}_samples"] = None if samples is None else [float(s) for s in samples]
    return out


def row_from_profile(profile: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """An `ok` row: `base` (identity, axes, environment from the job) + the profile's headline
    metrics, verdict and the values the capture actually used (precision, batch)."""
    row = {**empty_row(), **base, "status": "ok", "error": None}
    row.update(_metric_columns(profile))
    verdict = profile.get("verdict") or {}
    row["verdict_bound"] = verdict.get("bound")
    row["verdict_why"] = verdict.get("why")
    config, env = profile.get("config") or {}, profile.get("env") or {}
    if isinstance(config.get("precision"), str):
        row["precision"] = config["precision"]
    if isinstance(config.get("batch"), int) and config["batch"] > 0:  # `batch=-1` resolved on GPU
        row["batch"] = config["batch"]
    row["device_name"] = env.get("device_name") or row.get("device_name")
    row["warnings"] = [str(w) for w in profile.get("warnings") or []]
    row.update(growth_columns(profile, row.get("start_footprint_mib")))
    model = profile.get("model")
    facts = model if isinstance(model, dict) else {}
    for name in (*FACTS_INT, *FACTS_FLOAT):
        row[name] = facts.get(name)
    for name, kind in ENV_RUNTIME:
        value = env.get(name)
        row[name] = None if value is None else (bool(value) if kind == pa.bool_() else str(value))
    block = profile.get("contention")
    if isinstance(block, dict):  # metrics/contention.py: a contended job is left out of verdicts
        row[OTHER_CPU], row[CPU_CORES] = block.get("other_cores"), block.get("cores")
    used = config.get("warmup_used")
    if isinstance(used, dict):  # the most warm-up steps of a trial; every trial steady
        from yoloprof.config.steady_thresholds import summarize

        row["warmup_used"], row["warmup_steady"] = summarize(used)
    return row


def growth_columns(profile: dict[str, Any], footprint: float | None) -> dict[str, Any]:
    """The job's own memory: its peak (`peak_mem_mb`: resident set on CPU, allocated on CUDA, both
    MiB) minus the footprint the process had before the capture started. Unlike the absolute peak
    it does not grow with whatever earlier jobs left in a shared process."""
    entry = (profile.get("metrics") or {}).get("peak_mem_mb") or {}
    if footprint is None or entry.get("value") is None:
        return {"peak_mem_growth_mib": None, "peak_mem_growth_mib_samples": None}
    samples = entry.get("samples")
    return {"peak_mem_growth_mib": float(entry["value"]) - footprint,
            "peak_mem_growth_mib_samples": None if samples is None else [float(s) - footprint for s in samples]}


def failed_row(base: dict[str, Any], error: BaseException | str) -> dict[str, Any]:
    """A `failed` row with every column present: the error on one line, the traceback in the log."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    first = " ".join(text.split())[:500]
    return {**empty_row(), **base, "status": "failed", "error": first}


# A swept key's value -> its column type (Hydra gives bool, int, float or str; anything else is
# stored as its JSON text). bool before int: True is an int in Python.
_SWEPT_TYPES = ((bool, pa.bool_()), (int, pa.int64()), (float, pa.float64()), (str, pa.string()))


def swept_field(key: str, value: Any) -> tuple[pa.Field, Any]:
    """The typed column of one swept key (`model.width` -> int64) and the value to store."""
    for py, arrow in _SWEPT_TYPES:
        if isinstance(value, py):
            return pa.field(key, arrow), value
    return pa.field(key, pa.string()), None if value is None else json.dumps(value, default=str)


def _table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    """ROW_SCHEMA's columns, then each row's `swept` keys as typed columns of their own (the keys a
    user swept that have no fixed column: user kwargs such as `model.width`, group choices)."""
    clean: list[dict[str, Any]] = []
    extra: dict[str, list[Any]] = {}
    for row in rows:
        swept = dict(row.get("swept") or {})
        fixed = {k: v for k, v in row.items() if k != "swept"}
        unknown = set(fixed) - set(ROW_SCHEMA.names)
        assert not unknown, f"row has columns outside ROW_SCHEMA: {sorted(unknown)}"
        record = {**empty_row(), **fixed}
        for key, value in swept.items():
            if key in ROW_SCHEMA.names:
                continue  # the fixed column holds the resolved value already
            fld, stored = swept_field(key, value)
            extra.setdefault(key, fld)
            record[key] = stored
        clean.append(record)
    schema = pa.schema(list(ROW_SCHEMA) + list(extra.values()))
    return pa.Table.from_pylist(clean, schema=schema)


def _atomic_write_table(table: pa.Table, path: Path) -> None:
    """Serialise in memory, then the project's one atomic write (temp file + fsync + os.replace):
    readers see the old file or the new one, never a half-written Parquet file."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def write_row(path: str | Path, row: dict[str, Any]) -> None:
    """Write one job's row atomically (the whole schema; missing columns are null)."""
    _atomic_write_table(_table([row]), Path(path))


def read_row(path: str | Path) -> dict[str, Any] | None:
    """One job's row as a dict, or None when absent or unreadable (resume then reruns the job)."""
    try:
        rows = conform(pq.read_table(path)).to_pylist()
    except (OSError, pa.ArrowException, ValueError):
        return None
    return rows[0] if rows else None


def conform(table: pa.Table) -> pa.Table:
    """ROW_SCHEMA's columns in order and type (nulls for a column an older writer lacks), then the
    file's own swept-key columns as they are."""
    cols, fields = [], []
    for f in ROW_SCHEMA:
        cols.append(table.column(f.name).cast(f.type) if f.name in table.column_names
                    else pa.nulls(table.num_rows, f.type))
        fields.append(f)
    for f in table.schema:
        if f.name not in ROW_SCHEMA.names:
            cols.append(table.column(f.name))
            fields.append(f)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def row_files(sweep_dir: str | Path) -> list[Path]:
    """Every job's row file: job dirs are the sweep dir's direct children (`<sweep>/<job_num>/`)."""
    return sorted(Path(sweep_dir).glob(f"*/{ROW_NAME}"),
                  key=lambda p: (not p.parent.name.isdigit(), int(p.parent.name) if p.parent.name.isdigit() else 0,
                                 p.parent.name))


def read_table(sweep_dir: str | Path, corrupt: list[Path] | None = None) -> pa.Table:
    """All job rows as one Arrow table; corrupt files are warned about, listed in `corrupt`, skipped."""
    tables, bad = [], []
    for path in row_files(sweep_dir):
        try:
            tables.append(conform(pq.read_table(path)))
        except (OSError, pa.ArrowException, ValueError) as exc:
            bad.append(path)
            warnings.warn(f"skipping corrupt sweep row {path}: {exc}", CorruptRowsWarning, stacklevel=2)
    if corrupt is not None:
        corrupt.extend(bad)
    if not tables:
        return ROW_SCHEMA.empty_table()
    # Jobs of one sweep may sweep different keys, or one key with ints and floats: missing columns
    # become nulls and numeric types widen (int64 -> float64), as pandas' concat would.
    return pa.concat_tables(tables, promote_options="permissive").replace_schema_metadata(None)


def to_pandas(table: pa.Table):
    """Arrow -> pandas keeping int32/int64/bool columns nullable-typed (no float/object fallback)."""
    import pandas as pd

    nullable = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return table.to_pandas(types_mapper=nullable.get)


def read_rows(sweep_dir: str | Path, corrupt: list[Path] | None = None):
    """Every job's row as a DataFrame (one row per job, ROW_SCHEMA columns, ordered by job number).

    A corrupt row file is reported (CorruptRowsWarning, `corrupt` list, `df.attrs["corrupt_rows"]`)
    and skipped - never silently dropped.
    """
    bad: list[Path] = []
    df = to_pandas(read_table(sweep_dir, bad))
    df.attrs["corrupt_rows"] = [str(p) for p in bad]
    if corrupt is not None:
        corrupt.extend(bad)
    return df


def consolidate(sweep_dir: str | Path, corrupt: list[Path] | None = None) -> Path:
    """(Re)build `<sweep>/results.parquet` from the job files, atomically; returns its path.

    Written from pandas so the file carries pandas metadata: `pandas.read_parquet` then gives the
    same nullable Int32/boolean columns as `read_rows`.
    """
    table = read_table(sweep_dir, corrupt)
    table = pa.Table.from_pandas(to_pandas(table), schema=table.schema, preserve_index=False)
    out = Path(sweep_dir) / RESULTS_NAME
    _atomic_write_table(table, out)
    return out


def utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def overrides_json(overrides: Iterable[str]) -> str:
    return json.dumps(list(overrides))
