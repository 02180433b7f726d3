"""The capture settings schema: every setting of `yoloprof run`, `yoloprof infer` and a sweep job,
defined once, with its help text, its default(s) and its valid values.

Why one schema: the argparse options (config/cli_args.py), the Hydra structured config
(config/schema.py), the job -> settings translation (config/translate.py) and the docs' table of
keys are all *generated* from the fields below, so a default, a help text or a valid value is typed
once and the command line and a sweep cannot drift apart. A sweep job is exactly the capture the
command line would have run with the same values.

Each field carries `Spec` metadata:
- `help`: the one line shown by `--help` and in docs/sweeps.md;
- `per_mode`: mode-dependent defaults (the `mode` group of the Hydra config);
- `modes`: the commands that have the option (`steps` is training only, `conf` inference only);
- `choices`: valid values, checked by `validate` and typed as an Enum in the Hydra schema;
- `hydra`: where the key lives in the Hydra config: "top" (a swept axis: `batch=1,4`), "capture"
  (`capture.steps=3`), a dotted path into a group (`data.images`), or None (built from a group by
  translate.py: model, data, mode);
- `flag`: the command-line flag (None = not on the command line; "" = the default `--name-with-dashes`);
- `axis`: an `Axis` when the setting is a sweep axis (a typed column of every row, a configuration
  axis of the analysis): config/axes.py derives every table of axes from these (docs/CONTRACTS.md
  "Adding a sweep axis");
- `pooled`: trials of one configuration differ in it (trial, seed): left out of the group hash and
  never a configuration axis;
- `hashed`: "always" (the config hash covers it), or "unless_default" for a setting added after
  results exist: at its default it is left out of the hash, so older configurations keep theirs.

This module imports only the standard library and errors.py: it sits in the lowest layer.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, cast

from yoloprof.config.device_spec import AUTO, DeviceSpec, check_device, parse_device
from yoloprof.defs.json_types import JSON, JSONObject
from yoloprof.config.fields import field_default, flag_name
from yoloprof.config.knobs import COMPILE_MODES, MEMORY_FORMATS, OPTIMIZER_IMPLS, RUNTIMES
from yoloprof.config.steady_thresholds import CAP_EXTRA
from yoloprof.config import postprocess_defaults
from yoloprof.config.model_families import BUILTIN, FACTORY, SIZED, family_of
from yoloprof.errors import UsageError

MODES = ("train", "infer")
SIZES = ("n", "t", "s", "m", "l")
# One honest precision axis: the arithmetic the step runs. float32 = no autocast; float16 and
# bfloat16 = torch.autocast with that dtype; auto = float16 on CUDA, float32 on CPU.
PRECISIONS = ("auto", "float32", "float16", "bfloat16")
# Keys that say where results go (not capture settings): (default, help). `project` is also the
# `--project` option of run/infer.
OUTPUT_KEYS = {"project": ("runs/profile", "output folder"),
               "sweep_name": ("adhoc", "sweep files set their own name; `-m` sweeps are 'adhoc'")}
# How sweep jobs run (docs/sweeps.md "How jobs are run"), below the sweep layer: a fresh worker
# process per job | the launcher's process; trials outermost with configurations alternating |
# Hydra's order; when another timed capture holds the machine: wait, refuse, or share it.
# Enums (each member's name is its value) for the structured config; the tuples for everything else.


class Isolation(Enum):
    process = "process"
    inprocess = "inprocess"


class JobOrder(Enum):
    interleave = "interleave"
    as_given = "as_given"


class MachinePolicy(Enum):
    wait = "wait"
    refuse = "refuse"
    shared = "shared"


ISOLATIONS = tuple(m.value for m in Isolation)
JOB_ORDERS = tuple(m.value for m in JobOrder)
MACHINE_POLICIES = tuple(m.value for m in MachinePolicy)
# Settings whose old names users may still type: the hint names the replacement.
RENAMED = {"amp": "precision", "amp_dtype": "precision", "half": "precision"}
# Spec.hashed: the config hash covers the setting always, or only away from its default.
HASHED = ("always", "unless_default")


@dataclass(frozen=True)
class Axis:
    """How a sweep axis appears outside the settings. Its row column's type follows the field's
    type (str, int, bool, float), its Hydra key the field's `Spec.hydra`."""

    keys: tuple[str, ...] = ()  # other Hydra override keys that set it (`model._target_`)
    # the compared-side fields (metrics/sides.py) it makes differ on purpose; None = its own name
    causes: tuple[str, ...] | None = None
    history: bool = True  # describes a configuration in `history` labels and the gate's matching
    value: Callable[[Any], Any] | None = None  # its row value from the resolved settings; None = the attribute


