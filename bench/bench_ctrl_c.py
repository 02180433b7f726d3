"""Ctrl-C at many moments of a real `python -m yoloprof run`: how each one ended.

Each run starts a CPU training capture (400 steps, tiny images) in its own project folder holding an
earlier profile.json, waits until the capture registered itself in the runtime registry (as
tests/test_capturing_cli.py does), sleeps a delay and sends one SIGINT. Delays sweep 0 to
--max-delay seconds in --runs steps (the first second is mostly torch's import, where Ctrl-C used
to end the process by SIGINT, returncode -2, or abort it, -6). Printed, counted in this run: each
(returncode, stderr is exactly `yoloprof: interrupted`, earlier profile byte-identical with no
temp file) outcome and the delays it happened at. The contract is one outcome: (130, True, True).

    python bench/bench_ctrl_c.py [--runs 40] [--max-delay 1.2]
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from yoloprof.sweep.machine import REGISTRY, RUNTIME_ENV

BEFORE = b'{"schema": "yoloprof.profile/1", "marker": "previous run"}\n'
COMMAND = ("run", "--device", "cpu", "--batch", "2", "--imgsz", "64", "--steps", "400", "--warmup", "1",
           "--workers", "0", "--exist-ok")


def one(delay: float) -> tuple[int, bool, bool]:
    with tempfile.TemporaryDirectory(prefix="bench-ctrl-c-") as tmp:
        project = Path(tmp)
        out = project / "train"
        out.mkdir()
        (out / "profile.json").write_bytes(BEFORE)
        registry = project / "runtime" / REGISTRY
        env = {**os.environ, "NO_COLOR": "1", RUNTIME_ENV: str(project / "runtime")}
        proc = subprocess.Popen([sys.executable, "-m", "yoloprof", *COMMAND, "--project", str(project)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        while not (registry / f"{proc.pid}.json").exists() and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        intact = (out / "profile.json").read_bytes() == BEFORE and not any(
            p.name.startswith(".") for p in out.iterdir())
        return proc.returncode, err == b"yoloprof: interrupted\n", intact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--max-delay", type=float, default=1.2)
    args = parser.parse_args()
    outcomes: dict[tuple[int, bool, bool], list[float]] = collections.defaultdict(list)
    t0 = time.perf_counter()
    for i in range(args.runs):
        delay = round(args.max_delay * i / max(1, args.runs - 1), 3)
        outcomes[one(delay)].append(delay)
    print(f"{args.runs} runs in {time.perf_counter() - t0:.0f} s; (returncode, one line, intact): count, delays")
    for outcome, delays in sorted(outcomes.items()):
        print(f"  {outcome}: {len(delays)}  {delays[:12]}{' ...' if len(delays) > 12 else ''}")


if __name__ == "__main__":
    main()
