"""Capture settings: one dataclass shared by `yoloprof run`, `yoloprof infer` and every sweep job,
so that a sweep job is exactly the capture the command line would have run.

Validation lives here (not in argparse or Hydra) so that the CLI and the sweep reject the same
values with the same message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from yoloprof.errors import UsageError

MODES = ("train", "infer")
SIZES = ("n", "t", "s", "m", "l")
AMP_DTYPES = ("float16", "bfloat16")

# Mode-dependent defaults (DESIGN.md section 2): training measures steps, inference measures runs.
MODE_DEFAULTS: dict[str, dict[str, Any]] = {
    "train": {"batch": 16, "warmup": 5, "steps": 20, "runs": None, "data": "synthetic"},
    "infer": {"batch": 1, "warmup": 20, "steps": None, "runs": 100, "data": None},
}


@dataclass
class CaptureSettings:
    mode: str = "train"
    model: str = "yolo"  # "yolo" = built-in detector; else an importable factory "pkg.mod.Factory"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    loss: str | None = None  # user models: importable loss factory; None = generic output reduction
    size: str = "n"
    weights: str = "none"
    data: str | None = "synthetic"  # train: synthetic | data.yaml | dataset dir; infer: image/dir/None
    batch: int = 16
    imgsz: int = 640
    workers: int = 8
    amp: bool | None = None  # None = on for CUDA, off for CPU
    amp_dtype: str = "float16"
    warmup: int = 5
    steps: int | None = 20
    runs: int | None = None
    repeat: int = 1
    device: str = "0"
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    trace: bool = True
    trace_gzip: bool = False
    num_classes: int = 80
    synthetic_images: int | None = None  # None = exactly enough for the run
    seed: int = 0
    lr: float = 0.01
    trial: int = 0  # sweep axis for interleaved repeats; recorded, does not change the capture
    modules: bool = True  # per-module forward/backward times (hooks, steps of their own)
    python_hotspots: bool = False  # cProfile over steps of their own (functions by self/cum time)
    nvtx: bool = False  # NVTX ranges around phases and modules, for Nsight Systems (CUDA only)

    @classmethod
    def for_mode(cls, mode: str, **overrides: Any) -> "CaptureSettings":
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
        base = {k: v for k, v in MODE_DEFAULTS[mode].items()}
        base.update({k: v for k, v in overrides.items() if v is not None or k in ("runs", "steps")})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(base) - known)
        if unknown:
            raise UsageError(f"unknown capture setting(s): {', '.join(unknown)}")
        return cls(mode=mode, **base)

    def validate(self) -> "CaptureSettings":
        """Raise UsageError naming the setting and its valid values; return self for chaining."""
        if self.mode not in MODES:
            raise UsageError(f"unknown mode {self.mode!r}; valid: {', '.join(MODES)}")
        if self.model == "yolo" and self.size not in SIZES:
            raise UsageError(f"unknown size {self.size!r}; valid: {', '.join(SIZES)}")
        if self.amp_dtype not in AMP_DTYPES:
            raise UsageError(f"invalid amp_dtype {self.amp_dtype!r}; valid: {', '.join(AMP_DTYPES)}")
        if self.warmup < 0:
            raise UsageError(f"--warmup must be >= 0 (got {self.warmup})")
        count, name = (self.steps, "--steps") if self.mode == "train" else (self.runs, "--runs")
        if count is None or count < 1:
            raise UsageError(f"{name} must be >= 1 (got {count})")
        if self.repeat < 1:
            raise UsageError(f"--repeat must be >= 1 (got {self.repeat})")
        if self.batch == 0 or self.batch < -1:
            raise UsageError(f"--batch must be >= 1, or -1 for the largest that fits on a GPU (got {self.batch})")
        if self.imgsz < 32 or self.imgsz % 32:
            raise UsageError(f"--imgsz must be a multiple of 32 and >= 32 (got {self.imgsz})")
        if self.workers < 0:
            raise UsageError(f"--workers must be >= 0 (got {self.workers})")
        if not 0.0 <= self.conf <= 1.0 or not 0.0 <= self.iou <= 1.0:
            raise UsageError("--conf and --iou must be within [0, 1]")
        if self.mode == "train" and self.model == "yolo" and 1 <= self.batch * (self.imgsz // 32) ** 2 < 2:
            # the detector's stride-32 batch norm needs more than one value per channel to train
            raise UsageError(f"training the built-in detector at --batch {self.batch} needs --imgsz >= 64 "
                             f"(got {self.imgsz}): batch norm needs more than one value per channel")
        if self.num_classes < 1:
            raise UsageError(f"--num-classes must be >= 1 (got {self.num_classes})")
        if self.max_det < 1:
            raise UsageError(f"--max-det must be >= 1 (got {self.max_det})")
        return self

    @property
    def measured(self) -> int:
        """Measured iterations per trial: steps for training, runs for inference."""
        return int(self.steps if self.mode == "train" else self.runs)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
