"""Many traces, one per rank (a distributed job, or TensorBoard's trace handler): find them in a
folder, parse them in parallel processes, and compare the ranks with each other.

Why a per-rank view: in synchronous data-parallel training every rank waits in the gradient
all-reduce for the slowest one, so step times look alike on all ranks and the straggler hides.
What tells it apart is the work each rank does besides communicating, and how long the others sit
in communication kernels waiting for it. Definitions (per step, from each rank's profile):

- compute_ms: device time of every kernel category except "communication" (the summed
  `device_ms_per_step` of those categories); with no device kernels, the step time itself.
- comm_ms: device time of "communication" kernels (NCCL/RCCL collectives).
- comm_wait_ms: comm_ms minus the smallest comm_ms of all ranks. The data moved is the same on
  every rank, so the rank with the least communication time is the one the others waited for;
  their excess is time spent waiting (an estimate: it also holds any real bandwidth difference).
- straggler: a rank whose compute_ms exceeds the median over ranks by more than STRAGGLER_PCT %.
- slowest_vs_median: the largest compute_ms over the median compute_ms (1.0 = perfectly even).
"""

from __future__ import annotations

import os
import re
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from yoloprof.errors import UsageError
from yoloprof.readers._common import finite, metric_value

STRAGGLER_PCT = 10.0
COMM_CATEGORY = "communication"
# File names of per-rank traces: TensorBoard's handler writes <worker>[.<ts>].pt.trace.json[.gz],
# distributed jobs commonly rank<N>.json[.gz] or rank-<N>...; one home for the patterns.
TRACE_GLOBS = ("*.pt.trace.json", "*.pt.trace.json.gz", "rank*.json", "rank*.json.gz")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def trace_files(folder: str | os.PathLike) -> list[Path]:
    """The per-rank traces of a folder (not recursive), in name order; usage error if none."""
    root = Path(folder)
    found = sorted({p for g in TRACE_GLOBS for p in root.glob(g) if p.is_file()})
    if not found:
        raise UsageError(f"{root} is a folder with no rank traces (looked for "
                         f"{', '.join(TRACE_GLOBS)}); give a profile.json, a trace file or such a folder")
    return found


def _load_one(path: str) -> dict[str, Any]:
    from yoloprof.readers.load import load_any
    from yoloprof.traces import parse

    parse.SLICE_WORKERS = 1  # the pool already runs one process per core

    return load_any(path)


# Peak memory of one worker per byte of its largest trace (bench/bench_large.py): a streamed
# trace (readers.large) peaks near 0.75x its JSON, one read whole near 2.5x (plus the JSON).
STREAMED_PEAK_PER_BYTE, WHOLE_PEAK_PER_BYTE = 0.8, 3.5


def _memory_jobs(paths: list[Path], meminfo: str = "/proc/meminfo") -> int | None:
    """How many workers fit in the memory available now, each holding the largest trace's peak;
    None where /proc/meminfo is absent."""
    from yoloprof.profiles.blocks import estimated_size
    from yoloprof.readers.large import stream_min_bytes

    try:
        with open(meminfo, encoding="ascii") as fh:
            avail = next(int(line.split()[1]) << 10 for line in fh if line.startswith("MemAvailable:"))
        largest = max(estimated_size(p) for p in paths)
    except (OSError, ValueError, StopIteration):
        return None
    per_byte = STREAMED_PEAK_PER_BYTE if largest >= stream_min_bytes() else WHOLE_PEAK_PER_BYTE
    return max(1, int(avail // max(largest * per_byte, 1)))


def load_many(paths: list[Path], jobs: int | None = None) -> list[dict[str, Any]]:
    """Each trace's profile, parsed in parallel processes: one per core, at most one per file,
    and no more than the memory available holds (`_memory_jobs`). The trace engine is imported
    before the workers fork so that none imports it again."""
    import yoloprof.traces.to_profile  # noqa: F401  (warm import, inherited by forked workers)

    jobs = max(1, min(len(paths), jobs or os.cpu_count() or 1, _memory_jobs(paths) or len(paths)))
    if jobs == 1:
        return [_load_one(str(p)) for p in paths]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_load_one, [str(p) for p in paths]))


def rank_of(profile: dict[str, Any], path: Path, index: int) -> int:
    """The trace's own `distributedInfo.rank`, else a rank number in the file name, else its index."""
    info = (profile.get("env") or {}).get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int) and not isinstance(info["rank"], bool):
        return info["rank"]
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else index


