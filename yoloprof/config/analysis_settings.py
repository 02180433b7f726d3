"""The analysis settings schema: every setting of an analysis (`yoloprof analyze`, the statistics
options of `compare` and `gate`, a sweep's `analysis.*` keys), defined once, with its help text,
default, valid values, flag and Hydra key.

Why one schema: the options of `analyze`, `compare` and `gate` (config/cli_args.py
`add_analysis_arguments`), the Hydra group `analysis` (config/schema.py `AnalysisConf`) and the
manifest's `analysis` record are all generated from the fields below, the same way the capture
settings generate theirs (config/capture_settings.py: the same `setting()` and `Spec`, the generic rules
in config/fields.py). A default, a help text or a valid value is typed once.

`AnalysisSpec` is the capture `Spec` with:
- `modes`: the commands that have the option (`analyze`, `compare`, `gate`);
- `hydra`: "analysis" (the key is `analysis.<name>`), None = not in the Hydra config;
- `above` / `below`: exclusive bounds (`minimum` stays the inclusive one), checked on the command
  line (argparse) and in the sweep's pre-flight alike, with one message;
- `repeat`: a list setting given one value per flag (`--metric a --metric b`); else `--flag a b`;
- `metavar`: the value's name in `--help`.

`AnalysisSettings` holds what decides the comparison tables (recorded in the sweep manifest and
in each analysis' settings.json); `AnalysisOutputs` what an analysis run writes or skips (html,
enabled), which does not change a table. A field added to either appears on the command line and
in the Hydra config without touching another file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from yoloprof.config.fields import (
    field_default,
    flag_name,
    out_of_range,
    spec_fields,
    value_type,
)
from yoloprof.config.capture_settings import Spec, setting
from yoloprof.config.stat_defaults import ALPHA, CORRECTION, CORRECTIONS, NOISE, OUTPUT_TOL
from yoloprof.errors import UsageError

ANALYZE, COMPARE, GATE = "analyze", "compare", "gate"
COMMANDS = (ANALYZE, COMPARE, GATE)  # the commands that take analysis settings (besides `sweep`)
HYDRA_GROUP = "analysis"
# baseline and vary pick the pairs compared in two exclusive ways: giving one drops the other
ONE_OF = ("baseline", "vary")
DEFAULT_NAME = "default"        # the analysis that lives directly in analysis/
MAX_NAME = 80                   # longer derived names are cut and end with a hash of the settings


@dataclass(frozen=True)
class AnalysisSpec(Spec):
    """How one analysis setting appears on the command line and in the Hydra config (module doc)."""

    modes: tuple[str, ...] = (ANALYZE,)
    hydra: str | None = HYDRA_GROUP
    above: float | None = None
    below: float | None = None
    repeat: bool = False
    metavar: str | None = None


def analysis_setting(default: Any, help: str, **spec: Any) -> Any:
    """A dataclass field with its `AnalysisSpec`."""
    return setting(default, help, kind=AnalysisSpec, **spec)


@dataclass(frozen=True)
class AnalysisSettings:
    """Everything that changes an analysis' comparison tables (html does not: it is an output)."""

    baseline: tuple[str, ...] = analysis_setting(
        (), "the baseline configuration(s), as axis=value items; none = the first point of each mode",
        metavar="KEY=VALUE")
    vary: str | None = analysis_setting(
        None, "compare each level of this axis with its first level, within every combination of the "
        "other axes; none = every swept axis", metavar="AXIS")
    metrics: tuple[str, ...] = analysis_setting(
        (), "a metric to compare, repeatable; none = the command's headline metrics (a sweep's by mode, "
        "docs/analysis.md; gate: step_ms)", flag="--metric", repeat=True, modes=COMMANDS, metavar="METRIC")
    alpha: float = analysis_setting(ALPHA, "significance level (the intervals are 1 - alpha)",
                                    above=0.0, below=1.0, modes=COMMANDS)
    noise: float = analysis_setting(NOISE, "noise threshold as a fraction of the baseline (0.02 = 2%)",
                                    minimum=0.0, below=1.0, modes=COMMANDS)
    correction: str = analysis_setting(CORRECTION, "multiple-comparison correction across a sweep's "
                                       "comparisons: holm = family-wise, bh = false discovery rate",
                                       choices=CORRECTIONS)
    # docs/knobs.md "Outputs checked": the comparisons' `outputs` column
    output_tol: float = analysis_setting(OUTPUT_TOL, "largest output_max_rel_diff (a configuration's outputs "
                                         "against eager float32) still called `same` in the outputs column",
                                         minimum=0.0)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None) -> AnalysisSettings:
        """From a manifest record or a Hydra `analysis` node (extra keys such as `enabled` and
        `html` are ignored; "" / [] / null mean "not set")."""
        m = dict(m or {})
        return cls(**{name: convert(cls, name, m.get(name)) for name in spec_fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        return {name: list(v) if isinstance(v, tuple) else v for name, v in dataclasses.asdict(self).items()}

    def validate(self, key: Callable[[str], str] | None = None) -> AnalysisSettings:
        """Raise UsageError naming the setting by `key(name)` (default: its flag; a sweep passes
        `hydra_key`) and its valid values; return self for chaining."""
        key = key or flag_of
        for name in spec_fields(type(self)):
            problem = value_problem(type(self), name, getattr(self, name))
            if problem:
                raise UsageError(f"{key(name)} {problem}")
        if all(getattr(self, name) for name in ONE_OF):
            raise UsageError(f"give either {' or '.join(map(key, ONE_OF))}, not both")
        return self

    def with_given(self, *, auto_baseline: bool = False, **given: Any) -> AnalysisSettings:
        """These settings with the given (non-None, non-empty) values replacing them; one of
        baseline/vary replaces the other, `auto_baseline` drops both."""
        cls = type(self)
        unknown = sorted(set(given) - set(spec_fields(cls)))
        if unknown:
            raise UsageError(f"unknown analysis setting(s): {', '.join(unknown)}")
        out = replace(self, **{n: field_default(spec_fields(cls)[n]) for n in ONE_OF}) if auto_baseline else self
        for name, value in given.items():
            if value is None or (value == "" or value == [] or value == ()):
                continue
            if name in ONE_OF:
                out = replace(out, **{n: field_default(spec_fields(cls)[n]) for n in ONE_OF})
            out = replace(out, **{name: convert(cls, name, value)})
        return out

    def flags(self, recorded: AnalysisSettings) -> list[str]:
        """The command-line flags that turn `recorded` (the sweep's settings) into these."""
        out: list[str] = []
        if self._pair() != recorded._pair():
            given = [name for name in ONE_OF if getattr(self, name)]
            out += _flag_words(type(self), given[0], getattr(self, given[0])) if given else ["--auto-baseline"]
        for name in spec_fields(type(self)):
            if name not in ONE_OF and getattr(self, name) != getattr(recorded, name):
                out += _flag_words(type(self), name, getattr(self, name))
        return out

    def derived_name(self, recorded: AnalysisSettings) -> str:
        """A folder name that says how these settings differ from the recorded ones."""
        parts = []
        if self._pair() != recorded._pair():
            parts.append("baseline-" + "+".join(self.baseline) if self.baseline
                         else f"vary-{self.vary}" if self.vary else "auto-baseline")
        for name in spec_fields(type(self)):
            value = getattr(self, name)
            if name in ONE_OF or value == getattr(recorded, name):
                continue
            if isinstance(value, tuple):
                parts.append(f"{name}-" + "+".join(value) if value else f"default-{name}")
            else:
                parts.append(f"{name}-{_text(value)}")
        name = re.sub(r"[^A-Za-z0-9._=+-]+", "-", "_".join(parts) or DEFAULT_NAME).strip("-.") or "analysis"
        if len(name) > MAX_NAME:
            digest = hashlib.sha1(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
            name = name[:MAX_NAME - 9].rstrip("-._") + "-" + digest
        return name

    def _pair(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in ONE_OF)


@dataclass(frozen=True)
class AnalysisOutputs:
    """What an analysis run writes or skips; not part of its settings (no table changes)."""

    enabled: bool = analysis_setting(True, "run the analysis at the end of the sweep", flag=None, modes=())
    html: bool = analysis_setting(True, "write report.html")


# The schema: the settings class first, then the outputs. The generators read it when called.
SCHEMA: tuple[type[AnalysisSettings], type] = (AnalysisSettings, AnalysisOutputs)
FIELDS: dict[str, dataclasses.Field] = spec_fields(*SCHEMA)


def spec_of(name: str, schema: tuple[type, ...] | None = None) -> AnalysisSpec:
    return spec_fields(*(schema or SCHEMA))[name].metadata["spec"]


def flag_of(name: str) -> str:
    """The command-line flag of a setting (`metrics` -> `--metric`)."""
    return flag_name(name, spec_of(name).flag)


def hydra_key(name: str) -> str:
    """The setting's key in a sweep's config (`analysis.alpha`)."""
    return f"{HYDRA_GROUP}.{name}"


def convert(cls: type, name: str, value: Any) -> Any:
    """A value from a mapping or the command line as the field's type; "" / [] / None = the default."""
    kind = value_type(cls, name)
    if value is None or (isinstance(value, (str, list, tuple)) and not value):
        return field_default(spec_fields(cls)[name])
    if kind is tuple:
        return (str(value),) if isinstance(value, str) else tuple(str(v) for v in value)
    if kind is bool:
        return bool(value)
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"analysis setting {name}: not a {kind.__name__}: {value!r}") from None


def check_analysis(values: Mapping[str, Any] | None) -> AnalysisSettings:
    """A sweep's `analysis` node, checked before its first job; errors name the Hydra key. The
    settings class is SCHEMA's first (read when called)."""
    return SCHEMA[0].from_mapping(values).validate(hydra_key)


def value_problem(cls: type, name: str, value: Any) -> str | None:
    """What is wrong with a value (outside its choices or bounds, not a finite number), or None."""
    spec: AnalysisSpec = spec_fields(cls)[name].metadata["spec"]
    if spec.choices is not None and value not in spec.choices:
        return f"must be one of {', '.join(map(str, spec.choices))}, not {value!r}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if value_type(cls, name) is float and not (number and math.isfinite(value)):
        return f"must be a finite number, not {value!r}"
    problem = out_of_range(value, spec)
    return f"{problem}: {spec.help}" if problem else None


def _flag_words(cls: type, name: str, value: Any) -> list[str]:
    flag = flag_name(name, spec_fields(cls)[name].metadata["spec"].flag)
    if isinstance(value, tuple):
        return [w for v in value for w in (flag, v)] if spec_fields(cls)[name].metadata["spec"].repeat \
            else [flag, *value]
    return [flag, _text(value)]


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
