"""Every table of sweep axes, derived from the capture settings' own fields (config/capture_settings.py).

Why derived: an axis used to be typed in six places (the row schema, the analysis axes and
override keys, the identity columns, the envdiff causes, the history labels and the gate), so
adding one touched six files and they drifted (envdiff still named `amp`). Now a setting is an axis
when its `Spec` carries an `Axis`, and each table below follows from that one declaration
(docs/CONTRACTS.md "Adding a sweep axis"). Each function takes the settings class, so a subclass
with an added field (tests, a user's extension) gets its own tables; the module constants the
other layers import are these functions applied to `CaptureSettings`.

Orders: the row's axis columns are grouped by column type (`KINDS`), each group in field order,
which is the layout existing results.parquet files have; every other table is in field order.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from yoloprof.config.capture_settings import MODES, RENAMED, Axis, CaptureSettings, Spec

# A row column's type, by the field's Python type; the row groups its axis columns in this order.
KINDS = {str: "str", int: "int", bool: "bool", float: "float"}
Settings = type[CaptureSettings]


def specs(cls: Settings = CaptureSettings) -> dict[str, Spec]:
    """Every setting's Spec, in field order (a subclass's added fields last)."""
    return {f.name: f.metadata["spec"] for f in dataclasses.fields(cls)}


def declared(cls: Settings = CaptureSettings) -> dict[str, Axis]:
    """Each sweep axis' declaration, in field order."""
    return {name: spec.axis for name, spec in specs(cls).items() if spec.axis is not None}


def axis_names(cls: Settings = CaptureSettings) -> tuple[str, ...]:
    """The sweep axes, in field order."""
    return tuple(declared(cls))


def kind_of(cls: Settings, name: str) -> str:
    """The column type of an axis from its field's type (`int | None` is int)."""
    hint = typing.get_type_hints(cls)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    if len(args) != 1 or args[0] not in KINDS:
        raise TypeError(f"sweep axis {name!r}: its type {hint} has no row column type; use one of "
                        f"{', '.join(t.__name__ for t in KINDS)}")
    return KINDS[args[0]]


def row_axes(cls: Settings = CaptureSettings) -> tuple[tuple[str, str], ...]:
    """(name, kind) of the row's axis columns: by kind (KINDS order), then field order."""
    order = list(KINDS.values())
    typed = [(name, kind_of(cls, name)) for name in axis_names(cls)]
    return tuple(sorted(typed, key=lambda nk: order.index(nk[1])))  # a stable sort keeps field order


def pooled(cls: Settings = CaptureSettings) -> tuple[str, ...]:
    """Settings that trials of one configuration differ in (trial, seed)."""
    return tuple(name for name, spec in specs(cls).items() if spec.pooled)


def config_axes(cls: Settings = CaptureSettings) -> tuple[str, ...]:
    """The axes that define a configuration (the analysis' axis columns): all but the pooled."""
    return tuple(name for name in axis_names(cls) if not specs(cls)[name].pooled)


def per_mode_axes(cls: Settings = CaptureSettings) -> tuple[str, ...]:
    """Axes whose default follows the mode (steps for training, runs for inference, ...)."""
    return tuple(name for name in config_axes(cls) if specs(cls)[name].per_mode is not None)


def history_axes(cls: Settings = CaptureSettings) -> tuple[str, ...]:
    """Axes that describe a configuration in `history` and that the gate matches, in row order."""
    decl = declared(cls)
    return tuple(name for name, _ in row_axes(cls) if decl[name].history)


def hydra_key(name: str, spec: Spec) -> str | None:
    """Where a setting lives in the Hydra config as an override key (None: built from a group)."""
    if spec.hydra is None:
        return None
    return name if spec.hydra == "top" else f"capture.{name}" if spec.hydra == "capture" else spec.hydra


def override_keys(cls: Settings = CaptureSettings) -> dict[str, str]:
    """Hydra override key -> the axis it sets, for keys spelled unlike the axis (`capture.steps`,
    `model._target_`)."""
    out: dict[str, str] = {}
    spec = specs(cls)
    for name, axis in declared(cls).items():
        key = hydra_key(name, spec[name])
        for k in ((key,) if key is not None and key != name else ()) + axis.keys:
            out[k] = name
    return out


def causes(cls: Settings = CaptureSettings) -> dict[str, tuple[str, ...]]:
    """A compared-side field (metrics/sides.py) -> the axes that make it differ on purpose, with
    the axes' old names (`amp`, `amp_dtype`: an old sweep's swept key) after them."""
    out: dict[str, tuple[str, ...]] = {}
    for name, axis in declared(cls).items():
        old = tuple(k for k, new in RENAMED.items() if new == name)
        for fld in axis.causes if axis.causes is not None else (name,):
            out[fld] = out.get(fld, ()) + old + (name,)
    return out


def row_values(settings: CaptureSettings) -> dict[str, Any]:
    """The axis columns of a row from (resolved) settings, for the settings' own class."""
    return {name: axis.value(settings) if axis.value else getattr(settings, name)
            for name, axis in declared(type(settings)).items()}


def default_value(f: dataclasses.Field, mode: str) -> Any:
    """A field's default in `mode` (its per-mode default, else its dataclass default)."""
    spec = f.metadata["spec"]
    if spec.per_mode is not None:
        return spec.per_mode[mode]
    if f.default is not dataclasses.MISSING:
        return f.default
    factory = f.default_factory
    return factory() if callable(factory) else None


def hashed_values(settings: CaptureSettings) -> dict[str, Any]:
    """The settings as the config hash sees them: `to_dict()` without a setting declared
    `hashed="unless_default"` while it has its default, so configurations from before it existed
    keep their hash."""
    values = settings.to_dict()
    for f in dataclasses.fields(settings):
        if f.metadata["spec"].hashed == "unless_default" and values[f.name] == default_value(f, settings.mode):
            del values[f.name]
    return values


def added_values(config: Mapping[str, Any], mode: str | None,
                 cls: Settings = CaptureSettings) -> dict[str, Any]:
    """Of a recorded config (profile.json's `config`), the `hashed="unless_default"` settings away
    from their default: what another key of a workload (the noise floors') adds, so that keys
    written before such a setting existed stay valid."""
    mode = mode if mode in MODES else MODES[0]
    return {f.name: config[f.name] for f in dataclasses.fields(cls)
            if f.metadata["spec"].hashed == "unless_default" and f.name in config
            and config[f.name] != default_value(f, mode)}
