"""Trace engine throughput and memory against a plain `json.loads` of the same bytes.

Usage: python bench/bench_parse.py [TRACE.json(.gz)] [--repeat 3]

Method (so the numbers are honest and comparable):
- The trace is gunzipped once into a temporary plain-JSON file.
- Every measurement runs in a fresh Python subprocess that imports what it needs, reads the
  JSON bytes, records its peak RSS so far (`resource.getrusage(RUSAGE_SELF).ru_maxrss`), runs the
  operation once, and reports the wall time (`time.perf_counter`) and the *growth* of peak RSS
  over that baseline: the memory the operation itself needed on top of the input bytes.
- Each case is run `--repeat` times; the table shows the best wall time and the largest peak
  growth seen. The `load_any` cases start from the .gz file instead, like `yoloprof summary`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "traces" / "df_index_resolver.json.gz"

CASES = {
    "json.loads": "import json; op = lambda: json.loads(data)",
    "parse_trace_bytes": "from yoloprof.traces.parse import parse_trace_bytes; "
                         "op = lambda: parse_trace_bytes(data)",
    "analyze (profile)": "from yoloprof.traces.to_profile import profile_from_trace_bytes; "
                         "op = lambda: profile_from_trace_bytes(data, 'bench')",
    "gunzip + json.loads": "import gzip, json; op = lambda: json.loads(gzip.decompress(gz))",
    "load_any (.gz)": "from yoloprof.profiles.io import load_any; op = lambda: load_any(GZ)",
}

CHILD = """
import resource, sys, time
sys.path.insert(0, {repo!r})
{setup}
data = open({json_path!r}, 'rb').read()
GZ = {gz_path!r}
gz = open(GZ, 'rb').read()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
out = op()
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(wall, (peak - base) * 1024)
"""


def run_case(setup: str, json_path: str, gz_path: str) -> tuple[float, float]:
    code = CHILD.format(repo=str(REPO), setup=setup, json_path=json_path, gz_path=gz_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall, grow = out.stdout.split()
    return float(wall), float(grow)


def measure(trace: Path, repeat: int) -> tuple[int, dict[str, tuple[float, float]]]:
    raw = trace.read_bytes()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "trace.json")
        Path(json_path).write_bytes(data)
        gz_path = str(trace)
        if raw[:2] != b"\x1f\x8b":  # a plain .json trace: the gzip cases need a gzipped copy
            gz_path = os.path.join(tmp, "trace.json.gz")
            Path(gz_path).write_bytes(gzip.compress(data))
        results = {}
        for name, setup in CASES.items():
            runs = [run_case(setup, json_path, gz_path) for _ in range(repeat)]
            results[name] = (min(w for w, _ in runs), max(g for _, g in runs))
    return len(data), results


def render(size: int, results: dict[str, tuple[float, float]]) -> str:
    base_wall, _ = results["json.loads"]
    lines = [f"JSON size: {size / 1e6:.1f} MB",
             f"{'case':<22}{'wall s':>9}{'MB/s':>9}{'vs json':>9}{'peak +MB':>10}{'x JSON':>8}"]
    for name, (wall, grow) in results.items():
        lines.append(f"{name:<22}{wall:>9.3f}{size / 1e6 / wall:>9.0f}{wall / base_wall:>9.2f}"
                     f"{grow / 1e6:>10.0f}{grow / size:>8.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = ap.parse_args(argv)
    trace = Path(args.trace)
    if not trace.is_file():
        print(f"no such trace: {trace}", file=sys.stderr)
        return 2
    size, results = measure(trace, args.repeat)
    if args.json:
        print(json.dumps({"json_bytes": size, "cases": {k: {"wall_s": w, "peak_growth_bytes": g}
                                                       for k, (w, g) in results.items()}}))
    else:
        print(render(size, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
