"""The Hydra structured config, generated from the capture settings schema (config/capture_settings.py).

Why dataclasses in the ConfigStore rather than plain YAML: Hydra then types every key of every
group while it composes, so `precision=float8`, `size=x` or `batch=two` fail while the sweep is
being composed - before the first job - with the key and the valid values in the message, and an
axis that is not in the config (`bacth=1,2`) is rejected because the schema is a closed struct.
Why generated: each default, type and valid value is taken from `CaptureSettings`'s fields, so the
sweep and the command line cannot drift. The `mode` group (the defaults a mode implies) is stored
here too, from the same fields' `per_mode` values; the packaged YAML files restate no default.
Value rules a type cannot express (batch >= 1 or -1, imgsz a multiple of 32, the device grammar)
are checked per job by `CaptureSettings.validate` (config/translate.py), before the first job.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from dataclasses import dataclass, field, make_dataclass
from functools import partial
from enum import Enum
from typing import Any, Optional

from omegaconf import II, MISSING, OmegaConf

from yoloprof.config.paths import sweeps_dir
from yoloprof.config.capture_settings import (FIELDS, Isolation, JobOrder, MachinePolicy, MODES, OUTPUT_KEYS,
                                      CaptureSettings, default_of, spec_of)
from yoloprof.config import analysis_settings
from yoloprof.config.fields import field_default, hydra_type, spec_fields

SWEEP_ID_ENV = "YOLOPROF_SWEEP_ID"


# How sweep jobs run: the Enums and their value tuples live in config/capture_settings.py (the sweep layer
# imports the tuples without loading Hydra).


@dataclass
class LaunchConf:
    """How the sweep runs its jobs, not what they measure (not part of config_hash)."""

    isolation: Isolation = Isolation.process
    order: JobOrder = JobOrder.interleave
    machine: MachinePolicy = MachinePolicy.wait


@dataclass
class SearchConf:
    """What a search sweeper (`hydra/sweeper=optuna`) optimises (sweep/search.py): each job returns
    `metric`'s value to the sampler, or counts as a failed trial when the job failed, has no value,
    or its peak memory is above `max_peak_mem_mib`. Grid sweeps ignore it."""

    metric: Optional[str] = None  # a row column, e.g. img_per_s (with hydra.sweeper.direction)
    max_peak_mem_mib: Optional[float] = None  # the memory cap: peak_mem_mb above it is infeasible


@dataclass
class AdaptiveConf:
    """How a `trial=auto` sweep decides (sweep/adaptive.py, docs/sweeps.md "Adaptive trials"):
    rounds of one new job (one fresh process, one replicate) per configuration still undecided
    against its baseline, until each comparison of `metric` is improved, regressed or equivalent
    under the group-sequential rule of metrics/sequential.py, or the budget ends. Not part of
    config_hash: it decides how many trials run, not what one trial measures."""

    # wall seconds for the whole sweep; a round that would end past it is not started (None: no
    # limit but max_trials)
    budget_s: Optional[float] = None
    # most trials (processes) per configuration; the rule's last look is at this many, so it sets
    # how alpha is spent across looks, and thus the design: not only a cap. None: the processes per
    # side that detect a change of the noise band where a noise floor is known, within budget_s;
    # else 12 (sweep/adaptive.py)
    max_trials: Optional[int] = None
    # trials of every configuration in the first round (the first look; at least 2 for a variance)
    min_trials: int = 3
    # the row metric each comparison decides on (its direction from the metric registry)
    metric: str = "step_ms"
    # most contended jobs (other processes' CPU above CONTENDED_CORES while they ran) replaced per
    # configuration; they are kept but never used. None: as many as max_trials; 0: none
    # (sweep/adaptive_values.py)
    replace_contended: Optional[int] = None


@dataclass
class DataConf:
    """The `data` group: `synthetic` (generated) or `yolo` (a data.yaml, dataset or image folder)."""

    name: str = "synthetic"
    path: Optional[str] = None
    images: Optional[int] = default_of("synthetic_images", "train")


def _enum(name: str, values: tuple[Any, ...]) -> type[Enum]:
    return Enum(name.title().replace("_", ""), {str(v): v for v in values})  # type: ignore[return-value]


ENUMS: dict[str, type[Enum]] = {name: _enum(name, f.metadata["spec"].choices)
                                for name, f in FIELDS.items() if f.metadata["spec"].choices}


def _hydra_type(name: str) -> Any:
    """OmegaConf's spelling of the field's type: Enum for choices, Optional[...] for `X | None`."""
    return hydra_type(CaptureSettings, name, ENUMS)


def _hydra_default(name: str) -> Any:
    """A mode-dependent default interpolates the mode group; an enum default is its member."""
    if spec_of(name).per_mode is not None:
        return II(f"mode.{name}")
    value = default_of(name, MODES[0])
    return ENUMS[name](value) if name in ENUMS else value


def _fields(where: str) -> list[tuple[str, Any, Any]]:
    return [(name, _hydra_type(name), field(default=_hydra_default(name)))
            for name in FIELDS if spec_of(name).hydra == where]


def _mode_conf() -> type:
    per_mode = [name for name in FIELDS if spec_of(name).per_mode is not None and spec_of(name).hydra]
    return make_dataclass("ModeConf", [("name", ENUMS["mode"], field(default=MISSING))]
                          + [(name, _hydra_type(name), field(default=MISSING)) for name in per_mode])


def analysis_conf(schema: tuple[type, ...] | None = None) -> type:
    """The `analysis` node, generated from the analysis settings schema (config/analysis_settings.py
    SCHEMA, read when called): one key per field whose spec says `hydra="analysis"`, typed and
    defaulted as there."""
    out: list[tuple[str, Any, Any]] = []
    for cls in schema or analysis_settings.SCHEMA:
        for f in dataclasses.fields(cls):
            spec = f.metadata["spec"]
            if spec.hydra != analysis_settings.HYDRA_GROUP:
                continue
            value = field_default(f)
            if spec.choices:
                enum = ANALYSIS_ENUMS.get(f.name) or _enum(f.name, spec.choices)
                out.append((f.name, enum, field(default=enum(value))))
            elif isinstance(value, tuple):
                out.append((f.name, hydra_type(cls, f.name, {}), field(default_factory=partial(list, value))))
            else:
                out.append((f.name, hydra_type(cls, f.name, {}), field(default=value)))
    return make_dataclass("AnalysisConf", out)


# the analysis' enums are module attributes (`Correction`), so a pickled config finds them by name
ANALYSIS_ENUMS: dict[str, type[Enum]] = {name: _enum(name, f.metadata["spec"].choices)
                                         for name, f in spec_fields(*analysis_settings.SCHEMA).items()
                                         if f.metadata["spec"].choices}
globals().update({enum.__name__: enum for enum in ANALYSIS_ENUMS.values()})
ModeConf = _mode_conf()
CaptureConf = make_dataclass("CaptureConf", _fields("capture"))
AnalysisConf = analysis_conf()
YoloprofConf = make_dataclass("YoloprofConf", [
    ("mode", ModeConf, field(default_factory=ModeConf)),
    ("model", Any, field(default=MISSING)),  # an open dict: a user's factory takes any kwargs
    ("data", DataConf, field(default_factory=DataConf)),
    ("capture", CaptureConf, field(default_factory=CaptureConf)),
    ("analysis", AnalysisConf, field(default_factory=AnalysisConf)),
    ("launch", LaunchConf, field(default_factory=LaunchConf)),
    ("search", SearchConf, field(default_factory=SearchConf)),
    ("adaptive", AdaptiveConf, field(default_factory=AdaptiveConf)),
    # a user's own function to run instead of the built-in capture (sweep/usertask.py): an open
    # dict, `_target_` plus the function's keyword arguments; None = the built-in capture
    ("task", Any, field(default=None)),
    *_fields("top"),
    *[(key, str, field(default=value)) for key, (value, _) in OUTPUT_KEYS.items()],
])


# make_dataclass names its classes as if they lived in `types`; say where they really live, so that
# pickles (submitit ships each job's config to the job and its result back) refer to these classes
# by name instead of rebuilding copies whose `dataclasses.MISSING` defaults are no longer the
# singleton - which broke every later composition in the launching process.
for _cls in (ModeConf, CaptureConf, AnalysisConf, YoloprofConf):
    _cls.__module__ = __name__


def mode_node(mode: str) -> Any:
    """The `mode=<mode>` option: its name and the defaults it implies."""
    values = {f.name: default_of(f.name, mode) for f in dataclasses.fields(ModeConf) if f.name != "name"}
    return ModeConf(name=ENUMS["mode"](mode), **values)


def known_keys() -> list[str]:
    """Every dotted key of the schema (for 'did you mean' hints); `model.*` is open."""
    out: list[str] = []

    def walk(cls: type, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(f.type) and isinstance(f.type, type):
                walk(f.type, f"{prefix}{f.name}.")
            else:
                out.append(prefix + f.name)
    walk(YoloprofConf, "")
    return out


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
    """Register the schema, the mode group and the resolver (idempotent: tests and sweeps compose
    many times)."""
    from hydra.core.config_store import ConfigStore

    from yoloprof.config.resources import register_resolvers

    if not OmegaConf.has_resolver("yoloprof_sweep_id"):
        OmegaConf.register_new_resolver("yoloprof_sweep_id", _sweep_id_resolver)
    register_resolvers()
    store = ConfigStore.instance()
    store.store(name="yoloprof_schema", node=YoloprofConf)
    for mode in MODES:
        store.store(group="mode", name=mode, node=mode_node(mode))
    register_sweeps(store)


def register_sweeps(store: Any) -> None:
    """The experiment files of `sweeps/` as the `sweep` group (package `_global_`, as their header
    says). Why the ConfigStore: the files live beside `conf/`, not inside it, so no file search path
    root holds them under a folder named `sweep`; a user's `--config-dir` may still add a `sweep/`."""
    for path in sorted(sweeps_dir().glob("*.yaml")):
        store.store(group="sweep", name=path.stem, node=OmegaConf.load(path), package="_global_")
