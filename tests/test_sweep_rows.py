"""The rows store: schema = the documented contract, atomic writes, corrupt files reported."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from yoloprof.profiles.model import metric
from yoloprof.profiles.rows import (METRICS, RESULTS_NAME, ROW_NAME, ROW_SCHEMA, CorruptRowsWarning,
                                 consolidate, failed_row, read_rows, row_files, row_from_profile,
                                 write_row)

CONTRACTS = Path(__file__).resolve().parents[1] / "docs" / "CONTRACTS.md"
TYPE_NAMES = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
              "timestamp[us, UTC]": pa.timestamp("us", tz="UTC"), "list<float64>": pa.list_(pa.float64()),
              "list<string>": pa.list_(pa.string())}


def contract_columns() -> dict[str, pa.DataType]:
    """Parse the row-columns table of docs/CONTRACTS.md: the schema must be exactly that."""
    lines = CONTRACTS.read_text(encoding="utf-8").split("### Row columns", 1)[1].splitlines()[1:]
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append(line)
    columns: dict[str, pa.DataType] = {}
    for line in table[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0]:
            continue
        names, type_name = cells[0], cells[1]
        if names == "<each metric above>_samples":
            names = ", ".join(f"{m}_samples" for m in METRICS)
        for name in re.split(r",\s*", names):
            columns[name] = TYPE_NAMES[type_name]
    return columns


def test_schema_is_exactly_the_contract():
    want = contract_columns()
    assert set(ROW_SCHEMA.names) == set(want)
    for name, type_ in want.items():
        assert ROW_SCHEMA.field(name).type == type_, name


def base(job: int, **extra) -> dict:
    return {"sweep_name": "t", "sweep_id": "id1", "job_num": job, "config_hash": f"c{job}",
            "group_hash": "g", "mode": "train", "batch": 2 + job, "trial": job, "precision": "float32",
            "started_at": dt.datetime(2024, 5, 1, 12, 0, job, tzinfo=dt.timezone.utc), "wall_s": 1.5,
            "launcher": "basic", "threads": 2, **extra}


def profile(samples: list[float]) -> dict:
    return {"metrics": {"step_ms": metric(samples, "ms", "lower"),
                        "img_per_s": metric([2000 / s for s in samples], "img/s", "higher")},
            "verdict": {"bound": "compute", "why": "w"}, "config": {"precision": "bfloat16", "batch": 8},
            "env": {"device_name": "dev"}}


def make_sweep(tmp_path: Path, n: int = 3) -> Path:
    for job in range(n):
        samples = [10.0 + job, 12.0 + job, 11.0 + job]
        write_row(tmp_path / str(job) / ROW_NAME, row_from_profile(profile(samples), base(job)))
    return tmp_path


def test_ok_row_round_trip(tmp_path):
    make_sweep(tmp_path, 3)
    df = read_rows(tmp_path)
    assert list(df.columns) == ROW_SCHEMA.names
    assert list(df["job_num"]) == [0, 1, 2]
    for job in range(3):
        samples = [10.0 + job, 12.0 + job, 11.0 + job]
        row = df.iloc[job]
        assert row["step_ms"] == pytest.approx(sum(samples) / 3)
        assert list(row["step_ms_samples"]) == samples
        assert row["img_per_s"] == pytest.approx(sum(2000 / s for s in samples) / 3)
        assert row["status"] == "ok" and row["verdict_bound"] == "compute"
        assert row["precision"] == "bfloat16" and row["batch"] == 8  # resolved values from the profile
        assert row["device_name"] == "dev"
    assert pd.isna(df.iloc[0]["p50_ms"])  # a train profile has no latency percentiles


def test_failed_row_has_every_column(tmp_path):
    write_row(tmp_path / "0" / ROW_NAME, failed_row(base(0), ValueError("boom\nsecond line")))
    table = pq.read_table(tmp_path / "0" / ROW_NAME)
    assert table.schema.remove_metadata() == ROW_SCHEMA
    row = table.to_pylist()[0]
    assert row["status"] == "failed" and row["error"] == "ValueError: boom second line"
    assert row["step_ms"] is None and row["step_ms_samples"] is None and row["batch"] == 2


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "0" / ROW_NAME
    write_row(path, base(0, status="ok"))
    write_row(path, base(0, status="failed", error="x"))
    assert [p.name for p in path.parent.iterdir()] == [ROW_NAME]
    assert pq.read_table(path).to_pylist()[0]["status"] == "failed"


def test_unknown_column_is_a_bug_not_a_silent_drop(tmp_path):
    with pytest.raises(AssertionError):
        write_row(tmp_path / ROW_NAME, {"no_such_column": 1})


def test_corrupt_row_is_reported_and_skipped(tmp_path):
    make_sweep(tmp_path, 3)
    (tmp_path / "1" / ROW_NAME).write_bytes(b"PAR1 this is not parquet")
    corrupt: list[Path] = []
    with pytest.warns(CorruptRowsWarning, match="1"):
        out = consolidate(tmp_path, corrupt)
    assert corrupt == [tmp_path / "1" / ROW_NAME]
    assert list(pd.read_parquet(out)["job_num"]) == [0, 2]
    with pytest.warns(CorruptRowsWarning):
        df = read_rows(tmp_path)
    assert df.attrs["corrupt_rows"] == [str(tmp_path / "1" / ROW_NAME)]


def test_results_parquet_and_dataset_have_the_documented_types(tmp_path):
    make_sweep(tmp_path, 2)
    write_row(tmp_path / "2" / ROW_NAME, failed_row(base(2), "RuntimeError: x"))
    out = consolidate(tmp_path)
    assert out == tmp_path / RESULTS_NAME
    df = pd.read_parquet(out)
    assert len(df) == 3 and list(df.columns) == ROW_SCHEMA.names
    assert str(df["job_num"].dtype) == "Int32" and str(df["batch"].dtype) == "Int32"
    assert str(df["threads"].dtype) == "Int32" and df["step_ms"].dtype == "float64"
    assert str(df["started_at"].dtype) == "datetime64[us, UTC]"
    assert pq.read_schema(out).remove_metadata() == ROW_SCHEMA
    dataset = ds.dataset([str(p) for p in row_files(tmp_path)], format="parquet")
    assert dataset.schema.remove_metadata() == ROW_SCHEMA
    assert sorted(dataset.to_table().column("job_num").to_pylist()) == [0, 1, 2]


def test_empty_sweep_reads_as_empty_frame_with_columns(tmp_path):
    df = read_rows(tmp_path)
    assert len(df) == 0 and list(df.columns) == ROW_SCHEMA.names


def test_job_table_records_show_what_sets_jobs_apart():
    from yoloprof.sweep.progress import summary_records
    from yoloprof.profiles.rows import overrides_json, to_pandas, _table

    rows = [base(0, status="ok", mode="infer", p50_ms=12.5, step_ms=13.0,
                 overrides=overrides_json(["sweep=x", "batch=1"])),
            failed_row(base(1, mode="infer", overrides=overrides_json(["sweep=x", "batch=2"])), "OSError: disk")]
    records = summary_records(to_pandas(_table(rows)))
    assert [r["overrides"] for r in records] == ["batch=1", "batch=2"]
    assert records[0]["headline"] == "12.50 ms (p50 latency)" and records[0]["step ms"] == "13.00"
    assert records[1]["status"] == "failed" and records[1]["headline"] == "n/a"
    assert records[1]["error"] == "OSError: disk"


def test_job_table_wraps_long_errors_instead_of_cutting_them():
    import io

    from yoloprof.sweep.progress import print_summary
    from yoloprof.profiles.rows import overrides_json, to_pandas, _table

    error = ("UsageError: the data has 3 images = 1 full batches of 2, but --warmup 1 + --steps 5 need 6; "
             "ways out: a larger dataset, fewer --steps/--warmup, or a smaller --batch (at most 1) END")
    rows = [failed_row(base(0, mode="train", overrides=overrides_json(["batch=2"])), error)]
    out = io.StringIO()
    print_summary(to_pandas(_table(rows)), "sweep", file=out)
    flat = " ".join(out.getvalue().replace("│", " ").split())
    assert all(word in flat for word in error.split())  # every word printed, none cut mid-way


def test_a_jobs_environment_columns_do_not_import_torch():
    """A job's row records torch's version without importing torch (a fake or failed capture
    never loads it); the string is the one torch itself reports once imported."""
    import subprocess
    import sys

    code = ("import sys; from yoloprof.sweep.job import environment_columns; "
            "v = environment_columns('basic')['torch_version']; loaded = 'torch' in sys.modules; "
            "import torch; print(v == torch.__version__, loaded)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
