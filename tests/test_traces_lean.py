"""The engine's lean paths for large traces give the old figures, bit for bit, and free what they
promise: rows grouped by a count table (traces/grouping.py `grouped_rows`) against a plain-Python
group-by, one-group unions sorted by a stable argsort (traces/intervals.py) against the lexsort
formula they replace, the C heap handed back (traces/fork.py `trim_heap`), and a helper's result
unpickled from the pipe (`Forked.join`), a cut one refused."""

from __future__ import annotations

import os

import numpy as np
import pytest

from yoloprof.traces import analyze, fork, grouping
from yoloprof.traces.intervals import exclusive_contributions


def _python_groups(names, phases, n_phases, weights):
    """Plain Python: rows summed per (name, phase) in row order, keys ascending."""
    out: dict[int, list] = {}
    for i, (n, p) in enumerate(zip(names.tolist(), phases.tolist())):
        key = n * n_phases + p
        acc = out.setdefault(key, [0.0] * len(weights) + [0])
        for c, w in enumerate(weights.values()):
            acc[c] += w[i]
        acc[-1] += 1
    return [(k // n_phases, k % n_phases, dict(zip(weights, v[:-1])), v[-1]) for k, v in sorted(out.items())]


@pytest.mark.parametrize("seed", range(3))
def test_grouped_rows_by_count_table_and_by_sort_equal_a_plain_group_by(seed, monkeypatch) -> None:
    rng = np.random.default_rng(seed)
    n = 3000
    names = rng.integers(0, 40, n).astype(np.int32)
    phases = rng.integers(0, 6, n)
    weights = {"self": rng.random(n) * 1e3, "total": rng.random(n) * 1e6 + 0.1}
    want = _python_groups(names, phases, 6, weights)
    assert grouping.grouped_rows(names, phases, 6, weights) == want  # count table
    monkeypatch.setattr(grouping, "DENSE_KEYS", 0)
    monkeypatch.setattr(grouping, "DENSE_KEYS_PER_ROW", 0)
    assert grouping.grouped_rows(names, phases, 6, weights) == want  # np.unique's sort


def _lexsort_contributions(start, end, group):
    """The formula before the one-group shortcut (ranks by np.unique, order by lexsort)."""
    out = np.zeros(len(start))
    end = np.maximum(end, start)
    lo, span = float(start.min()), float(end.max()) - float(start.min()) + 1.0
    ranks = np.unique(group, return_inverse=True)[1].astype(np.float64)
    s, e = start - lo + ranks * span * 2.0, end - lo + ranks * span * 2.0
    order = np.lexsort((s, ranks))
    reach = np.maximum.accumulate(e[order])
    prev = np.concatenate(([-np.inf], reach[:-1]))
    out[order] = np.maximum(0.0, e[order] - np.maximum(s[order], prev))
    return out


def _union(start, end):
    """Plain Python union length of intervals."""
    total, reach = 0.0, -np.inf
    for s, e in sorted(zip(start.tolist(), np.maximum(end, start).tolist())):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


@pytest.mark.parametrize("groups", [1, 3])
def test_contributions_equal_the_lexsort_formula_and_split_the_union(groups) -> None:
    rng = np.random.default_rng(groups)
    n = 2000
    start = np.round(rng.random(n) * 1e4, 1) + 1.7e9  # ties, and epoch-sized values (rounding)
    end = start + np.round(rng.random(n) * 50, 1)
    group = rng.integers(0, groups, n) * 2  # codes with a gap, as device ids can have
    got = exclusive_contributions(start, end, group)
    assert np.array_equal(got, _lexsort_contributions(start, end, group))
    for g in np.unique(group).tolist():
        sel = group == g
        assert got[sel].sum() == pytest.approx(_union(start[sel], end[sel]), rel=1e-12)


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_trim_heap_hands_freed_small_blocks_back() -> None:
    fork.trim_heap()
    blocks = [bytearray(32 * 1024) for _ in range(2000)]  # 64 MB in blocks below glibc's mmap threshold
    for b in blocks:
        b[::4096] = b"x" * len(b[::4096])  # touched: resident
    keep = blocks[-1]
    del blocks
    before = _rss_kb()
    fork.trim_heap()
    after = _rss_kb()
    assert after <= before
    if fork._MALLOC_TRIM:  # glibc: most of the 64 MB goes back
        assert before - after > 32 * 1024, (before, after)
    assert len(keep) == 32 * 1024


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot be written")


def test_join_unpickles_a_large_result_and_refuses_a_cut_one() -> None:
    big = np.arange(1_500_000, dtype=np.int64)  # 12 MB: many pipe buffers
    helper = fork.fork_call(lambda: {"a": big * 2, "tail": "end"})
    assert helper is not None
    got = helper.join()
    assert np.array_equal(got["a"], big * 2) and got["tail"] == "end"
    # The helper dies while writing: a part of the payload is in the pipe, never a result.
    cut = fork.fork_call(lambda: [big, _Unpicklable()])
    assert cut is not None
    with pytest.raises(fork.ForkFailed):
        cut.join()


def test_available_bytes_reads_memavailable(tmp_path) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:  100 kB\nMemFree:  10 kB\nMemAvailable:   2048 kB\n")
    assert fork.available_bytes(str(info)) == 2048 * 1024
    info.write_text("MemTotal:  100 kB\n")
    assert fork.available_bytes(str(info)) is None
    assert fork.available_bytes(str(tmp_path / "absent")) is None


def test_no_op_table_helper_without_room(monkeypatch) -> None:
    monkeypatch.setattr(fork, "available_bytes", lambda: 2 * analyze.TREE_HELPER_BYTES_PER_EVENT * 1000 - 1)
    assert not analyze._room_for_helper(1000)
    monkeypatch.setattr(fork, "available_bytes", lambda: 2 * analyze.TREE_HELPER_BYTES_PER_EVENT * 1000)
    assert analyze._room_for_helper(1000)
    monkeypatch.setattr(fork, "available_bytes", lambda: None)  # unknown: as before
    assert analyze._room_for_helper(10**12)
