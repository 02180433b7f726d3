"""Op self time on EVERY fixture trace (shared/fixtures/traces and shared/fixtures/tbplugin)
against torch's rule recomputed in plain Python from the raw JSON (tests/helpers/torch_rule.py).

Prints per trace: rows compared (op + runtime/driver names), calls that differ, the largest
relative difference of summed self and inclusive time per name, and the runtime/driver rows.
The tests run the same comparison on the small traces (tests/test_traces_ops_runtime.py); the
large ones take about 10 s here, too slow for the suite.

Also (`--with-stack`): a CPU trace recorded here with `with_stack=True` (Python functions nest
around and inside ops: a custom autograd Function's backward) against torch's own `key_averages()`
of the same run: calls and self time of every op row.

Run: PYTHONPATH=.:tests python bench/bench_op_self_time.py [--with-stack] [TRACE ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from test_traces_ops_runtime import RESNET, compare  # noqa: E402

from helpers.paths import TRACES  # noqa: E402

TOLERANCE = 1e-3  # 0.1%


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-9) if abs(a - b) > 1e-6 else 0.0


def main(paths: list[Path]) -> int:
    worst_all = 0.0
    for path in paths:
        t = time.perf_counter()
        ours, ref, a = compare(path)
        names = set(ours) | set(ref)
        bad_calls = sum(1 for n in names if ours.get(n, [0])[0] != ref.get(n, [0])[0])
        zero = [0, 0.0, 0.0]
        worst_self = max((rel(ours.get(n, zero)[1], ref.get(n, zero)[1]) for n in names), default=0.0)
        worst_total = max((rel(ours.get(n, zero)[2], ref.get(n, zero)[2]) for n in names), default=0.0)
        api = sum(1 for r in a.op_rows if r["kind"] != "op")
        worst_all = max(worst_all, worst_self, worst_total, float(bad_calls))
        print(f"{path.name[:48]:48s} names {len(names):5d}  calls differ {bad_calls}  "
              f"max rel self {worst_self:.2e}  total {worst_total:.2e}  api rows {api:4d}  "
              f"{time.perf_counter() - t:.1f} s")
    ok = worst_all <= TOLERANCE
    print("all within 0.1%" if ok else "SOME TRACE DIFFERS BY MORE THAN 0.1%")
    return 0 if ok else 1


def with_stack() -> int:
    """Op rows of a with_stack CPU trace against key_averages of the same profile."""
    import tempfile
    from collections import defaultdict

    import torch
    from torch.profiler import ProfilerActivity, profile

    from yoloprof.traces.analyze import analyze_trace_file

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # noqa: ANN001, ANN205
            return x * 2

        @staticmethod
        def backward(ctx, g):  # noqa: ANN001, ANN205
            return (g * 2).relu() + 1

    x, lin = torch.randn(64, 64, requires_grad=True), torch.nn.Linear(64, 64)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for _ in range(2):
            Double.apply(lin(x)).sum().backward()
    path = Path(tempfile.mkdtemp()) / "stack.json"
    prof.export_chrome_trace(str(path))
    ka = {e.key: e for e in prof.key_averages()}
    ours: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in analyze_trace_file(path).op_rows:
        ours[r["name"]][0] += r["count"]
        ours[r["name"]][1] += r["self_us"]
    bad = [n for n, (c, s) in ours.items() if n not in ka or c != ka[n].count
           or abs(s - ka[n].self_cpu_time_total) > 0.05 + TOLERANCE * ka[n].self_cpu_time_total]
    print(f"with_stack CPU trace: {len(ours)} op rows against key_averages, {len(bad)} differ {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    if "--with-stack" in sys.argv:
        sys.argv.remove("--with-stack")
        if with_stack():
            sys.exit(1)
    given = [Path(p) for p in sys.argv[1:]]
    sys.exit(main(given or sorted(TRACES.glob("*.json.gz")) + [RESNET]))
