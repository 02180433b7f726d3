"""Python hotspots: cProfile over a few steps of their own, outside the timed trials (as
`torch.utils.bottleneck` does), kept in profile.json as functions by self and cumulative time.

cProfile sees Python functions only: time inside a C++ op or a CUDA kernel shows up as the Python
function that called it (its self time on CPU; on a GPU only the launch, since kernels run
asynchronously). It slows Python-heavy code several-fold, which is why it never runs in the
timed steps; its figures are for ranking functions, not for step time.
"""

from __future__ import annotations

import cProfile
import os
import pstats
from typing import Any

HOTSPOTS_KEEP = 60  # functions kept in the profile (by cumulative and by self time, merged)


class HotspotRecorder:
    """`start()` ... `stop()` around whole steps; `section(steps)` gives the profile's section."""

    def __init__(self) -> None:
        self._prof = cProfile.Profile()
        self.steps = 0
        self._running = False

    def start(self) -> None:
        self._prof.enable()
        self._running = True

    def stop(self) -> None:
        if self._running:
            self._prof.disable()
            self._running = False

    def section(self, steps: int) -> dict[str, Any] | None:
        """Functions per step: calls, self ms (tottime), cumulative ms; None when nothing ran."""
        self.stop()
        if steps < 1:
            return None
        try:
            stats = pstats.Stats(self._prof)
        except TypeError:  # nothing was recorded
            return None
        rows = []
        for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
            rows.append({"function": func, "file": _short(filename), "line": int(line),
                         "calls_per_step": ncalls / steps, "self_ms": tottime * 1e3 / steps,
                         "cum_ms": cumtime * 1e3 / steps})
        by_cum = sorted(rows, key=lambda r: -r["cum_ms"])[:HOTSPOTS_KEEP]
        by_self = sorted(rows, key=lambda r: -r["self_ms"])[:HOTSPOTS_KEEP]
        kept = {(r["file"], r["line"], r["function"]): r for r in [*by_cum, *by_self]}
        return {"method": "cProfile", "steps": steps,
                "functions": sorted(kept.values(), key=lambda r: -r["cum_ms"])}


def _short(filename: str) -> str:
    """Paths relative to the working directory or to site-packages, so profiles carry no home
    folders; built-ins ('~') stay as cProfile names them."""
    if filename.startswith(("~", "<")):
        return filename
    marker = "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return os.path.basename(filename)
    return rel if not rel.startswith("..") else os.path.basename(filename)
