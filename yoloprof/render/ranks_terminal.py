"""Terminal rendering of the multi-rank view (`readers.ranks`): one row per rank, the slowest
rank against the median, stragglers flagged. Computes nothing."""

from __future__ import annotations

from typing import Any

from yoloprof.render._out import Out
from yoloprof.render.fmt import fmt_num, fmt_ratio


def render_ranks(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    rows = result.get("ranks") or []
    out.title(f"yoloprof summary: {result.get('folder', 'traces')} [{len(rows)} ranks]")
    out.table(["rank", "file", "step ms", "compute ms", "comm ms", "comm wait ms", "vs median", ""],
              [[r["rank"], r["file"], fmt_num(r["step_ms"]), fmt_num(r["compute_ms"]),
                fmt_num(r["comm_ms"]), fmt_num(r["comm_wait_ms"]), fmt_ratio(r["vs_median"]),
                "STRAGGLER" if r["straggler"] else ""] for r in rows],
              title="per rank, per step", right=(2, 3, 4, 5, 6), shrink=1)
    if result.get("slowest_rank") is not None:
        out.line(f"slowest rank: {result['slowest_rank']} at {fmt_ratio(result['slowest_vs_median'])} "
                 f"the median compute time ({fmt_num(result['median_compute_ms'])} ms/step)")
    strag = result.get("stragglers") or []
    out.line(f"stragglers (> {result['threshold_pct']:g}% over the median): "
             + (", ".join(f"rank {r}" for r in strag) if strag else "none"))
    if result.get("duplicate_ranks"):
        out.warn(f"several files claim rank(s) {', '.join(map(str, result['duplicate_ranks']))}")
    for w in dict.fromkeys(result.get("warnings") or []):
        out.warn(w)


def render_ranks_compare(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    out.title("yoloprof compare: rank folders")
    out.table(["rank", "step before", "step after", "ratio", "compute before", "compute after", "ratio"],
              [[r["rank"], fmt_num(r["step_ms_before"]), fmt_num(r["step_ms_after"]),
                fmt_ratio(r["step_ratio"]), fmt_num(r["compute_ms_before"]),
                fmt_num(r["compute_ms_after"]), fmt_ratio(r["compute_ratio"])] for r in result["ranks"]],
              title="per rank, ms per step", right=(1, 2, 3, 4, 5, 6))
    s = result["slowest_vs_median"]
    out.line(f"median compute: {fmt_ratio(result['median_compute_ratio'])} after/before; slowest rank vs "
             f"median: {fmt_ratio(s['before'])} before, {fmt_ratio(s['after'])} after")
    st = result["stragglers"]
    out.line(f"stragglers: before {st['before'] or 'none'}, after {st['after'] or 'none'}")
    for side in ("only_before", "only_after"):
        if result.get(side):
            out.warn(f"ranks {side.replace('_', ' ')}: {', '.join(map(str, result[side]))}")
