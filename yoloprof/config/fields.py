"""What a settings schema's fields generate, whichever schema (capture or analysis).

Why a module of its own: `CaptureSettings` (config/capture_settings.py) and `AnalysisSettings`
(config/analysis_settings.py) are both dataclasses whose fields carry `Spec` metadata, and the
command-line options (config/cli_args.py) and the Hydra structured config (config/schema.py) are
generated from them by the same rules: a flag is `--name-with-dashes` unless the spec names one,
the type argparse converts with is the field's hint without `None`, a list setting is a `List`
in Hydra. Spelling those rules once keeps the two schemas from drifting into two mechanisms.

Standard library only (the lowest layer).
"""

from __future__ import annotations

import math
import typing
from enum import Enum
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # imported where used: a reader's start needs only flag_name (dataclasses: 10 ms)
    import dataclasses


def spec_fields(*schemas: type) -> dict[str, dataclasses.Field]:
    """The fields of one or more schema dataclasses, in order, by name."""
    import dataclasses

    return {f.name: f for cls in schemas for f in dataclasses.fields(cls)}


def flag_name(name: str, flag: str | None) -> str:
    """A setting's command-line flag: `""` = the default `--name-with-dashes`; None = not on the
    command line (its own name is returned, for messages)."""
    return "--" + name.replace("_", "-") if flag == "" else flag or name


def flag_dest(name: str, flag: str | None) -> str:
    """The attribute argparse stores the option under (derived from the flag, as argparse does)."""
    return flag_name(name, flag)[2:].replace("-", "_") if flag is not None else name


def field_default(f: dataclasses.Field) -> Any:
    """A field's default, calling its factory."""
    import dataclasses

    return f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[operator]  # the factory exists when there is no default


def value_type(cls: type, name: str) -> Any:
    """The field's type without `None` (int for `int | None`); `tuple` for `tuple[str, ...]`, `dict`
    for `dict[str, X]`."""
    hint = typing.get_type_hints(cls)[name]
    if typing.get_origin(hint) in (tuple, dict):
        return typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


def item_type(cls: type, name: str) -> Any:
    """The element type of a `tuple[X, ...]` field."""
    return typing.get_args(typing.get_type_hints(cls)[name])[0]


def hydra_type(cls: type, name: str, enums: dict[str, type[Enum]]) -> Any:
    """OmegaConf's spelling of the field's type: Enum for choices, Optional[...] for `X | None`,
    List[X] for `tuple[X, ...]`."""
    if name in enums:
        return enums[name]
    hint = typing.get_type_hints(cls)[name]
    if typing.get_origin(hint) is tuple:
        return list[item_type(cls, name)]  # type: ignore[misc]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return Optional[args[0]] if args else hint  # noqa: UP045 - the spelling the capture schema has always had


def interval(spec: Any) -> str | None:
    """The spec's bounds as text (`(0, 1)`, `[0, 1)`, `>= 1`), or None without any: `minimum` is
    inclusive, `above` and `below` exclusive."""
    above, low, high = getattr(spec, "above", None), getattr(spec, "minimum", None), getattr(spec, "below", None)
    if above is None and low is None and high is None:
        return None
    if high is None:
        return f"> {above:g}" if above is not None else f">= {low:g}"
    left = f"({above:g}" if above is not None else f"[{low:g}" if low is not None else "(-inf"
    return f"{left}, {high:g})"


def out_of_range(value: Any, spec: Any) -> str | None:
    """Why a number is outside the spec's bounds, as `in (0, 1), not 2.0` or `>= 1, not 0`;
    None when it is inside (or there are no bounds)."""
    bounds = interval(spec)
    if bounds is None or value is None:
        return None
    above, low, high = getattr(spec, "above", None), getattr(spec, "minimum", None), getattr(spec, "below", None)
    finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if finite and (above is None or value > above) and (low is None or value >= low) and \
            (high is None or value < high):
        return None
    return f"must be {'in ' if high is not None else ''}{bounds}, not {value}"
