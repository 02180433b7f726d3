"""Fault injection at length: a sweep SIGKILLed at many random moments, resumed after each kill
until it finishes. After every kill, every finished job (row and profile) must be byte-identical
to what it was when first seen; at the end every configuration x trial has exactly one ok row.
The test suite (tests/test_sweep_faults.py) does two kills; this does `--kills` (default 12).

Run: python bench/bench_faults.py [--kills 12 --configs 3 --trials 4 --sleep 0.2 --seed 28]
Prints the kills that landed mid-job, the resumes, and the invariant checks passed.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from helpers.fake_sweep import driver_cmd, write_driver  # noqa: E402
from yoloprof.profiles.rows import ROW_NAME, read_rows  # noqa: E402


def finished(sweep: Path) -> dict[str, bytes]:
    out = {}
    for row in sweep.glob(f"*/{ROW_NAME}"):
        out[str(row.relative_to(sweep))] = row.read_bytes()
        if (row.parent / "profile.json").is_file():
            out[f"{row.parent.name}/profile.json"] = (row.parent / "profile.json").read_bytes()
    return out


def started_since(root: Path, since: float) -> bool:
    for path in root.glob("runs/profile/sweeps/adhoc/*/*/job_state.json"):
        try:
            if path.stat().st_mtime >= since:
                return True
        except FileNotFoundError:
            continue
    return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=12)
    ap.add_argument("--configs", type=int, default=3)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--sleep", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    driver = write_driver(root)
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_SLEEP": str(args.sleep), "NO_COLOR": "1"}
    grid = ["-m", f"batch={','.join(str(b) for b in range(1, args.configs + 1))}",
            f"trial=range(0,{args.trials})", "device=cpu", "workers=0", "analysis.enabled=false",
            "launch.isolation=inprocess"]
    seen: dict[str, bytes] = {}
    kills = runs = checks = 0
    t0 = time.perf_counter()
    while True:
        sweeps = [p.parent for p in root.glob("runs/profile/sweeps/adhoc/*/yoloprof_sweep.json")]
        started = time.time()
        proc = subprocess.Popen(driver_cmd(driver, *([f"resume={sweeps[0]}"] if sweeps else grid)), cwd=root,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs += 1
        if kills < args.kills:
            while proc.poll() is None and not started_since(root, started):  # a job of this run runs
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 8 * args.sleep))  # within the next few jobs, anywhere
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        code = proc.wait()
        for sweep in [p.parent for p in root.glob("runs/profile/sweeps/adhoc/*/yoloprof_sweep.json")]:
            now = finished(sweep)
            assert {k: now.get(k) for k in seen} == seen, "a finished job changed after a kill"
            checks += len(seen)
            seen = now
        if code == 0 and kills >= args.kills:
            break
        if code == 0:  # finished before the kills ran out: start a fresh sweep in a fresh folder
            root = Path(tempfile.mkdtemp(prefix="bench-faults-"))
            driver, seen = write_driver(root), {}
    [sweep] = [p.parent for p in root.glob("runs/profile/sweeps/adhoc/*/yoloprof_sweep.json")]
    df = read_rows(sweep)
    pairs = sorted(zip(df["batch"], df["trial"]))
    expected = [(b, t) for b in range(1, args.configs + 1) for t in range(args.trials)]
    print(f"kills {kills}, processes {runs}, finished-file checks {checks}, {time.perf_counter() - t0:.1f} s")
    print(f"last sweep: {len(df)} rows, every configuration x trial once: {pairs == expected}, "
          f"all ok: {set(df['status']) == {'ok'}}")
    return 0 if pairs == expected and set(df["status"]) == {"ok"} else 1


if __name__ == "__main__":
    raise SystemExit(main())
