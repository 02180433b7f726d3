"""Checks of the synthetic sweep builders of tests/helpers/sweeps.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from helpers.sweeps import batch_truth, make_sweep


def test_make_sweep_layout(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    assert sweep.relative_to(tmp_path).parts[:2] == ("sweeps", "test")
    jobs = sorted(int(p.parent.name) for p in sweep.rglob("row.parquet"))
    assert jobs == list(range(6))
    row = pd.read_parquet(sweep / "0" / "row.parquet").iloc[0]
    prof = json.loads((sweep / row["profile_path"]).read_text())
    assert prof["metrics"]["step_ms"]["samples"] == list(row["step_ms_samples"])
