"""The runtime settings that change a GPU step's speed (defs/envfields.py): recorded by a real CPU
capture as they were set here, carried into the sweep row, and compared (with flagged verdicts) by
`compare` and `analyze`."""

from __future__ import annotations

import pandas as pd

from helpers.profiles import cpu_train_profile
from yoloprof.defs.envfields import RUNTIME_KEYS


def test_a_cpu_capture_records_cudnn_tf32_and_launch_blocking(captured):
    env = captured["env"]
    assert {k: env[k] for k in RUNTIME_KEYS} == {
        "cudnn_benchmark": True, "cudnn_deterministic": True, "cudnn_allow_tf32": False,
        "matmul_allow_tf32": True, "float32_matmul_precision": "high",  # allow_tf32=True is "high"
        "cuda_launch_blocking": "1", "pytorch_cuda_alloc_conf": "expandable_segments:True",
        "driver_version": None}  # no GPU driver on a CPU capture
    # launch blocking only matters on a GPU: no warning on a CPU capture
    assert not any("CUDA_LAUNCH_BLOCKING" in w for w in captured["warnings"])


def test_the_sweep_row_carries_the_runtime_settings(tmp_path, captured):
    from yoloprof.profiles.rows import read_rows, row_from_profile, write_row

    row = row_from_profile(captured, {"sweep_name": "s", "sweep_id": "1", "job_num": 0, "group_hash": "g"})
    write_row(tmp_path / "0" / "row.parquet", row)
    back = read_rows(tmp_path).iloc[0]
    assert bool(back["cudnn_benchmark"]) is True and bool(back["cudnn_allow_tf32"]) is False
    assert back["cuda_launch_blocking"] == "1" and back["pytorch_cuda_alloc_conf"] == "expandable_segments:True"


def test_compare_flags_verdicts_across_a_runtime_setting():
    from yoloprof.readers.compare import compute_compare

    before, after = cpu_train_profile(), cpu_train_profile()
    before["env"].update(cudnn_benchmark=False, cuda_launch_blocking=None)
    after["env"].update(cudnn_benchmark=True, cuda_launch_blocking=None)
    result = compute_compare(before, after)
    diffs = {d["field"]: d for d in result["differences"]}
    assert diffs["cudnn_benchmark"]["big"] and diffs["cudnn_benchmark"]["before"] is False
    assert "cudnn.benchmark differs" in result["flagged"]
    assert "cuda_launch_blocking" not in diffs  # unset on both sides


def test_analyze_lists_a_runtime_setting_that_differs_between_sides():
    from yoloprof.analysis.envdiff import pair_differences, side_table

    ok = pd.DataFrame({"group_hash": ["a", "a", "b"], "device_name": ["cpu"] * 3,
                       "cudnn_benchmark": [False, False, True], "driver_version": ["550.54"] * 3,
                       "cuda_launch_blocking": [None, None, "1"]})
    sides = side_table(ok)
    fields = {d["field"]: d for d in pair_differences(sides["a"], sides["b"])}
    assert fields["cudnn_benchmark"]["big"] and fields["cudnn_benchmark"]["after"] == "true"
    assert not fields["cuda_launch_blocking"]["big"]  # recorded on one side only: listed, not flagged
    assert "driver_version" not in fields


def test_a_cuda_capture_under_launch_blocking_says_so():
    from yoloprof.capturing.device.environment import runtime_warnings

    assert runtime_warnings({"device_type": "cuda", "cuda_launch_blocking": "1"})
    assert runtime_warnings({"device_type": "cuda", "cuda_launch_blocking": "0"}) == []
    assert runtime_warnings({"device_type": "cpu", "cuda_launch_blocking": "1"}) == []
