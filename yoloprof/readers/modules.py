"""`yoloprof modules`: forward and backward time per nn.Module, inclusive and self, calls and memory.

The figures come from the profile's `modules` section (hooks in a window of steps of their own,
docs/userloop.md); this reader only cuts the tree at `--depth` and adds shares. A share is of the
model's own inclusive forward (or backward) time, the root row's, so a depth-1 table adds up to the
root minus the root's self time.

A module that is never called (calls 0: a container such as an `nn.Sequential` or `ModuleList`
whose parent's forward iterates its children, as Ultralytics' `DetectionModel` does with its
`model`) has no forward or backward of its own: the recorder's backward of a row sums its
descendants' own nodes, which would show the container with 0% forward and 100% backward. Such a
row is marked `called: false` and its times and shares are null (`not_called` says why); its
children keep theirs.
"""

from __future__ import annotations

from typing import Any

from yoloprof.errors import UsageError
from yoloprof.readers._common import finite

KEYS = ("module", "type", "depth", "calls_per_step", "forward_ms", "forward_self_ms", "backward_ms",
        "backward_self_ms", "mem_mb", "params")
SORTS = ("tree", "forward", "backward", "total")
TIMES = ("forward_ms", "forward_self_ms", "backward_ms", "backward_self_ms", "forward_pct", "backward_pct")
NOT_CALLED = ("never called in the recorded steps (a container whose parent calls its children one by one): "
              "its children's time is theirs, not its own")
NO_MODULES = ("no modules section in this profile: per-module times are recorded by yoloprof.profile(model=...) "
              "and by run/infer with --modules")


def _total(row: dict[str, Any]) -> float:
    return (finite(row.get("forward_ms")) or 0.0) + (finite(row.get("backward_ms")) or 0.0)


def _never_called(row: dict[str, Any]) -> bool:
    calls = finite(row.get("calls_per_step"))
    return calls is not None and calls <= 0.0


def compute_modules(profile: dict, *, depth: int | None = None, sort: str = "tree", top: int = 0) -> dict[str, Any]:
    """Rows down to `depth` (None = every module); `sort` tree (model order) or by time."""
    if depth is not None and depth < 0:
        raise UsageError(f"--depth must be >= 0 (got {depth})")
    if sort not in SORTS:
        raise UsageError(f"unknown --sort {sort!r}; valid: {', '.join(SORTS)}")
    section = profile.get("modules") if isinstance(profile.get("modules"), dict) else None
    rows_in = [r for r in (section or {}).get("rows") or [] if isinstance(r, dict)]
    root = next((r for r in rows_in if r.get("depth") == 0 and not _never_called(r)), None)
    fwd_root = finite((root or {}).get("forward_ms"))
    bwd_root = finite((root or {}).get("backward_ms"))
    rows = []
    for r in rows_in:
        if depth is not None and (r.get("depth") or 0) > depth:
            continue
        row = {k: r.get(k) for k in KEYS}
        fwd, bwd = finite(r.get("forward_ms")), finite(r.get("backward_ms"))
        row["forward_pct"] = 100.0 * fwd / fwd_root if fwd is not None and fwd_root else None
        row["backward_pct"] = 100.0 * bwd / bwd_root if bwd is not None and bwd_root else None
        row["called"] = not _never_called(r)
        if not row["called"]:
            row.update(dict.fromkeys(TIMES), not_called=NOT_CALLED)
        rows.append(row)
    key = {"forward": lambda r: -(finite(r.get("forward_ms")) or 0.0),
           "backward": lambda r: -(finite(r.get("backward_ms")) or 0.0), "total": lambda r: -_total(r)}.get(sort)
    if key is not None:
        rows.sort(key=key)
    shown = rows if top <= 0 else rows[:top]
    meta = {k: (section or {}).get(k) for k in ("method", "timing", "steps", "backward_unattributed_ms")}
    return {"kind": profile.get("kind"), "filters": {"depth": depth, "sort": sort, "top": top},
            **meta, "modules": shown, "matched": len(rows), "total": len(rows_in),
            "warnings": [] if section else [NO_MODULES]}