@dataclass(frozen=True)
class Spec:
    """How one setting appears on the command line and in the Hydra config (see the module doc)."""

    help: str
    per_mode: dict[str, Any] | None = None
    modes: tuple[str, ...] = MODES
    choices: tuple[Any, ...] | None = None
    hydra: str | None = "top"
    flag: str | None = ""
    minimum: int | float | None = None
    axis: Axis | None = None
    pooled: bool = False
    hashed: str = "always"

    def __post_init__(self) -> None:
        if self.hashed not in HASHED:
            raise ValueError(f"Spec.hashed must be one of {', '.join(HASHED)}, not {self.hashed!r}")


def setting(default: Any, help: str, *, kind: type[Spec] = Spec, **spec: Any) -> Any:
    """A dataclass field with its `Spec` (or a schema's own subclass of it, `kind`: see
    config/analysis_settings.py); a mutable default becomes a factory."""
    meta = {"spec": kind(help=help, **spec)}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class CaptureSettings:
    """Everything one capture depends on. Build with `for_mode`, check with `validate`."""

    mode: str = setting("train", "train: time optimizer steps; infer: time pipeline calls",
                        choices=MODES, hydra=None, flag=None, axis=Axis())
    # from Python also a factory callable or an nn.Module instance (copied per trial, never modified)
    model: str = setting("yolo", "'yolo' (built-in detector), a family's model (ultralytics:yolov8n.yaml, "
                         "libreyolo:yolo9, torchvision:resnet18) or an importable factory of an nn.Module, "
                         "e.g. mymodels.Net", hydra=None,
                         axis=Axis(keys=("model._target_", "model.name", "model.cfg", "model.family"),
                                   value=lambda s: model_label(s.model),
                                   causes=("model", "model_args", "model_size", "params")))
    model_kwargs: dict[str, JSON] = setting({}, "keyword arguments of the model's factory or builder, "
                                           "KEY=VALUE, repeatable (sweeps: model.*)",
                                           hydra=None, flag="--model-arg")
    loss: str | None = setting(None, "an importable loss factory (called with model= where it takes it), "
                               "returning fn(outputs, targets); none = the family's own loss (a generic "
                               "reduction of the outputs for a factory)", hydra=None, modes=("train",))
    postprocess: str | None = setting(None, "an importable fn(outputs, [meta, conf, iou, max_det]) timed as "
                                      "the post-process stage; none = the family's own", hydra=None,
                                      modes=("infer",), hashed="unless_default")
    size: str = setting("n", "model size: the built-in detector's (n t s m l) or a family's (LibreYOLO: t s m c "
                        "...); a model with its size in its name (yolov8s.yaml, resnet50) takes none",
                        axis=Axis(value=lambda s: s.size if sized(s.model) else None,
                                  causes=("model_size", "params")))
    weights: str = setting("none", "'none' (seeded random init), a state-dict file, or a checkpoint of the "
                           "model's family")
    data: str | None = setting(None, "train: synthetic | data.yaml | dataset folder; infer: image or "
                               "folder (none = the bundled sample image)",
                               per_mode={"train": "synthetic", "infer": None}, hydra=None, flag=None,
                               axis=Axis(keys=("data.path",), history=False))
    batch: int = setting(1, "batch size; -1 = the largest that fits in ~70% of GPU memory (CUDA only)",
                         per_mode={"train": 16, "infer": 1}, axis=Axis())
    imgsz: int = setting(640, "square input size in pixels (the built-in detector and factories: a multiple of "
                         "32; a family rounds it as its own pipeline does)", minimum=32, axis=Axis())
    workers: int = setting(0, "data-loader worker processes (capped at the CPU count)",
                           per_mode={"train": 8, "infer": 0}, modes=("train",), minimum=0, axis=Axis())
    precision: str = setting("auto", "arithmetic of the step: float32 (no autocast), float16 or bfloat16 "
                             "(torch.autocast); auto = float16 on CUDA, float32 on CPU", choices=PRECISIONS,
                             axis=Axis())
    threads: int = setting(0, "intra-op CPU threads (torch.set_num_threads) during the capture; "
                           "0 = auto: half the usable logical CPUs, at least 1", minimum=0,
                           axis=Axis(history=False))  # history: part of the machine fingerprint
    # the knobs (config/knobs.py KNOBS: what each applies to, how, its one-time cost); added after
    # results existed, so at their defaults they stay out of the config hash
    compile: str = setting("none", "torch.compile mode of the family's network (train and infer); none = eager",
                           choices=COMPILE_MODES, axis=Axis(), hashed="unless_default")
    memory_format: str = setting("contiguous", "memory format of the model and its inputs (inputs converted "
                                 "in the timed to_device / preprocess)", choices=MEMORY_FORMATS, axis=Axis(),
                                 hashed="unless_default")
    runtime: str = setting("eager", "what runs the network at inference (export form, converted once per "
                           "trial; the family's pre- and post-process stay)", choices=RUNTIMES, modes=("infer",),
                           axis=Axis(), hashed="unless_default")
    optimizer_impl: str = setting("default", "torch.optim implementation of the family's optimizer: its "
                                  "default, foreach or fused", choices=OPTIMIZER_IMPLS, modes=("train",),
                                  axis=Axis(), hashed="unless_default")
    warmup: int = setting(0, "untimed iterations before the measured ones, at least: more while step times "
                          "are not steady", per_mode={"train": 5, "infer": 20}, hydra="capture", minimum=0,
                          axis=Axis())
    warmup_max: int = setting(-1, "most warm-up iterations while waiting for steady step times; -1 = auto "
                              f"(warmup + max(measured, {CAP_EXTRA})); = warmup: a fixed warm-up", hydra="capture",
                              minimum=-1)
    steps: int | None = setting(None, "measured training steps per trial", per_mode={"train": 20, "infer": None},
                                modes=("train",), hydra="capture", minimum=1, axis=Axis())
    runs: int | None = setting(None, "measured inference calls per trial", per_mode={"train": None, "infer": 100},
                               modes=("infer",), hydra="capture", minimum=1, axis=Axis())
    repeat: int = setting(1, "timing trials, each kept as one sample", minimum=1, axis=Axis())
    device: str = setting(AUTO, "auto (the first GPU if there is one, else the CPU), cpu, N (a CUDA index), "
                          "cuda or cuda:N", axis=Axis())
    # None = the model family's own value (config/postprocess_defaults.py), a number once resolved
    conf: float | None = setting(None, "NMS confidence threshold; none = the model family's own "
                                 "(yolo 0.25, ssdlite 0.001, ...)", modes=("infer",), hydra="capture")
    iou: float | None = setting(None, "NMS IoU threshold; none = the model family's own (yolo 0.45, "
                                "ultralytics 0.7, ...)", modes=("infer",), hydra="capture")
    max_det: int | None = setting(None, "most detections kept per image; none = the model family's own "
                                  "(yolo 300, faster R-CNN 100, ...)", modes=("infer",), hydra="capture",
                                  minimum=1)
    lr: float = setting(0.01, "learning rate of the built-in detector's and a factory's training step (SGD, momentum 0.9, "
                        "nesterov, no weight decay); families with a trainer use their trainer's optimizer and lr "
                        "(docs/workloads.md)", modes=("train",), hydra="capture")
    trace: bool = setting(True, "also run the torch.profiler trace pass", hydra="capture")
    trace_gzip: bool = setting(False, "write the trace as .json.gz", hydra="capture")
    trace_wait: int = setting(1, "trace pass: steps skipped before the profiler warms up "
                              "(torch.profiler.schedule wait)", hydra="capture", minimum=0)
    trace_warmup: int = setting(1, "trace pass: profiled steps discarded (schedule warmup)",
                                hydra="capture", minimum=0)
    trace_active: int = setting(3, "trace pass: steps recorded and analysed (schedule active)",
                                hydra="capture", minimum=1)
    record_shapes: bool = setting(True, "trace pass: record op input shapes (ops --shapes)", hydra="capture")
    profile_memory: bool = setting(True, "trace pass: record allocator events (per-op memory, CPU peak)",
                                   hydra="capture")
    modules: bool = setting(True, "per-module forward/backward times (hooks, in steps of their own)",
                            hydra="capture")
    python_hotspots: bool = setting(False, "cProfile a few steps of their own: Python functions by "
                                    "self/cumulative time", hydra="capture")
    tensorboard: str | None = setting(None, "also copy the trace to DIR/<output folder>/ under the name "
                                      "TensorBoard's profiler plugin lists", hydra="capture")
    nvtx: bool = setting(False, "NVTX ranges around phases and modules, for Nsight Systems (CUDA only)",
                         hydra="capture")
    num_classes: int = setting(80, "classes of the built-in detector's head", minimum=1)
    synthetic_images: int | None = setting(None, "synthetic data: images generated (none = exactly enough)",
                                           hydra="data.images", flag=None, modes=("train",))
    seed: int = setting(0, "seed of weights, synthetic data and loader order", pooled=True)
    trial: int = setting(0, "sweep axis for interleaved repeats; recorded, does not change the capture",
                         flag=None, minimum=0, axis=Axis(history=False), pooled=True)

    @classmethod
    def for_mode(cls, mode: str, **overrides: object) -> "CaptureSettings":
        """The settings of `mode` with its defaults, then `overrides` (unknown names refused; each
        value is any object until `validate()` checks it against its field: a model may be a module)."""
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
        known = [f.name for f in dataclasses.fields(cls)]  # a subclass's added settings too
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise UsageError("unknown capture setting(s): " + ", ".join(unknown_key_message(k, known)
                                                                         for k in unknown))
        return cls(mode=mode, **{**mode_defaults(mode), **overrides})

    def validate(self) -> "CaptureSettings":
        """Raise UsageError naming the setting and its valid values; return self for chaining."""
        if not isinstance(self.model, str) and not callable(self.model):
            raise UsageError(f"model must be a name, a factory or an nn.Module, not {type(self.model).__name__}")
        if self.model == BUILTIN and self.size not in SIZES:
            raise UsageError(f"{flag_of('size')} {self.size}: the built-in detector's sizes are {', '.join(SIZES)}")
        for f in dataclasses.fields(self):
            if f.name != "model" or isinstance(self.model, str):
                check_value(f.name, getattr(self, f.name), self.mode, f.metadata["spec"])
        count, name = (self.steps, "steps") if self.mode == "train" else (self.runs, "runs")
        if count is None:
            raise UsageError(f"{flag_of(name)} must be >= 1 (got None)")
        if self.warmup_max != -1 and self.warmup_max < self.warmup:
            raise UsageError(f"{flag_of('warmup_max')} must be -1 (auto) or >= {flag_of('warmup')} "
                             f"{self.warmup} (got {self.warmup_max})")
        if self.batch == 0 or self.batch < -1:
            raise UsageError(f"{flag_of('batch')} must be >= 1, or -1 for the largest that fits on a GPU "
                             f"(got {self.batch})")
        if self.imgsz % 32 and family_of(self.model) in (BUILTIN, FACTORY):
            raise UsageError(f"{flag_of('imgsz')} must be a multiple of 32 and >= 32 (got {self.imgsz})")
        if any(v is not None and not 0.0 <= v <= 1.0 for v in (self.conf, self.iou)):
            raise UsageError(f"{flag_of('conf')} and {flag_of('iou')} must be within [0, 1]")
        if self.mode == "train" and self.model == "yolo" and 1 <= self.batch * (self.imgsz // 32) ** 2 < 2:
            # the detector's stride-32 batch norm needs more than one value per channel to train
            raise UsageError(f"training the built-in detector at --batch {self.batch} needs --imgsz >= 64 "
                             f"(got {self.imgsz}): batch norm needs more than one value per channel")
        return self

    @property
    def device_spec(self) -> DeviceSpec:
        return parse_device(self.device)

    @property
    def measured(self) -> int:
        """Measured iterations per trial: steps for training, runs for inference."""
        count = self.steps if self.mode == "train" else self.runs
        assert count is not None, "resolved settings always have a step or run count"
        return int(count)

    def resolved(self) -> "CaptureSettings":
        """The settings as the capture runs them: canonical device (`auto` resolved to this machine's:
        a row and a config hash name the device that ran, so `auto` on a GPU machine hashes as `0`
        did), effective precision and threads. Equal resolved settings are the same capture, so
        hashes and rows use these."""
        spec = self.device_spec
        return dataclasses.replace(self, device=str(spec), precision=effective_precision(self.precision, spec),
                                   threads=effective_threads(self.threads), **self.postprocess_values())

    def postprocess_values(self) -> postprocess_defaults.Values:
        """conf, iou, max_det as they run: the given ones, the model family's own for the rest."""
        return postprocess_defaults.resolve(self.mode, self.model, self.model_kwargs,
                                            {k: getattr(self, k) for k in postprocess_defaults.KEYS})

    @property
    def autocast(self) -> bool:
        """Whether the step runs under torch.autocast (decided once `resolved()`: auto is neither)."""
        return self.precision in ("float16", "bfloat16")

    def to_dict(self) -> JSONObject:
        """JSON-able settings (what profile.json records): a model object is recorded by name."""
        model, self.model = self.model, model_label(self.model)
        try:
            return cast("JSONObject", dataclasses.asdict(self))  # every field is JSON-able but `model`
        finally:
            self.model = model


def sized(model: Any) -> bool:
    """Whether the model's family has sizes (`size` describes it: a row axis, a header field)."""
    return isinstance(model, str) and family_of(model) in SIZED


def model_label(model: Any) -> str:
    """The name a model is recorded under: the string itself, the dotted name of a factory
    (class or function), or of an instance's class (an nn.Module passed from Python)."""
    if isinstance(model, str):
        return model
    obj = model if isinstance(model, type) or inspect.isroutine(model) else type(model)
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(CaptureSettings)}


