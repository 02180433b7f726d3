"""A stand-in for `yoloprof infer ...` in A/B and calibrate tests: run as
`python fake_capture.py SCALE [--fail] --project DIR --json`, it writes DIR/infer/profile.json, a
valid CPU profile whose 3 step_ms trials are 50 ms x SCALE with process-level noise (3% between
processes, 1% within), seeded by DIR's name so a test run is deterministic. No torch, no numpy:
a process costs an interpreter start."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # yoloprof from this checkout


def main(argv: list[str]) -> int:
    import math
    import random

    from yoloprof.profiles.io import write_profile
    from yoloprof.profiles.model import empty_profile, metric

    if "--fail" in argv:
        print("fake capture: refused on purpose", file=sys.stderr)
        return 1
    scale, project = float(argv[0]), Path(argv[argv.index("--project") + 1])
    rng = random.Random(zlib.crc32(f"{project.name}/{scale}".encode()))
    level = rng.gauss(0, 0.03)
    steps = [50.0 * scale * math.exp(level + rng.gauss(0, 0.01)) for _ in range(3)]
    p = empty_profile("infer", {"mode": "infer", "batch": 1, "imgsz": 32, "device": "cpu", "runs": 5},
                      {"torch": "2.13.0", "hostname": "fake", "argv": ["infer", "--device", "cpu"]})
    p["metrics"] = {"step_ms": metric(steps, "ms", "lower"),
                    "img_per_s": metric([1000.0 / s for s in steps], "img/s", "higher")}
    p["verdict"] = {"bound": "compute", "why": "fake", "evidence": {}}
    write_profile(project / "infer" / "profile.json", p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
