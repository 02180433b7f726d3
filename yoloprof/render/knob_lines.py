"""The knob columns of an analysis' comparisons (analysis/knob_effects.py: `outputs`,
`payback_calls`) as lines under the comparison table: one per configuration whose outputs were
checked, one per time row with a payback. Lines rather than two more columns: most sweeps change no
knob, and the table keeps its width."""

from __future__ import annotations

from typing import Any


def calls_text(calls: float) -> str:
    """6000.0 -> "6,000"; 0.25 -> "0.25" (fewer than one call: paid back within the first)."""
    return f"{calls:,.0f}" if calls >= 10 else f"{calls:.3g}"


def knob_lines(cmp: Any) -> list[str]:
    """[] when no configuration was checked and none pays back."""
    if cmp is None or cmp.empty or "outputs" not in cmp:
        return []
    lines = []
    checked = cmp[cmp["outputs"].fillna("") != ""].drop_duplicates("config")
    for r in checked.to_dict("records"):
        lines.append(f"{r['config']}: outputs vs eager float32 {r['outputs']}")
    if "payback_calls" in cmp:
        paid = cmp[cmp["payback_calls"].notna()]
        for r in paid.to_dict("records"):
            lines.append(f"{r['config']} / {r['metric']}: its extra one-time setup pays back after "
                         f"{calls_text(r['payback_calls'])} calls")
    return lines