def spec_of(name: str) -> Spec:
    return FIELDS[name].metadata["spec"]


def flag_of(name: str, spec: Spec | None = None) -> str:
    """The command-line flag of a setting (`max_det` -> `--max-det`); its Hydra key when it has none."""
    return flag_name(name, (spec or spec_of(name)).flag)


def mode_defaults(mode: str) -> dict[str, Any]:
    """The defaults that depend on the mode (DESIGN.md section 2)."""
    return {name: f.metadata["spec"].per_mode[mode] for name, f in FIELDS.items()
            if f.metadata["spec"].per_mode is not None}


def default_of(name: str, mode: str) -> Any:
    spec = spec_of(name)
    if spec.per_mode is not None:
        return spec.per_mode[mode]
    return field_default(FIELDS[name])


def check_value(name: str, value: Any, mode: str, spec: Spec | None = None) -> None:
    """The rules a type cannot express: valid choices, minimums, the device grammar."""
    spec = spec or spec_of(name)
    if spec.choices is not None and value not in spec.choices:
        raise UsageError(f"invalid {name} {value!r}; valid: {', '.join(map(str, spec.choices))}")
    if spec.minimum is not None and value is not None and mode in spec.modes and value < spec.minimum:
        raise UsageError(f"{flag_of(name, spec)} must be >= {spec.minimum} (got {value})")
    if name == "device":
        check_device(value)  # the grammar; `auto` is resolved by `resolved()`, where torch is asked


