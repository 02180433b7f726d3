"""Typed validation of a loaded profile (schema `yoloprof.profile/1.x`, profile.schema.json).

Every reader, the CLI and the public `yoloprof.load()` go through `validate_profile`, so a profile
edited by hand or by a script fails on load with one ProfileError (exit 1) that names the field,
instead of an AttributeError deep inside a reader. It checks what is present: the type of each
section, every number finite, and durations, counts and shares never negative. Sections that are
absent are left to the readers, which explain a missing figure ("n/a" with a reason).

Why not the JSON Schema: jsonschema is a test dependency only (the Schema documents the format and
the tests hold the writers to it); loading stays dependency-free and gives messages in our words.
"""

from __future__ import annotations

import math
from typing import Any

from yoloprof.errors import ProfileError

# Section -> allowed JSON types ("null" = None). Data, not branches.
SECTION_TYPES: dict[str, tuple[str, ...]] = {
    "kind": ("str",), "tool": ("dict",), "created_at": ("str",), "config": ("dict",), "env": ("dict",),
    "metrics": ("dict",), "latency": ("dict", "null"), "stages": ("list", "null"),
    "phases": ("list",), "categories": ("list",), "kernels": ("list",), "ops": ("list",),
    "verdict": ("dict", "null"), "trace": ("dict", "null"), "warnings": ("list",),
    "contention": ("dict", "null"),
}
# List sections whose items are objects, with the key each item is named by in messages.
ROW_SECTIONS = {"phases": "phase", "categories": "category", "kernels": "name", "ops": "name",
                "stages": "stage"}
METRIC_FIELDS: dict[str, tuple[str, ...]] = {
    "value": ("number", "null"), "unit": ("str", "null"), "better": ("str", "null"),
    "samples": ("list", "null"), "std": ("number", "null"), "n": ("int", "null"),
}
BETTER = ("lower", "higher", None)
# A number under one of these keys (or key endings) is a duration, count or share: never negative.
NON_NEGATIVE_KEYS = ("ms", "n", "count", "share", "pct", "steps_analyzed", "window_ms")
NON_NEGATIVE_ENDINGS = ("_ms", "_us", "_per_step", "_pct", "_cores")
# Sections whose numbers are only checked for finiteness (the verdict's evidence holds differences).
SIGNED_SECTIONS = ("verdict",)
NON_NEGATIVE_UNITS = ("%", "MiB", "MB", "count", "img/s", "GFLOP", "TFLOP/s", "1/s")
NON_NEGATIVE_NAMES = ("_pct", "_mb", "_per_step", "_per_s", "_kernels", "_ops", "orphan_kernels")
# A duration above this (about 31 years, in ms) is a corrupt number, not a measurement.
MAX_MS = 1e12

_PY_TYPES = {"str": str, "dict": dict, "list": list}
_JSON_NAMES: dict[type, str] = {str: "str", dict: "object", list: "array"}


