"""A folder of rank traces: parsed by one process vs one process per core, paired rounds.

Usage: python bench/bench_ranks.py [--ranks 8] [--repeat 3] [TRACE.json.gz]

The ranks are copies of one real DDP trace (nccl_data.json.gz: 9.8 MB JSON, 40.6k events) with
`distributedInfo.rank` set, written to a temporary folder as plain JSON. Each round times
`readers.ranks.read_ranks(folder, jobs=1)` and `read_ranks(folder, jobs=cores)` back to back
(wall clock; the order alternates between rounds) and the speedup is the median of the per-round
ratios. Ideal scaling is min(cores, ranks); a machine busy with other work shows less.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT = REPO.parent / "shared" / "fixtures" / "traces" / "nccl_data.json.gz"


def write_ranks(trace: Path, folder: Path, n: int) -> None:
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    for rank in range(n):
        doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": rank, "world_size": n}
        (folder / f"rank{rank}.json").write_text(json.dumps(doc))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if not Path(args.trace).is_file():
        print(f"no such trace: {args.trace}", file=sys.stderr)
        return 2
    from yoloprof.readers.ranks import read_ranks

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_ranks(Path(args.trace), folder, args.ranks)
        read_ranks(folder, jobs=1)  # warm the file cache and the imports
        rounds = []
        for r in range(args.repeat):
            times = {}
            for jobs in ((1, cores) if r % 2 == 0 else (cores, 1)):
                t = time.perf_counter()
                read_ranks(folder, jobs=jobs)
                times[jobs] = time.perf_counter() - t
            rounds.append(times)
    one = statistics.median(t[1] for t in rounds)
    many = statistics.median(t[cores] for t in rounds)
    speedup = statistics.median(t[1] / t[cores] for t in rounds)
    load = os.getloadavg()[0]
    print(f"{args.ranks} rank traces, {cores} cores, 1-minute load average {load:.1f}, "
          f"median of {args.repeat} paired rounds")
    print(f"{'jobs=1':<12}{one:>8.2f} s")
    print(f"{f'jobs={cores}':<12}{many:>8.2f} s")
    print(f"speedup {speedup:.2f}x (ideal {min(cores, args.ranks)}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
