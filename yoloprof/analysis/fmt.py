"""Number and verdict formatting shared by the analysis renderers (terminal, Markdown, HTML), so
the three always print the same text for the same comparison."""

from __future__ import annotations

import math
from typing import Any

NA = "-"

# verdict_code -> (rich style, HTML badge colours (background, text)); data, not branches.
VERDICT_STYLE = {
    "improved": ("bold green", "#d1f2dc", "#0b6b2f"),
    "regressed": ("bold red", "#fbd9d7", "#9b1c13"),
    "equivalent": ("cyan", "#dcebfa", "#1d4f86"),
    "within_noise": ("yellow", "#fdf0cc", "#7a5600"),
    "inconclusive": ("dim", "#eceef1", "#4a5261"),
    "insufficient": ("magenta", "#f1e1f7", "#6a2a83"),
    "missing": ("dim", "#f4f4f4", "#777777"),
    "drift": ("bold magenta", "#fde2f3", "#8a1a5c"),
    "flagged": ("bold magenta", "#fde2f3", "#8a1a5c"),
}


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_num(x: Any) -> str:
    """Up to 4 significant digits, no exponent for everyday magnitudes."""
    if _missing(x):
        return NA
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 1e6 or abs(x) < 1e-3:
        return f"{x:.3g}"
    digits = max(0, 3 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{digits}f}"


def fmt_ratio(ratio: Any, lo: Any = None, hi: Any = None) -> str:
    if _missing(ratio):
        return NA
    text = f"{float(ratio):.3f}"
    if not _missing(lo) and not _missing(hi):
        text += f" [{float(lo):.3f}, {float(hi):.3f}]"
    return text


def fmt_p(p: Any) -> str:
    if _missing(p):
        return NA
    p = float(p)
    return "<0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def fmt_pct(x: Any) -> str:
    return NA if _missing(x) else f"{float(x):.1f}%"


def verdict_detail(row: Any) -> str:
    """The verdict plus, for inconclusive ones, what it would take to decide."""
    text = str(row.get("verdict") or NA)
    if row.get("verdict_code") == "inconclusive" and not _missing(row.get("mde_pct")):
        need = row.get("trials_needed")
        text += f" (detectable here: {float(row['mde_pct']):.1f}%"
        text += f"; ~{int(need)} trials/side for the noise threshold)" if not _missing(need) else ")"
    return text


def comparison_cells(row: Any) -> list[str]:
    """The cells of one comparison row, in the order of COMPARISON_HEADERS."""
    unit = f" {row['unit']}" if isinstance(row.get("unit"), str) and row.get("unit") else ""
    return [str(row["config"]), str(row["metric"]), fmt_num(row.get("baseline_value")) + unit,
            fmt_num(row.get("value")) + unit, fmt_ratio(row.get("ratio"), row.get("ci_low"), row.get("ci_high")),
            fmt_p(row.get("p")), fmt_p(row.get("p_adj")), verdict_detail(row)]


COMPARISON_HEADERS = ["config", "metric", "baseline", "value", "ratio [CI] (>1 better)", "p",
                      "adj. p", "verdict"]
