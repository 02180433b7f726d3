"""yoloprof's figures on real models against a plain `time.perf_counter` loop around the same real
calls (bench/plain_loops/: written with each library's public API, no yoloprof), interleaved in one
process: plain, yoloprof, plain, yoloprof, ... for `--rounds` rounds per case.

For each case (family, model, mode), printed, measured in this run:
- train: per phase (forward = forward + the family's loss, backward, optimizer = the trainer's
  optimizer step: yoloprof's clip + optimizer + ema phases; the plain loops run each family's own
  trainer step, plain_loops/trainer_steps.py) the median over
  rounds of the plain loop's mean ms per step and yoloprof's (`phases[].wall_ms`), and their
  ratio; `compute` = their sum (yoloprof's step also has dataload and to_device, which the plain
  loop prepared beforehand, so the step is compared without them);
- infer: the p50 latency of one call (plain: the median over the round's calls; yoloprof:
  `latency.p50_ms`) and, where the plain loop has stages, each stage's mean ms.
Target: every ratio within 5% (0.95-1.05). Both sides build the same model with the same seed
and run the same number of warm-up and measured steps; yoloprof runs with `repeat=1`, no trace,
no modules (its timing pass is what the ratios compare).

    PYTHONPATH=. python bench/bench_families.py [--rounds 3] [--steps 10] [--only ultralytics]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

import yoloprof  # noqa: E402
from yoloprof.config.capture_settings import CaptureSettings  # noqa: E402

TRAIN_PHASES = ("forward", "backward", "optimizer")
OPTIMIZER_PARTS = ("clip", "optimizer", "ema")  # yoloprof's phases of the trainer's optimizer step
# (label, yoloprof model, plain loop module, its model name, mode, batch, imgsz)
CASES = [
    ("YOLOv8n train", "ultralytics:yolov8n.yaml", "ultralytics", "yolov8n.yaml", "train", 2, 128),
    ("YOLOv8n infer", "ultralytics:yolov8n.yaml", "ultralytics", "yolov8n.yaml", "infer", 1, 160),
    ("YOLO11n train", "ultralytics:yolo11n.yaml", "ultralytics", "yolo11n.yaml", "train", 2, 128),
    ("SSDlite train", "torchvision:ssdlite320_mobilenet_v3_large", "torchvision", "ssdlite320_mobilenet_v3_large",
     "train", 2, 160),
    ("SSDlite infer", "torchvision:ssdlite320_mobilenet_v3_large", "torchvision", "ssdlite320_mobilenet_v3_large",
     "infer", 1, 160),
    ("YOLO9-t train", "libreyolo:yolo9", "libreyolo", "yolo9:t", "train", 2, 128),
    ("YOLO9-t infer", "libreyolo:yolo9", "libreyolo", "yolo9:t", "infer", 1, 160),
    ("resnet18 train", "torchvision:resnet18", "torchvision", "resnet18", "train", 4, 128),
    ("resnet18 infer", "torchvision:resnet18", "torchvision", "resnet18", "infer", 1, 128),
]


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def plain_train(module: Any, name: str, batch: int, imgsz: int, warmup: int, steps: int) -> dict[str, float]:
    phases = module.train_phases(name, batch, imgsz, "cpu")
    for _ in range(warmup):
        for run in phases.values():
            run()
    sums = dict.fromkeys(TRAIN_PHASES, 0.0)
    for _ in range(steps):
        for phase in TRAIN_PHASES:
            sums[phase] += _timed(phases[phase])
    return {p: v / steps for p, v in sums.items()}


def plain_infer(module: Any, name: str, source: bytes, batch: int, imgsz: int, warmup: int, runs: int
                ) -> dict[str, float]:
    if hasattr(module, "infer_stages"):
        stages = module.infer_stages(name, source, batch, imgsz, "cpu")
        call = lambda: [run() for run in stages.values()]  # noqa: E731
    else:
        stages, call = {}, module.infer_call(name, batch, imgsz, "cpu", source=source)
    for _ in range(warmup):
        call()
    per: dict[str, list[float]] = {s: [] for s in stages}
    totals = []
    for _ in range(runs):
        if stages:
            ms = {s: _timed(run) for s, run in stages.items()}
            for s, v in ms.items():
                per[s].append(v)
            totals.append(sum(ms.values()))
        else:
            totals.append(_timed(call))
    out = {"p50": statistics.median(totals)}
    out.update({s: statistics.fmean(v) for s, v in per.items()})
    return out


def yoloprof_run(model: str, mode: str, batch: int, imgsz: int, warmup: int, steps: int, data: str | None,
                 out: Path, threads: int) -> dict[str, float]:
    counts = {"steps": steps} if mode == "train" else {"runs": steps}
    size = "t" if model.startswith("libreyolo") else "n"
    settings = CaptureSettings.for_mode(mode, model=model, size=size, batch=batch, imgsz=imgsz, device="cpu", warmup=warmup,
                                        warmup_max=warmup, repeat=1, trace=False, modules=False, workers=0,
                                        threads=threads, data=data, **counts)
    prof = yoloprof.capture(settings, out, project=out.parent)
    data_ = prof.data
    if mode == "train":
        ms = {p["phase"]: p["wall_ms_per_step"] or 0.0 for p in data_["phases"]}
        ms["optimizer"] = sum(ms.get(p, 0.0) for p in OPTIMIZER_PARTS)  # the plain loops' optimizer holds all three
        return {p: ms[p] for p in TRAIN_PHASES}
    res = {"p50": data_["latency"]["p50_ms"]}
    res.update({s["stage"]: s["ms"] for s in data_.get("stages") or []})
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads of both sides")
    ap.add_argument("--only", default=None, help="run the cases whose label or family contains this")
    args = ap.parse_args()
    import importlib

    import torch

    torch.set_num_threads(args.threads)  # the plain loop's; yoloprof sets the same for its capture
    tmp = Path(tempfile.mkdtemp(prefix="bench_families_"))
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (240, 320, 3), dtype=np.uint8)).save(buf, format="PNG")
    image = tmp / "image.png"
    image.write_bytes(buf.getvalue())
    print(f"{'case':16} {'figure':12} {'plain ms':>9} {'yoloprof ms':>11} {'ratio':>6}")
    for label, model, family, name, mode, batch, imgsz in CASES:
        if args.only and args.only not in label and args.only not in family:
            continue
        module = importlib.import_module(f"plain_loops.{family}")
        plain, mine = [], []
        for r in range(args.rounds):
            if mode == "train":
                plain.append(plain_train(module, name, batch, imgsz, args.warmup, args.steps))
            else:
                plain.append(plain_infer(module, name, buf.getvalue(), batch, imgsz, args.warmup, args.steps))
            mine.append(yoloprof_run(model, mode, batch, imgsz, args.warmup, args.steps,
                                     None if mode == "train" else str(image), tmp / f"{label}-{r}".replace(" ", "_"),
                                     args.threads))
        figures = [k for k in plain[0] if k in mine[0]]
        if mode == "train":
            for side in (plain, mine):
                for d in side:
                    d["compute"] = sum(d[p] for p in TRAIN_PHASES)
            figures.append("compute")
        for fig in figures:
            a = statistics.median(d[fig] for d in plain)
            b = statistics.median(d[fig] for d in mine)
            print(f"{label:16} {fig:12} {a:9.2f} {b:11.2f} {b / a:6.3f}")


if __name__ == "__main__":
    main()
