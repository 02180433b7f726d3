"""yoloprof's training step of a family against that family's OWN trainer driven by hand
(bench/plain_loops/trainer_steps.py: the library's trainer object, its optimizer, clipping and EMA,
its step's calls), interleaved in one process: trainer, yoloprof, yoloprof, trainer, ... (the side
that runs first alternates) for `--rounds` rounds per case (issue 39: the step of `run --model <family>` is its trainer's step).

Printed per case, measured in this run: the median over rounds of each side's mean ms per step of
- forward (forward + the family's loss), backward (yoloprof's backward + clip phases where its
  trainer clips inside its backward block), opt (optimizer + EMA; yoloprof's clip + optimizer +
  ema), and compute = forward + backward + opt,
and the ratio yoloprof / trainer of those medians, then the compute ratio of each round (its two
runs back to back, so the load of a shared machine weighs on both alike) and their median. Goal: compute within 10% (0.90-1.10) for LibreYOLO and
Ultralytics. Both sides build the model with seed 0 and run the same warm-up and measured steps;
the trainer side gets the first batch of the same synthetic data (converted to the family's
training format with the adapter's `to_device`, outside what is timed) and reuses it, yoloprof
reads its loader; yoloprof runs with repeat=1, no trace, no modules.

    PYTHONPATH=. python bench/bench_trainer_step.py [--rounds 3] [--steps 10] [--imgsz 160] [--only libreyolo]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import yoloprof  # noqa: E402
from yoloprof.config.capture_settings import CaptureSettings  # noqa: E402

# (label, yoloprof model, size, family: which plain_loops/trainer_steps.py builder drives its trainer)
CASES: list[tuple[str, str, str, str]] = [
    ("YOLO9-t", "libreyolo:yolo9", "t", "libreyolo"),
    ("YOLOv8n", "ultralytics:yolov8n.yaml", "n", "ultralytics"),
]
GROUPS = {"forward": ("forward",), "backward": ("backward",), "opt": ("clip", "optimizer", "ema")}


def _settings(model: str, size: str, batch: int, imgsz: int, warmup: int, steps: int, threads: int) -> CaptureSettings:
    return CaptureSettings.for_mode("train", model=model, size=size, batch=batch, imgsz=imgsz, device="cpu",
                                    warmup=warmup, warmup_max=warmup, repeat=1, trace=False, modules=False,
                                    workers=0, threads=threads, steps=steps)


def first_batch(settings: CaptureSettings) -> tuple[Any, Any, int]:
    """(inputs, targets) of yoloprof's first batch in the family's format, and the data's size."""
    import torch

    from yoloprof.capturing.builtin.trial_context import build_dataset, recipe_inputs
    from yoloprof.workloads.data import make_loader
    from yoloprof.workloads.families import workload

    dataset = build_dataset(settings, (settings.warmup + settings.measured + 40) * settings.batch)
    images, targets = next(iter(make_loader(dataset, batch=settings.batch, workers=0, shuffle=False,
                                            seed=settings.seed, pin_memory=False)))
    work = workload(settings)
    model = work.build()
    work.train_recipe(model, recipe_inputs(settings, len(dataset)))  # LibreYOLO's formats read the built module
    inputs, target = work.adapter.to_device(model, images, targets, torch.device("cpu"))
    return inputs, target, len(dataset)


def trainer_phases(family: str, size: str, model: str, inputs: Any, targets: Any, images: int
                   ) -> dict[str, Callable[[], None]]:
    from plain_loops import trainer_steps

    if family == "libreyolo":
        return trainer_steps.libreyolo_phases(size, inputs, targets)
    return trainer_steps.ultralytics_phases(model.split(":", 1)[1], inputs, targets, images)


def plain(phases: dict[str, Callable[[], None]], warmup: int, steps: int) -> dict[str, float]:
    for _ in range(warmup):
        for run in phases.values():
            run()
    sums = dict.fromkeys(phases, 0.0)
    for _ in range(steps):
        for name, run in phases.items():
            t0 = time.perf_counter()
            run()
            sums[name] += (time.perf_counter() - t0) * 1000
    return {name: total / steps for name, total in sums.items()}


def grouped(phases: dict[str, float]) -> dict[str, float]:
    out = {g: sum(phases.get(p) or 0.0 for p in members) for g, members in GROUPS.items()}
    out["compute"] = sum(out.values())
    return out


def yoloprof_run(settings: CaptureSettings, out: Path) -> tuple[dict[str, float], dict[str, Any]]:
    prof = yoloprof.capture(settings, out, project=out.parent)
    return ({p["phase"]: p["wall_ms_per_step"] for p in prof.data["phases"] if p.get("wall_ms_per_step") is not None},
            prof.data.get("train_recipe") or {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--imgsz", type=int, default=160)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads of both sides")
    ap.add_argument("--only", default=None, help="run the cases whose label or family contains this")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    tmp = Path(tempfile.mkdtemp(prefix="bench_trainer_step_"))
    print(f"batch {args.batch}, imgsz {args.imgsz}, threads {args.threads}, {args.steps} steps x {args.rounds} rounds")
    print(f"{'case':9} {'figure':9} {'trainer ms':>10} {'yoloprof ms':>11} {'ratio':>6}")
    for label, model, size, family in CASES:
        if args.only and args.only not in label and args.only not in family:
            continue
        settings = _settings(model, size, args.batch, args.imgsz, args.warmup, args.steps, args.threads)
        inputs, targets, images = first_batch(settings)
        theirs, mine, recipe = [], [], {}
        for r in range(args.rounds):  # ABBA: the side that runs first alternates
            for side in (("trainer", "yoloprof") if r % 2 == 0 else ("yoloprof", "trainer")):
                if side == "trainer":
                    theirs.append(grouped(plain(trainer_phases(family, size, model, inputs, targets, images),
                                                args.warmup, args.steps)))
                else:
                    phases, recipe = yoloprof_run(settings, tmp / f"{label}-{r}")
                    mine.append(grouped(phases))
        for fig in (*GROUPS, "compute"):
            a = statistics.median(d[fig] for d in theirs)
            b = statistics.median(d[fig] for d in mine)
            print(f"{label:9} {fig:9} {a:10.2f} {b:11.2f} {b / a:6.3f}")
        paired = [m["compute"] / t["compute"] for t, m in zip(theirs, mine)]
        print(f"{label:9} compute ratio per round (its two runs back to back): "
              + " ".join(f"{x:.3f}" for x in paired) + f"; median {statistics.median(paired):.3f}")
        print(f"{label:9} recipe: {recipe.get('optimizer')} every {recipe.get('optimizer_every')} step(s), "
              f"clip {recipe.get('clip_max_norm')}, ema {recipe.get('ema')}")


if __name__ == "__main__":
    main()
