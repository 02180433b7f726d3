"""Terminal output of `yoloprof calibrate` (the stored noise floor) and of a `compare` A/B run
(the looks it took); `compare`'s own table is render.terminal.render_compare."""

from __future__ import annotations

from typing import Any

from yoloprof.render._out import Out
from yoloprof.render.fmt import fmt_p, fmt_ratio


def render_calibration(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    rows = []
    for name, m in sorted(result.get("metrics", {}).items()):
        infl = m.get("inflation")
        within = m.get("within_sd")
        rows.append([name, f"{100 * m['sd']:.2f}%", f"{100 * m['between_sd']:.2f}%",
                     "n/a" if within is None else f"{100 * within:.2f}%",
                     "n/a" if infl is None else f"{infl:.1f}x", str(m["processes"])])
    out.table(["metric", "process-mean SD", "between SD", "within SD", "mean var / trials' prediction",
               "processes"], rows, title=f"run-to-run noise floor ({result.get('workload')})",
              right=(1, 2, 3, 4, 5))
    out.note(f"stored in {result.get('file')} ({result.get('measured_at')}); `yoloprof compare` of one "
             "process per side on this machine and workload is judged against it")


def render_ab(result: dict[str, Any], out: Out | None = None) -> None:
    """The looks of an A/B run, before the comparison table."""
    out = out or Out()
    ab = result.get("ab") or {}
    rows = [[str(k["per_side"]), fmt_ratio(k.get("ratio"), *(k.get("ci") or (None, None))), fmt_p(k.get("p")),
             f"{k['alpha']:.3g}", str(k.get("verdict"))] for k in ab.get("looks", [])]
    if rows:
        out.table(["per side", "ratio [CI]", "p", "alpha", "verdict"], rows,
                  title=f"A/B looks at {ab.get('metric')} (order {ab.get('order')})", right=(0, 1, 2, 3))
