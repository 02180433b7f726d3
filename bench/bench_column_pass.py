"""The Kineto reader's column pass (`traces/parse.py` `_part`) and merge (`_merge`), in CPU
seconds, against another checkout of yoloprof (the code before a change) in the same run.

Usage: python bench/bench_column_pass.py --ref OLD_CHECKOUT [TRACE] [--rounds 5] [--slices N]

What is timed, in a fresh process per checkout and round (`--child`), with `time.process_time`
(CPU seconds, not wall: the cores are shared): every slice of the trace (`kineto.plan`, 4 MiB
each) decoded by msgspec (`kineto.decode_slice`, as `parse._chunked` does), then turned into
columns (`parse._part`), each slice right after its decode so that its Structs are in cache as in
the reader; then all slices' columns merged (`parse._merge`). The rounds alternate the two
checkouts (old, new, old, new...) and the table shows each side's median and the ratio of the
medians. TRACE: a .json or .json.gz Kineto trace (default: the 54 MB df_index_resolver fixture).

Measured here (2 cores shared with other jobs, load 5-7; medians of 5 alternating rounds; old =
main before the issue-30 column pass, new = this branch):
  df_index_resolver (54 MB, 216k events, 13 slices): part 0.152 -> 0.092 s (0.61x),
      merge 0.0096 -> 0.0064 s (0.67x), decode 0.111 -> 0.115 s (unchanged)
  the same repeated 20 times (1034 MiB, 4.3M events, 258 slices): part 3.34 -> 1.94 s (0.58x),
      merge 0.335 -> 0.202 s (0.60x; mostly the kernel zeroing fresh pages, so it varies by
      +-50% from run to run), decode 2.21 -> 2.16 s (unchanged); part + merge 3.68 -> 2.14 s
  and `YOLOPROF_CACHE=off yoloprof summary` of that 1034 MiB file, whole process (user + sys,
  helpers included, 3 alternating rounds): median 10.2 -> 8.3 CPU s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "traces" / "df_index_resolver.json.gz"
PHASES = ("decode", "part", "merge")


def child(trace: Path, slices: int | None) -> dict[str, float]:
    """CPU seconds of each phase over the trace, in this process (the checkout on sys.path)."""
    from yoloprof.traces import exact_times, kineto, parse

    data = trace.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    cuts = kineto.plan(data)
    if not cuts:
        raise SystemExit(f"{trace}: too small to be cut into slices")
    n = len(cuts) + 1 if slices is None else min(slices, len(cuts) + 1)
    base = exact_times.base_from_bytes(data)
    spent = dict.fromkeys(PHASES, 0.0)
    parts = []
    for i in range(n):
        t0 = time.process_time()
        events, _ = kineto.decode_slice(data, cuts, i)
        t1 = time.process_time()
        parts.append(parse._part(events, base))
        t2 = time.process_time()
        del events
        spent["decode"] += t1 - t0
        spent["part"] += t2 - t1
    t0 = time.process_time()
    merged = parse._merge(parts, [])
    spent["merge"] = time.process_time() - t0
    return {**spent, "events": len(merged)}


def run_child(checkout: Path, trace: Path, slices: int | None) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(trace)]
    if slices is not None:
        cmd += ["--slices", str(slices)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--ref", type=Path, help="a checkout of the code to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--slices", type=int, default=None, help="only the first N slices")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.trace, a.slices)))
        return
    sides = {"new": REPO} if a.ref is None else {"old": a.ref.resolve(), "new": REPO}
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for _ in range(a.rounds):
        for side, checkout in sides.items():
            runs[side].append(run_child(checkout, a.trace, a.slices))
    events = {side: {r["events"] for r in rs} for side, rs in runs.items()}
    print(f"{a.trace.name}: {sorted(set().union(*events.values()))} events, {a.rounds} rounds, CPU s (median)")
    for phase in PHASES:
        med = {side: statistics.median(r[phase] for r in rs) for side, rs in runs.items()}
        line = "  ".join(f"{side} {v:8.4f}" for side, v in med.items())
        ratio = f"  new/old {med['new'] / med['old']:.2f}x" if "old" in med and med["old"] > 0 else ""
        print(f"  {phase:7s} {line}{ratio}")


if __name__ == "__main__":
    main()
