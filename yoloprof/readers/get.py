"""`yoloprof get`: one figure of a profile, for shell loops (`$(yoloprof get p.json img_per_s)`).

Fields are the metric names (`step_ms`, `img_per_s`, ...) plus dotted paths into the scalar
sections (`latency.p99_ms`, `verdict.bound`, `model.params_total`, `config.batch`, `env.torch`,
`trace.steps_analyzed`, `contention.other_cores`), and libreyolo's metric names (`gpu_util`,
`latency_p50_ms`, `nms_ms`, `throughput_img_s`, `bound`, ...: `readers.libreyolo.ALIASES`) as
aliases of yoloprof's fields; every other name of libreyolo's metrics block through
`readers.libreyolo_names`. `env.captured_at` answers on every input (`profiles.captured`). An
unknown field's error lists at most ten close names.
This module is on the fast path: it imports nothing heavy (DESIGN.md section 2).
"""

from __future__ import annotations

from typing import Any, Iterator

from yoloprof.errors import UsageError
from yoloprof.defs import metrics as registry
from yoloprof.readers._common import HEADLINE, KNOWN_METRICS, finite, na_reason
from yoloprof.profiles.captured import CAPTURED_AT, capture_time
from yoloprof.readers.libreyolo import ALIASES
from yoloprof.readers.libreyolo_names import names as libreyolo_names
from yoloprof.readers.libreyolo_names import resolve as resolve_libreyolo

# Sections whose scalar leaves are fields, as dotted paths. Order = listing order.
DOTTED_SECTIONS = ("latency", "verdict", "trace", "model", "config", "env", "contention", "tool")
TOP_LEVEL = ("kind", "schema", "created_at")
_SKIP = {("trace", "per_step")}  # per-step rows are tables, not scalars
MAX_SUGGESTIONS = 10  # close names an unknown field's error lists (never every field)


def _leaves(prefix: str, obj: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Dotted paths of the scalar (or short list) leaves under `obj`."""
    if isinstance(obj, dict) and depth < 4:
        for key, val in obj.items():
            if (prefix, key) in _SKIP:
                continue
            yield from _leaves(f"{prefix}.{key}", val, depth + 1)
    elif not isinstance(obj, dict):
        yield prefix, obj


def list_fields(profile: dict) -> list[dict[str, Any]]:
    """Every field `get` accepts for this profile, with its value (and unit for metrics)."""
    rows: list[dict[str, Any]] = []
    for name, entry in sorted((profile.get("metrics") or {}).items()):
        if isinstance(entry, dict):
            rows.append(_metric_row(profile, name, entry))
    for key in TOP_LEVEL:
        if key in profile:
            rows.append({"field": key, "value": profile[key], "unit": ""})
    for section in DOTTED_SECTIONS:
        for path, val in _leaves(section, profile.get(section)):
            if path != section:  # an absent/null section has no fields
                rows.append({"field": path, "value": val, "unit": _path_unit(path)})
    return rows


def _metric_row(profile: dict, name: str, entry: dict) -> dict[str, Any]:
    value = finite(entry.get("value"))
    row = {"field": name, "value": value, "unit": entry.get("unit", ""),
           "n": entry.get("n"), "std": finite(entry.get("std")), "samples": entry.get("samples")}
    if value is None:
        row["na"] = na_reason(profile, name)
    return row


def _alias(profile: dict, alias: str) -> dict[str, Any]:
    """A libreyolo metric name (`readers.libreyolo.ALIASES`): the yoloprof field's row, its value
    scaled to libreyolo's unit (gpu_util: a fraction of 1, where device_util_pct is a percentage)."""
    target, factor = ALIASES[alias]
    row = dict(compute_get(profile, target))
    value = finite(row.get("value"))
    if factor != 1.0 and value is not None:
        row["value"] = value * factor
        row["unit"] = "fraction" if target.endswith("_pct") else registry.unit(alias)
        row["samples"] = [v * factor for v in row.get("samples") or []]
        row["std"] = None if finite(row.get("std")) is None else row["std"] * factor
    row.update(field=alias, alias_of=target)
    by = (profile.get("verdict") or {}).get("source")
    if target.startswith("verdict.") and by and by != "yoloprof":  # libreyolo's verdict, passed through
        row["source"] = by
    return row


def _sharing_a_word(field: str, names: list[str]) -> list[str]:
    """Names sharing a word of 3+ letters with `field` (`gpu_utilisation` -> device_util_pct)."""
    words = {w for w in field.lower().replace(".", "_").split("_") if len(w) >= 3 and w != "per"}
    hits = [n for n in dict.fromkeys(names)
            if words & {w for w in n.lower().replace(".", "_").split("_") if len(w) >= 3}]
    return sorted(hits, key=len)


def _path_unit(path: str) -> str:
    """The unit of a dotted field (`latency.p50_ms`), by the registry's name families."""
    return registry.unit(path.rsplit(".", 1)[-1])


def compute_get(profile: dict, field: str | None) -> dict[str, Any]:
    """One field's value (`{"field", "value", "unit", ...}`), or the list of fields when `field`
    is None. An unknown field is a usage error (exit 2) that lists the valid ones."""
    fields = list_fields(profile)
    if field is None:
        return {"fields": fields}
    if field == CAPTURED_AT:  # on every input: a yoloprof capture's time, or a trace's own
        value, why = capture_time(profile)
        return {"field": field, "value": value, "unit": "", **({} if value else {"na": why})}
    for row in fields:
        if row["field"] == field:
            return row
    # `metrics.step_ms` is accepted as a spelling of `step_ms`.
    bare = field[len("metrics."):] if field.startswith("metrics.") else field
    if bare != field and bare in (profile.get("metrics") or {}):
        return compute_get(profile, bare)
    if bare in ALIASES:  # libreyolo's name: yoloprof's figure, in libreyolo's unit
        return _alias(profile, bare)
    if bare in KNOWN_METRICS:  # a known metric this profile has no value for: n/a, as summary says
        return {"field": bare, "value": None, "unit": registry.unit(bare), "n": 0,
                "na": na_reason(profile, bare)}
    ly = resolve_libreyolo(profile, bare, registry.unit(bare))  # every name of libreyolo's metrics block
    if ly is not None:
        return ly
    import difflib  # only on the error path: `get` stays fast

    names = [r["field"] for r in fields]
    extra = [*ALIASES, *libreyolo_names(profile)]
    close = list(dict.fromkeys(difflib.get_close_matches(field, [*names, *extra], n=5, cutoff=0.5)
                               + sorted((n for n in [*names, *extra] if field.lower() in n.lower()), key=len)
                               + _sharing_a_word(field, [*names, *KNOWN_METRICS, *extra])))
    if close:
        hint = f" (did you mean: {', '.join(close[:MAX_SUGGESTIONS])}?)"
    else:  # nothing close: the headline's fields, where a reader starts
        start = [n for n, _ in HEADLINE if n in names][:MAX_SUGGESTIONS]
        hint = f" (fields include: {', '.join(start)})" if start else ""
    raise UsageError(f"unknown field {field!r}{hint}; `yoloprof get FILE` lists every field")
