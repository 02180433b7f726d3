"""The arguments of `yoloprof tune` and their translation into a tune run (sweep/tune.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from yoloprof.errors import UsageError
from yoloprof.sweep import tune_knobs



def add_tune_arguments(p: argparse.ArgumentParser) -> None:
    from yoloprof.config.capture_settings import MODES, OUTPUT_KEYS
    from yoloprof.config.device_spec import AUTO

    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="Hydra overrides given to every sweep (e.g. size=n capture.steps=5)")
    p.add_argument("--model", default="yolo", help="a family's model as run/infer name it (ultralytics:yolov8n.yaml, "
                   "libreyolo:yolo9 with size=t, torchvision:resnet18) or a model config (conf/model/<name>.yaml "
                   "or your --config-dir's); default: %(default)s")
    p.add_argument("--mode", choices=MODES, default="train", help="default: %(default)s")
    p.add_argument("--device", default=AUTO, help="default: %(default)s (the first GPU if there is one, else the CPU)")
    p.add_argument("--batch", type=int, default=None, help="default: the mode's")
    p.add_argument("--imgsz", type=int, default=None, help="default: the mode's")
    p.add_argument("--threads", type=int, default=0, help="the baseline's intra-op threads (0 = auto)")
    p.add_argument("--budget", type=float, default=tune_knobs.DEFAULT_BUDGET_S, metavar="SECONDS",
                   help="wall-clock budget shared by the sweeps (default: %(default)g)")
    p.add_argument("--knobs", default=None, metavar="K1,K2",
                   help=f"knobs to try (default: all that apply): {','.join(tune_knobs.DEFAULT_ORDER)}")
    p.add_argument("--metric", default="step_ms", help="the row metric each comparison decides on "
                   "(default: %(default)s)")
    p.add_argument("--from", dest="profile_from", default=None, metavar="PROFILE",
                   help="try first the knobs this profile's advice names")
    p.add_argument("--project", default=OUTPUT_KEYS["project"][0], help="results go to PROJECT/tune/<id> "
                   "(default: %(default)s)")
    p.add_argument("--config-dir", default=None, help="your Hydra config dir (models, data)")
    p.add_argument("--resume", default=None, metavar="DIR", help="go on with a stopped tune run")


def advised_knobs(path: str) -> list[str]:
    """The knobs the advice of a profile names, in the advice's order."""
    from yoloprof.readers.advice import knobs_of, recommendations
    from yoloprof.readers.load import load_any

    return knobs_of(recommendations(load_any(path))["recommendations"])


# keys tune sets on every sweep it runs: a user's value would change what it measures
SET_BY_TUNE = ("trial", "hydra.sweep.dir", "hydra.run.dir", "hydra.sweep.subdir", "analysis.vary",
               "analysis.baseline", "adaptive.budget_s", "adaptive.metric", "sweep_name", "sweep")


def check_overrides(overrides: list[str], knobs: list[str]) -> None:
    """One workload, its knobs left to tune: refuse what would make the sweeps something else."""
    for item in overrides:
        key, sep, value = item.lstrip("+~").partition("=")
        if not sep:
            raise UsageError(f"overrides take KEY=VALUE, not {item!r}")
        if key in SET_BY_TUNE or key in knobs:
            flag = {"adaptive.metric": " (use --metric)", "adaptive.budget_s": " (use --budget)"}.get(key, "")
            raise UsageError(f"{key} is set by yoloprof tune{flag}; the knobs it tries: {', '.join(knobs)}")
        if "," in value and not value.startswith(("[", "{")):
            raise UsageError(f"{item}: tune runs one workload; give one value per key (sweep the workload "
                             "with yoloprof sweep and best.yaml)")


def run_from_args(args: argparse.Namespace, resume: Path | None) -> int:
    from yoloprof.config.device_spec import parse_device
    from yoloprof.sweep.tune import TuneSettings, run_tune

    given = [o.split("=", 1)[1] for o in args.overrides if o.startswith("resume=")]  # as `yoloprof sweep resume=DIR`
    if given:
        if resume is not None or len(given) > 1 or len(args.overrides) > 1:
            raise UsageError("resume=DIR (or --resume DIR) takes nothing else: the run's settings are in its tune.json")
        resume = Path(given[0])
    if resume is not None:
        return run_tune(None, resume)
    if args.budget <= 0:
        raise UsageError(f"--budget must be > 0 (got {args.budget:g})")
    knobs = tune_knobs.parse_knobs(args.knobs)
    check_overrides(list(args.overrides), knobs)
    advised = advised_knobs(args.profile_from) if args.profile_from else []
    # `auto` decided once, here: the levels' checks and every sweep name the device that runs
    s = TuneSettings(model=args.model, mode=args.mode, device=str(parse_device(args.device, flag="--device")),
                     batch=args.batch, imgsz=args.imgsz,
                     budget_s=args.budget, knobs=knobs, project=args.project,
                     threads=args.threads, overrides=list(args.overrides), config_dir=args.config_dir,
                     metric=args.metric, advised=advised)
    return run_tune(s)
