"""Folders of rank traces (readers/ranks.py): discovery, parallel parsing, the per-rank view.

The ranks are built from one real DDP trace (nccl_data: rank 0 of 2, NCCL all-reduce kernels):
copies shifted in time, and one copy whose compute kernels are stretched 1.5x (the straggler)."""

from __future__ import annotations

import json

import pytest

from helpers.fixtures_readers import SLOW_RANK, STRETCH
from yoloprof.cli import main
from yoloprof.errors import UsageError
from yoloprof.metrics.categories import classify
from yoloprof.readers.ranks import STRAGGLER_PCT, compare_ranks, read_ranks, trace_files



def _plain_compute_ms(doc, factor=1.0):
    """Independent reference: summed durations of non-communication kernels inside the analysed
    ProfilerStep windows (steps 5 and 6: the engine drops the first step as warm-up), per step."""
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    steps = sorted(steps, key=lambda e: e["ts"])[1:]
    total = 0.0
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and classify(e["name"]) != "communication":
            if any(s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps):
                total += e["dur"] * factor
    return total / 1000.0 / len(steps)


def test_rank_files_are_found_by_the_tensorboard_and_rank_patterns(rank_dirs):
    even, slow = rank_dirs
    assert [p.name for p in trace_files(slow)] == ["host.123.pt.trace.json", "rank0.json", "rank1.json.gz"]
    with pytest.raises(UsageError, match="no rank traces"):
        trace_files(even.parent)


def test_even_ranks_agree_and_no_straggler(views):
    result = views[0]
    rows = result["ranks"]
    assert [r["rank"] for r in rows] == [0, 1, 2]  # from distributedInfo, not the file names
    assert len({round(r["compute_ms"], 9) for r in rows}) == 1  # shifted copies: same figures
    assert result["stragglers"] == [] and result["slowest_vs_median"] == pytest.approx(1.0)
    assert all(r["comm_wait_ms"] == pytest.approx(0.0) for r in rows)


def test_stretched_rank_is_the_straggler(views, source_doc):
    result = views[1]
    by_rank = {r["rank"]: r for r in result["ranks"]}
    base = _plain_compute_ms(source_doc)
    assert by_rank[0]["compute_ms"] == pytest.approx(base, rel=0.03)
    assert by_rank[SLOW_RANK]["compute_ms"] == pytest.approx(_plain_compute_ms(source_doc, STRETCH), rel=0.03)
    assert result["stragglers"] == [SLOW_RANK] and result["slowest_rank"] == SLOW_RANK
    # median of (b, b, 1.5b) is b: the slowest rank is 1.5x the median
    assert result["slowest_vs_median"] == pytest.approx(STRETCH, rel=0.03)
    assert STRETCH - 1 > STRAGGLER_PCT / 100


def test_parallel_and_serial_parsing_agree(rank_dirs, views):
    assert read_ranks(rank_dirs[1], jobs=1) == views[1]


def test_cli_summary_and_compare_of_folders(rank_dirs, capsys):
    even, slow = rank_dirs
    assert main(["summary", str(slow), "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "STRAGGLER" in out and "slowest rank: 2" in out
    assert main(["compare", str(even), str(slow), "--json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["stragglers"] == {"before": [], "after": [SLOW_RANK]}
    ratio = {r["rank"]: r["compute_ratio"] for r in cmp["ranks"]}
    assert ratio[SLOW_RANK] == pytest.approx(STRETCH, rel=0.03) and ratio[0] == pytest.approx(1.0)
    assert main(["compare", str(even), str(slow / "rank0.json")]) == 2
    assert "folder of rank traces" in capsys.readouterr().err
    assert main(["summary", str(slow), "--jobs", "0"]) == 2


def test_compare_ranks_names_unmatched_ranks():
    side = {"ranks": [{"rank": 0, "step_ms": 10.0, "compute_ms": 5.0, "comm_wait_ms": 0.0}],
            "median_compute_ms": 5.0, "slowest_vs_median": 1.0, "stragglers": []}
    other = {**side, "ranks": side["ranks"] + [{"rank": 1, "step_ms": 12.0, "compute_ms": 6.0,
                                                "comm_wait_ms": 1.0}]}
    result = compare_ranks(side, other)
    assert result["only_after"] == [1] and result["only_before"] == []
    assert result["ranks"][1]["step_ratio"] is None