def _rank_row(profile: dict[str, Any], path: Path, rank: int) -> dict[str, Any]:
    cats = {c.get("category"): finite(c.get("device_ms_per_step")) for c in profile.get("categories") or []}
    comm = cats.get(COMM_CATEGORY) or 0.0
    compute = sum(v for k, v in cats.items() if k != COMM_CATEGORY and v is not None)
    step = metric_value(profile, "step_ms")
    has_device = any(v for v in cats.values())
    return {"rank": rank, "file": path.name, "step_ms": step,
            "compute_ms": compute if has_device else step, "comm_ms": comm if has_device else None,
            "device_busy_ms": metric_value(profile, "device_busy_ms"),
            "steps": (profile.get("trace") or {}).get("steps_analyzed")}


def compute_ranks(profiles: list[dict[str, Any]], paths: list[Path]) -> dict[str, Any]:
    """The multi-rank view: one row per rank (sorted by rank), the slowest rank against the
    median, communication wait per rank and the stragglers (definitions in the module doc)."""
    rows = sorted((_rank_row(p, path, rank_of(p, path, i))
                   for i, (p, path) in enumerate(zip(profiles, paths))), key=lambda r: r["rank"])
    loads = [r["compute_ms"] for r in rows if r["compute_ms"] is not None]
    median = statistics.median(loads) if loads else None
    comms = [r["comm_ms"] for r in rows if r["comm_ms"] is not None]
    least_comm = min(comms) if comms else None
    for r in rows:
        r["comm_wait_ms"] = (r["comm_ms"] - least_comm) if r["comm_ms"] is not None and least_comm is not None else None
        r["vs_median"] = (r["compute_ms"] / median) if median and r["compute_ms"] is not None else None
        r["straggler"] = bool(r["vs_median"] is not None and r["vs_median"] > 1 + STRAGGLER_PCT / 100)
    slowest = max((r for r in rows if r["vs_median"] is not None), key=lambda r: r["vs_median"], default=None)
    return {"ranks": rows, "median_compute_ms": median, "threshold_pct": STRAGGLER_PCT,
            "slowest_rank": None if slowest is None else slowest["rank"],
            "slowest_vs_median": None if slowest is None else slowest["vs_median"],
            "stragglers": [r["rank"] for r in rows if r["straggler"]],
            "duplicate_ranks": sorted({r["rank"] for r in rows if sum(x["rank"] == r["rank"] for x in rows) > 1}),
            "warnings": [f"rank {rank_of(p, path, i)}: {w}" for i, (p, path) in enumerate(zip(profiles, paths))
                         for w in p.get("warnings") or []]}


def read_ranks(folder: str | os.PathLike, jobs: int | None = None,
               ranks: frozenset[int] | None = None) -> dict[str, Any]:
    """Find, parse (in parallel) and compare the rank traces of a folder; `ranks`: only the files
    of those ranks are parsed, a file's rank read from its name (`rank_of` before parsing: the
    rank number in the name, else its position in name order)."""
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: give at least 1 process")
    paths = trace_files(folder)
    if ranks is not None:
        named = {p: rank_of({}, p, i) for i, p in enumerate(paths)}
        paths = [p for p in paths if named[p] in ranks]
        if not paths:
            raise UsageError(f"--ranks {','.join(map(str, sorted(ranks)))}: {folder} has ranks "
                             f"{', '.join(map(str, sorted(set(named.values()))))}")
    result = compute_ranks(load_many(paths, jobs), paths)
    result["folder"] = str(folder)
    return result


def compare_ranks(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Two multi-rank views side by side, ranks matched by number: per-rank step and compute
    deltas (after / before), and the change of the median and of the spread between ranks."""
    b_by, a_by = {r["rank"]: r for r in before["ranks"]}, {r["rank"]: r for r in after["ranks"]}
    rows = []
    for rank in sorted(set(b_by) | set(a_by)):
        b, a = b_by.get(rank, {}), a_by.get(rank, {})
        rows.append({"rank": rank, **{f"{k}_{side}": s.get(k) for k in ("step_ms", "compute_ms", "comm_wait_ms")
                                     for side, s in (("before", b), ("after", a))},
                     "step_ratio": _ratio(a.get("step_ms"), b.get("step_ms")),
                     "compute_ratio": _ratio(a.get("compute_ms"), b.get("compute_ms"))})
    return {"ranks": rows, "median_compute_ratio": _ratio(after["median_compute_ms"], before["median_compute_ms"]),
            "slowest_vs_median": {"before": before["slowest_vs_median"], "after": after["slowest_vs_median"]},
            "stragglers": {"before": before["stragglers"], "after": after["stragglers"]},
            "only_before": sorted(set(b_by) - set(a_by)), "only_after": sorted(set(a_by) - set(b_by))}


def _ratio(after: float | None, before: float | None) -> float | None:
    return after / before if after is not None and before else None