def _type_name(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float"
    return _JSON_NAMES.get(type(x), type(x).__name__)


def _is(x: Any, kind: str) -> bool:
    if kind == "null":
        return x is None
    if kind == "number":
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    if kind == "int":
        return isinstance(x, int) and not isinstance(x, bool)
    return isinstance(x, _PY_TYPES[kind])


def _fail(source: str, field: str, what: str) -> None:
    raise ProfileError(f"{source}: field '{field}' {what}")


def _check_type(source: str, field: str, x: Any, kinds: tuple[str, ...]) -> None:
    if not any(_is(x, k) for k in kinds):
        shown = " or ".join("an object" if k == "dict" else "a list" if k == "list" else
                            "a string" if k == "str" else k for k in kinds)
        _fail(source, field, f"must be {shown}, not {_type_name(x)}")


def _check_number(source: str, field: str, x: Any, signed: bool = False) -> None:
    """Finite; non-negative for durations/counts/shares; durations below MAX_MS."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return
    if not math.isfinite(x):
        _fail(source, field, f"is not a finite number ({x})")
    leaf = field.rsplit(".", 1)[-1].split("[", 1)[0]
    if signed:
        return
    if x < 0 and (leaf in NON_NEGATIVE_KEYS or leaf.endswith(NON_NEGATIVE_ENDINGS)):
        _fail(source, field, f"is negative ({x}); durations, counts and shares cannot be")
    if ("_ms" in leaf or leaf == "ms") and x > MAX_MS:
        _fail(source, field, f"is an impossible duration ({x} ms)")


def _check_tree(source: str, field: str, x: Any, signed: bool, depth: int = 0) -> None:
    """Every number under `x` finite (and within its key's range)."""
    if depth > 32:
        _fail(source, field, "is nested too deeply")
    if isinstance(x, dict):
        for k, v in x.items():
            _check_tree(source, f"{field}.{k}", v, signed, depth + 1)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _check_tree(source, f"{field}[{i}]", v, signed, depth + 1)
    else:
        _check_number(source, field, x, signed)


def _check_metric(source: str, name: str, entry: Any) -> None:
    field = f"metrics.{name}"
    _check_type(source, field, entry, ("dict",))
    for key, kinds in METRIC_FIELDS.items():
        if key in entry:
            _check_type(source, f"{field}.{key}", entry[key], kinds)
    if entry.get("better") not in BETTER:
        _fail(source, f"{field}.better", f"must be 'lower', 'higher' or null, not {entry['better']!r}")
    for i, s in enumerate(entry.get("samples") or []):
        _check_type(source, f"{field}.samples[{i}]", s, ("number",))
    unit = entry.get("unit")
    duration = unit in ("ms", "us") or name.endswith(("_ms", "_us"))
    non_negative = duration or unit in NON_NEGATIVE_UNITS or name.endswith(NON_NEGATIVE_NAMES)
    numbers = [("value", entry.get("value")), ("std", entry.get("std"))]
    numbers += [(f"samples[{i}]", s) for i, s in enumerate(entry.get("samples") or [])]
    for key, x in numbers:
        if not _is(x, "number"):
            continue
        if not math.isfinite(x):
            _fail(source, f"{field}.{key}", f"is not a finite number ({x})")
        if non_negative and x < 0:
            _fail(source, f"{field}.{key}", f"is negative ({x}); a {unit or 'duration/count'} cannot be")
        if duration and x * (1e-3 if unit == "us" else 1.0) > MAX_MS:
            _fail(source, f"{field}.{key}", f"is an impossible duration ({x} {unit or 'ms'})")


# config.warmup_used (docs/steady-state.md): key -> (type of the value or of each list item, list?)
WARMUP_FIELDS: dict[str, tuple[tuple[str, ...], bool]] = {
    "steps": (("int",), True), "steady": (("bool", "null"), True), "min": (("int",), False),
    "max": (("int",), False), "window": (("int",), False)}


def _check_warmup(source: str, used: Any) -> None:
    """`config.warmup_used`: the readers' and the row's only reading of config, so typed here."""
    field = "config.warmup_used"
    _check_type(source, field, used, ("dict",))
    for key, (kinds, listed) in WARMUP_FIELDS.items():
        if key not in used:
            continue
        values = used[key]
        if listed:
            _check_type(source, f"{field}.{key}", values, ("list",))
        for i, x in enumerate(values if listed else [values]):
            name = f"{field}.{key}[{i}]" if listed else f"{field}.{key}"
            if not any(isinstance(x, bool) if k == "bool" else _is(x, k) for k in kinds):
                _fail(source, name, f"must be {' or '.join(kinds)}, not {_type_name(x)}")
            if isinstance(x, int) and not isinstance(x, bool) and x < 0:
                _fail(source, name, f"is negative ({x}); a count of steps cannot be")


def validate_profile(obj: dict[str, Any], source: str) -> None:
    """Raise ProfileError naming the first field whose type or value is wrong."""
    for section, kinds in SECTION_TYPES.items():
        if section in obj:
            _check_type(source, section, obj[section], kinds)
    if isinstance(obj.get("config"), dict) and "warmup_used" in obj["config"]:
        _check_warmup(source, obj["config"]["warmup_used"])
    for name, entry in (obj.get("metrics") or {}).items():
        _check_metric(source, name, entry)
    for section, key in ROW_SECTIONS.items():
        for i, row in enumerate(obj.get(section) or []):
            _check_type(source, f"{section}[{i}]", row, ("dict",))
            label = row.get(key)
            if key in row and not isinstance(label, str) and not (section != "stages" and label is None):
                _fail(source, f"{section}[{i}].{key}", f"must be a string, not {_type_name(label)}")
    for i, w in enumerate(obj.get("warnings") or []):
        _check_type(source, f"warnings[{i}]", w, ("str",))
    for section in ("latency", "stages", "phases", "categories", "kernels", "ops", "trace", "verdict"):
        if obj.get(section) is not None:
            _check_tree(source, section, obj[section], section in SIGNED_SECTIONS)
