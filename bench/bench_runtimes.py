"""Forward time of YOLOv8n (Ultralytics yaml, seeded weights) on CPU, eager PyTorch against each
inference runtime (capturing/runtimes/): TorchScript (traced + frozen, and the same with
`torch.jit.optimize_for_inference`, which OPTIMIZE decides per device), ONNX Runtime and OpenVINO
(f32 and bf16 precision hints).

One thread (torch.set_num_threads(1), the runtimes take the same), one fixed input at --imgsz,
rounds interleaved (each round times every variant --calls times, a median per variant per round),
so machine noise falls on all alike. Printed: each variant's setup_s, the median over rounds of its
per-round median forward ms, and its ratio to eager measured in the same run (< 1 = faster).

    python bench/bench_runtimes.py [--imgsz 320] [--rounds 7] [--calls 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yoloprof.capturing.runtimes import load_runtime, torchscript  # noqa: E402
from yoloprof.errors import RuntimeNotApplicable, UsageError  # noqa: E402
from yoloprof.workloads.family_api import ModelRef  # noqa: E402
from yoloprof.workloads.families import adapter_of  # noqa: E402


def variants(network: Any, x: torch.Tensor) -> dict[str, tuple[Callable[[torch.Tensor], Any], float]]:
    out: dict[str, tuple[Callable[[torch.Tensor], Any], float]] = {"eager": (network, 0.0)}
    plans = [("torchscript", "torchscript", "float32", False), ("torchscript+optimize", "torchscript", "float32", True),
             ("onnxruntime", "onnxruntime", "float32", None), ("openvino f32", "openvino", "float32", None),
             ("openvino bf16", "openvino", "bfloat16", None)]
    for name, level, precision, optimize in plans:
        if optimize is not None:
            torchscript.OPTIMIZE["cpu"] = optimize
        try:
            loaded = load_runtime(level, network, x, "cpu", precision)
        except RuntimeNotApplicable as exc:
            print(f"{name}: not applicable: {exc}")
            continue
        out[name] = (loaded.forward, loaded.setup_s)
    torchscript.OPTIMIZE["cpu"] = False
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imgsz", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        adapter = adapter_of("ultralytics")
    except UsageError as exc:  # the extra is not installed: nothing to measure
        print(f"bench_runtimes: skipped: {exc}")
        return 0
    model = adapter.build(ModelRef("ultralytics", "yolov8n.yaml")).eval()
    network = adapter.export_network(model).network.eval()  # type: ignore[attr-defined]
    x = torch.rand(1, 3, args.imgsz, args.imgsz, generator=torch.Generator().manual_seed(0))
    runs = variants(network, x)
    times: dict[str, list[float]] = {name: [] for name in runs}
    with torch.no_grad():
        for fn, _ in runs.values():
            fn(x)  # one warm call each
        for _ in range(args.rounds):
            for name, (fn, _) in runs.items():
                per_call = []
                for _ in range(args.calls):
                    start = time.perf_counter()
                    fn(x)
                    per_call.append(time.perf_counter() - start)
                times[name].append(statistics.median(per_call) * 1e3)
    eager = statistics.median(times["eager"])
    print(f"YOLOv8n {args.imgsz}x{args.imgsz}, CPU, 1 thread, {args.rounds} rounds x {args.calls} calls "
          f"(torch {torch.__version__})")
    print(f"{'variant':<22}{'setup_s':>9}{'forward_ms':>12}{'vs eager':>10}")
    for name, (_, setup) in runs.items():
        ms = statistics.median(times[name])
        print(f"{name:<22}{setup:>9.2f}{ms:>12.2f}{ms / eager:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
