"""How long does a big grid take to start? Time from `yoloprof sweep` to its first capture.

Plans `-m precision=float16,bfloat16 trial=range(0,N/2)` (N jobs, two configurations) in this
process with the capture replaced by a stub that stops the sweep at the first job (Ctrl-C path,
exit 130), so only planning is timed: composing, the grid check (one composition per
configuration, sweep/plan.py validate_grid), the manifest and Hydra's launch. torch is imported
before the clock starts (the first capture needs it anyway; it is not planning).
Target (issue 18): 1,000 planned jobs start in under 5 s.

    python bench/bench_plan.py [--jobs 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    args = ap.parse_args()
    import yoloprof.capturing.builtin.capture_entry as api
    import yoloprof.workloads.models  # noqa: F401 - torch and the model factory, before the clock
    from yoloprof.sweep.app import main as sweep

    first: list[float] = []

    def stop(settings, out_dir, **_):
        first.append(time.perf_counter())
        raise KeyboardInterrupt

    api.capture = stop
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        t0 = time.perf_counter()
        code = sweep(["-m", "precision=float16,bfloat16", f"trial=range(0,{args.jobs // 2})", "device=cpu",
                      "workers=0", "launch.isolation=inprocess", "analysis.enabled=false"])
    assert code == 130 and first, code
    elapsed = first[0] - t0
    load = os.getloadavg()[0]
    print(f"{args.jobs} planned jobs: first capture after {elapsed:.2f} s "
          f"({'meets' if elapsed < 5 else 'misses'} the < 5 s target; 1-min load average {load:.1f} "
          f"on {os.cpu_count()} CPUs)", file=sys.stderr)


if __name__ == "__main__":
    main()
