"""`yoloprof kernels`: device kernels with share of device time, ms/step, calls/step, category.

Filters are checked against what the profile holds: an unknown category or phase is a usage
error listing the valid ones, a bad `--grep` regex too, and `--tensorcore` on a profile without
device kernels warns instead of silently printing nothing (DESIGN.md section 10).
"""

from __future__ import annotations

import re
from typing import Any

from yoloprof.errors import UsageError
from yoloprof.readers._common import (
    categories_present, choose, finite, match_category, phases_present,
)

SORTS: dict[str, tuple[str, bool]] = {  # --sort value -> (row key, descending)
    "time": ("ms_per_step", True),
    "count": ("count_per_step", True),
    "name": ("name", False),
}
KEYS = ("name", "short_name", "category", "tensorcore", "phase", "kind", "ms_per_step", "pct",
        "count_per_step")
# CUPTI activity kinds, each with its own total: a memcpy is not kernel time.
KINDS = ("kernel", "memcpy", "memset")
_MEM_KIND = re.compile(r"^\s*(memcpy|memset)\b", re.IGNORECASE)


def kind_of(row: dict) -> str:
    """The row's activity kind; profiles written before kinds were recorded get it from the
    name (CUPTI names memory activity `Memcpy HtoD (...)`, `Memset (Device)`)."""
    kind = row.get("kind")
    if kind in KINDS:
        return kind
    m = _MEM_KIND.match(str(row.get("name", "")))
    return m.group(1).lower() if m else "kernel"


def kind_totals(rows: list[dict]) -> dict[str, float]:
    """Summed ms per step of each activity kind (a sum of durations, not a union)."""
    out = dict.fromkeys(KINDS, 0.0)
    for k in rows:
        out[kind_of(k)] += finite(k.get("ms_per_step")) or 0.0
    return out


def known_categories() -> list[str]:
    """Every category the engine's table can produce, so that `--category attention` on a
    profile without attention kernels is an empty (valid) answer, not an error."""
    from yoloprof.metrics.categories import CATEGORIES

    return list(CATEGORIES)


def by_name(rows: list[dict]) -> list[dict]:
    """One row per kernel name: the engine keeps a row per (name, phase), which would show the
    same kernel several times in a top list. Phases are joined ("forward,backward")."""
    merged: dict[str | None, dict] = {}
    for k in rows:
        m = merged.get(k.get("name"))
        if m is None:
            merged[k.get("name")] = m = {key: k.get(key) for key in KEYS}
            m["ms_per_step"], m["pct"], m["count_per_step"], m["phases"] = 0.0, 0.0, 0.0, []
        for key in ("ms_per_step", "pct", "count_per_step"):
            m[key] += finite(k.get(key)) or 0.0
        if k.get("phase") and k["phase"] not in m["phases"]:
            m["phases"].append(k["phase"])
    for m in merged.values():
        m["phase"] = ",".join(m.pop("phases")) or None
    return list(merged.values())


def compile_grep(pattern: str | None) -> re.Pattern[str] | None:
    """`--grep` as a case-insensitive regex (kernel names mix cases: `sm80_xmma_gemm`, `Kernel2`)."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise UsageError(f"invalid --grep regular expression {pattern!r}: {exc}") from None


def compute_kernels(profile: dict, *, top: int = 20, category: str | None = None,
                    grep: str | None = None, tensorcore: bool = False, sort: str = "time",
                    phase: str | None = None) -> dict[str, Any]:
    """The kernel table after filters, sorted, cut to `top` rows (`top <= 0` = all)."""
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}; valid: {', '.join(SORTS)}")
    kernels = [dict(k, kind=kind_of(k)) for k in profile.get("kernels") or [] if isinstance(k, dict)]
    if category is not None:
        category = match_category(category, categories_present(profile) + known_categories())
    choose(phase, phases_present(profile), "phase")
    rx = compile_grep(grep)
    warnings: list[str] = []
    if not kernels:
        warnings.append("no device kernels in this profile (CPU run, or no GPU activity was traced); "
                        "see `yoloprof ops` for the framework view")
        if tensorcore:
            warnings.append("--tensorcore has no effect: there are no device kernels to select")
    rows = [k for k in kernels
            if (category is None or k.get("category") == category)
            and (phase is None or k.get("phase") == phase)
            and (not tensorcore or k.get("tensorcore"))
            and (rx is None or rx.search(str(k.get("name", ""))) or rx.search(str(k.get("short_name", ""))))]
    if phase is None:
        rows = by_name(rows)
    key, desc = SORTS[sort]
    rows.sort(key=lambda k: (_sort_value(k.get(key)), str(k.get("name"))), reverse=desc)
    if sort == "name":
        rows.sort(key=lambda k: str(k.get("short_name") or k.get("name")).lower())
    totals = kind_totals(kernels)
    total_ms = sum(totals.values())
    matched_ms = sum(finite(k.get("ms_per_step")) or 0.0 for k in rows)
    shown = rows if top <= 0 else rows[:top]
    return {
        "kind": profile.get("kind"),
        "filters": {"category": category, "grep": grep, "tensorcore": tensorcore, "phase": phase,
                    "sort": sort, "top": top},
        "kernels": [{k: row.get(k) for k in KEYS} for row in shown],
        "matched": len(rows),
        "total": len(kernels),
        "matched_ms_per_step": matched_ms,
        "kernel_ms_per_step": totals["kernel"],
        "memcpy_ms_per_step": totals["memcpy"],
        "memset_ms_per_step": totals["memset"],
        "device_activity_ms_per_step": total_ms,
        "matched_pct": 100.0 * matched_ms / total_ms if total_ms else None,
        "warnings": warnings,
    }


def _sort_value(v: Any) -> Any:
    if isinstance(v, str):
        return v
    return finite(v) if finite(v) is not None else float("-inf")
