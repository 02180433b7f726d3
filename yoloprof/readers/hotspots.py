"""`yoloprof hotspots`: Python functions by self and cumulative time per step, from the profile's
`hotspots` section (cProfile over steps of their own; docs/userloop.md says what it can see)."""

from __future__ import annotations

from typing import Any

from yoloprof.errors import UsageError
from yoloprof.readers._common import finite

SORTS = {"cum": "cum_ms", "self": "self_ms", "calls": "calls_per_step"}
NO_HOTSPOTS = ("no hotspots section in this profile: record one with --python-hotspots "
               "(run/infer) or yoloprof.profile(..., python_hotspots=True)")


def compute_hotspots(profile: dict, *, sort: str = "cum", top: int = 25, grep: str | None = None) -> dict[str, Any]:
    """Functions sorted by cumulative (default), self time or calls; `grep` filters file:function."""
    import re

    if sort not in SORTS:
        raise UsageError(f"unknown --sort {sort!r}; valid: {', '.join(SORTS)}")
    try:
        pattern = re.compile(grep) if grep else None
    except re.error as exc:
        raise UsageError(f"--grep {grep!r} is not a regular expression: {exc}") from None
    section = profile.get("hotspots") if isinstance(profile.get("hotspots"), dict) else None
    funcs = [f for f in (section or {}).get("functions") or [] if isinstance(f, dict)]
    rows = [f for f in funcs if pattern is None or pattern.search(f"{f.get('file')}:{f.get('function')}")]
    rows.sort(key=lambda f: -(finite(f.get(SORTS[sort])) or 0.0))
    self_total = sum(finite(f.get("self_ms")) or 0.0 for f in funcs)
    out = []
    for f in rows if top <= 0 else rows[:top]:
        row = dict(f)
        row["self_pct"] = 100.0 * (finite(f.get("self_ms")) or 0.0) / self_total if self_total else None
        out.append(row)
    return {"kind": profile.get("kind"), "filters": {"sort": sort, "top": top, "grep": grep},
            "method": (section or {}).get("method"), "steps": (section or {}).get("steps"),
            "functions": out, "matched": len(rows), "total": len(funcs), "self_ms_kept": self_total,
            "warnings": [] if section else [NO_HOTSPOTS]}
