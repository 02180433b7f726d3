"""Structured-config schemas for the packaged Hydra config (yoloprof/conf).

Why dataclasses in the ConfigStore rather than plain YAML: Hydra then types every key of every
group while it composes, so `amp_dtype=float32`, `size=x` or `batch=two` fail while the sweep is
being composed - before the first job - with the key and the valid values in the message, and an
axis that is not in the config (`bacth=1,2`) is rejected because the schema is a closed struct.
Value rules that a type cannot express (batch >= 1 or -1, imgsz a multiple of 32, device syntax)
are checked per job by `yoloprof.config.compose.validate_job`, through `CaptureSettings.validate`.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, List, Optional

from omegaconf import II, MISSING, OmegaConf

from yoloprof.capture.settings import AMP_DTYPES, MODES, SIZES

SWEEP_ID_ENV = "YOLOPROF_SWEEP_ID"


# The valid values live once, in capture settings; the Hydra schema builds its enums from them so
# that a sweep and the command line reject exactly the same values.
Mode = Enum("Mode", {m: m for m in MODES})
Size = Enum("Size", {s: s for s in SIZES})
AmpDtype = Enum("AmpDtype", {d: d for d in AMP_DTYPES})


# How sweep jobs run (docs/sweeps.md "How jobs are run"); defined here, below the sweep layer.
ISOLATIONS = ("process", "inprocess")        # a fresh worker process per job | the launcher's process
JOB_ORDERS = ("interleave", "as_given")      # trials outermost, configurations alternating | Hydra's
MACHINE_POLICIES = ("wait", "refuse", "shared")  # another timed capture holds the machine: ...
Isolation = Enum("Isolation", {v: v for v in ISOLATIONS})
JobOrder = Enum("JobOrder", {v: v for v in JOB_ORDERS})
MachinePolicy = Enum("MachinePolicy", {v: v for v in MACHINE_POLICIES})


class Correction(Enum):
    holm = "holm"
    bh = "bh"
    none = "none"


@dataclass
class ModeConf:
    """The `mode` group: the defaults a mode implies (DESIGN.md section 2)."""

    name: Mode = MISSING
    batch: int = MISSING
    warmup: int = MISSING
    steps: Optional[int] = None
    runs: Optional[int] = None


@dataclass
class DataConf:
    name: str = "synthetic"
    path: Optional[str] = None
    images: Optional[int] = None


@dataclass
class CaptureConf:
    warmup: int = II("mode.warmup")
    steps: Optional[int] = II("mode.steps")
    runs: Optional[int] = II("mode.runs")
    trace: bool = True
    trace_gzip: bool = False
    modules: bool = True
    python_hotspots: bool = False
    nvtx: bool = False
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    lr: float = 0.01


@dataclass
class AnalysisConf:
    enabled: bool = True
    baseline: List[str] = field(default_factory=list)
    vary: Optional[str] = None
    metrics: List[str] = field(default_factory=list)  # empty = the analysis picks by mode
    alpha: float = 0.05
    noise: float = 0.02
    correction: Correction = Correction.holm
    html: bool = True


@dataclass
class LaunchConf:
    """How the sweep runs its jobs, not what they measure (not part of config_hash)."""

    isolation: Isolation = Isolation.process
    order: JobOrder = JobOrder.interleave
    machine: MachinePolicy = MachinePolicy.wait


@dataclass
class YoloprofConf:
    """The whole job config. `model` stays an open dict: a user's factory takes any kwargs."""

    mode: ModeConf = field(default_factory=ModeConf)
    model: Any = MISSING
    data: DataConf = field(default_factory=DataConf)
    capture: CaptureConf = field(default_factory=CaptureConf)
    analysis: AnalysisConf = field(default_factory=AnalysisConf)
    launch: LaunchConf = field(default_factory=LaunchConf)
    batch: int = II("mode.batch")
    imgsz: int = 640
    amp: Optional[bool] = None
    amp_dtype: AmpDtype = AmpDtype.float16
    device: str = "0"
    repeat: int = 1
    trial: int = 0
    size: Size = Size.n
    workers: int = 8
    weights: str = "none"
    seed: int = 0
    project: str = "runs/profile"
    sweep_name: str = "adhoc"
    # a user's own function to run instead of the built-in capture (sweep/usertask.py): an open
    # dict, `_target_` plus the function's keyword arguments; null = the built-in capture
    task: Any = None


def new_sweep_id() -> str:
    """Timestamp (sortable, readable) + pid + random suffix: two sweeps started in the same
    second - even by one process - never share an id."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}"


def _sweep_id_resolver() -> str:
    """The sweep id, fixed once per sweep: `main` sets the environment variable before Hydra starts,
    so every job - also those a submitit launcher runs in other processes - resolves the same dir."""
    value = os.environ.get(SWEEP_ID_ENV)
    if not value:
        value = os.environ[SWEEP_ID_ENV] = new_sweep_id()
    return value


def register() -> None:
    """Register the schema and resolver (idempotent: tests and sweeps compose many times)."""
    from hydra.core.config_store import ConfigStore

    from yoloprof.config.resources import register_resolvers

    if not OmegaConf.has_resolver("yoloprof_sweep_id"):
        OmegaConf.register_new_resolver("yoloprof_sweep_id", _sweep_id_resolver)
    register_resolvers()
    ConfigStore.instance().store(name="yoloprof_schema", node=YoloprofConf)
