"""Every name of libreyolo's `metrics` block as a `get` field: a value, or n/a with why.

Three kinds of name (`resolve`), tried after yoloprof's own fields and `libreyolo.ALIASES`:

- per phase, `<phase>_gpu_ms` / `_wall_ms` / `_kernels` / `_ops`: yoloprof's phase figures
  (`<phase>_device_ms` ... from the trace engine; the phases table of a profile.json read without
  its trace), n/a naming the profile's phases when it has no such phase;
- `img_per_s_n`: the number of samples of `img_per_s` (libreyolo's `--repeat` trials, else 1);
- libreyolo's own figures with no yoloprof definition (`OWN`: the loader stall its unsynced timer
  measured, the allocator-pressure flag, the distinct-kernel count of its window, ...): the
  value the libreyolo file wrote (`source.metrics`, else its top level), with `source`
  "libreyolo"; on any other input n/a, saying that only libreyolo's profile.json has it.

This module is on `get`'s fast path: it imports nothing heavy.
"""

from __future__ import annotations

import re
from typing import Any

from yoloprof.readers._common import finite

# libreyolo-only names: (why a yoloprof input has none). Its definitions: libreyolo.training.profiler.
OWN: dict[str, str] = {
    "dataload_ms": "libreyolo's unsynced loader stall per step",
    "dataload_frac": "libreyolo's loader stall as a fraction of its step",
    "ops_per_step": "libreyolo's count of cpu_op events inside its step/<phase> spans per step",
    "unique_kernels": "libreyolo's count of distinct kernel names in its window",
    "memory_pressure": "libreyolo's allocator-pressure flag (>= 5 cudaMalloc/free per step or util > 105%)",
    "gpu_util_raw": "libreyolo's GPU busy / step before clipping at 1",
    "img_per_s_std": "libreyolo's population standard deviation of its --repeat trials",
}
# libreyolo phase suffix -> (yoloprof phase metric suffix, phases-table column)
PHASE_SUFFIX = {"gpu_ms": ("device_ms", "device_ms_per_step"), "wall_ms": ("wall_ms", "wall_ms_per_step"),
                "kernels": ("kernels", "kernels_per_step"), "ops": ("ops", "ops_per_step")}
_PHASE_NAME = re.compile(r"^([a-z][a-z0-9_]*?)_(gpu_ms|wall_ms|kernels|ops)$")
# the phases libreyolo's profilers annotate (`step/<phase>`), and "unphased": its name for work
# outside every phase span, yoloprof's phase "other" (`PHASE_NAMES`)
PHASES = ("dataload", "to_device", "preprocess", "forward", "backward", "postprocess", "optimizer", "unphased")
PHASE_NAMES = {"unphased": "other"}


def names(profile: dict) -> list[str]:
    """The libreyolo names `resolve` answers on this profile (for an unknown name's suggestions)."""
    ours = {v: k for k, v in PHASE_NAMES.items()}
    return [*OWN, "img_per_s_n", *(f"{ours.get(p, p)}_{suffix}" for p in _phases(profile) for suffix in PHASE_SUFFIX)]


def _phases(profile: dict) -> dict[str, dict]:
    return {str(p.get("phase")): p for p in profile.get("phases") or [] if isinstance(p, dict)}


def _from_libreyolo(profile: dict) -> dict[str, Any] | None:
    src = profile.get("source")
    if not isinstance(src, dict) or not str(src.get("schema", "")).startswith("libreyolo."):
        return None
    return {**(src.get("top") or {}), **(src.get("metrics") or {})}


def resolve(profile: dict, name: str, unit: str) -> dict[str, Any] | None:
    """The `get` row for a libreyolo name (module doc), or None when it is not one."""
    row: dict[str, Any] = {"field": name, "value": None, "unit": unit, "n": 0}
    m = _PHASE_NAME.match(name)
    if m and (m.group(1) in PHASES or m.group(1) in _phases(profile)):
        phase, (suffix, column) = PHASE_NAMES.get(m.group(1), m.group(1)), PHASE_SUFFIX[m.group(2)]
        entry = (profile.get("metrics") or {}).get(f"{phase}_{suffix}")
        rows = _phases(profile)
        value = finite(entry.get("value")) if isinstance(entry, dict) else None
        if value is None and phase in rows:
            value = finite(rows[phase].get(column))
        row.update(value=value, n=1 if value is not None else 0, alias_of=f"{phase}_{suffix}")
        if value is None:
            have = ", ".join(rows) or "none"
            row["na"] = (f"phase {phase!r} has no {column} in this profile" if phase in rows
                         else f"no phase {phase!r} in this profile (its phases: {have})")
        return row
    if name == "img_per_s_n":
        entry = (profile.get("metrics") or {}).get("img_per_s")
        n = entry.get("n") if isinstance(entry, dict) else None
        row.update(value=n, n=1 if n else 0, unit="count", alias_of="img_per_s.n")
        if not n:
            row["na"] = "no throughput in this profile"
        return row
    if name not in OWN:
        return None
    own = _from_libreyolo(profile)
    value = own.get(name) if own is not None else None
    if isinstance(value, bool) or isinstance(value, (int, float)):
        row.update(value=value if isinstance(value, bool) else finite(value), n=1, source="libreyolo")
    if row["value"] is None:
        row["na"] = (f"{OWN[name]}: only libreyolo's profile.json has it, and this is not one" if own is None
                     else f"{OWN[name]}: the libreyolo file does not record it")
    return row