def effective_precision(precision: str, device: DeviceSpec) -> str:
    """`auto` is float16 on CUDA (what people train with) and float32 on CPU (autocast there is an
    experiment, not the norm); an explicit dtype is kept."""
    if precision == "auto":
        return "float16" if device.is_cuda else "float32"
    return precision


def usable_cpus() -> int | None:
    """The logical CPUs this process may run on (a SLURM allocation or container cpuset), not the
    machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def effective_threads(threads: int, cpu_count: Callable[[], int | None] = usable_cpus) -> int:
    """0 = auto: half the usable logical CPUs, at least 1. torch's own default is the physical core count,
    which on SMT machines is this same half; on machines without SMT (most VMs) it is every CPU,
    and with the host thread, loader workers and the OS competing for them, the intra-op barrier
    waits on a descheduled thread: on a 2-CPU box 2 threads gave bimodal trials 10-50x slower."""
    return threads if threads > 0 else max(1, (cpu_count() or 1) // 2)


def unknown_key_message(key: str, known: Any) -> str:
    """`'bacth' (did you mean 'batch'?)`: the closest known key, or the replacement of a renamed one."""
    leaf = key.rsplit(".", 1)[-1]
    if leaf in RENAMED:
        return f"{key!r} (replaced by {RENAMED[leaf]!r}: {RENAMED[leaf]}={'|'.join(PRECISIONS[1:])})"
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key)
