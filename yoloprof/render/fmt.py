"""The one formatting module of every renderer (readers' terminal output, the analysis terminal
table, Markdown, HTML, CSV), so the same number always prints the same way.

Rules: a number has 4 significant digits (thousands separated, no exponent between 1e-3 and
1e15), except a count: a whole number of calls/ops/kernels prints as an integer ("306", never
"306.0"; `fmt_count`), a mean over steps that is not whole keeps its digits ("2.5"); an absent
value (None, NaN, infinity) reads "n/a", never 0; a unit follows its number
after a space ("%" directly; "count" is implied by the metric's name and not printed); ratios
are oriented so that > 1 is better and print as "1.050x" with an optional confidence interval.
"""

from __future__ import annotations

import math
import re
from typing import Any

NA = "n/a"
NAME_WIDTH = 60  # long C++ kernel names are cut to this in tables; --json keeps them whole
SIG_DIGITS = 4
UNSHOWN_UNITS = ("", "count")

# verdict_code -> (rich style, HTML badge colours (background, text)); data, not branches.
VERDICT_STYLE = {
    "improved": ("bold green", "#d1f2dc", "#0b6b2f"),
    "improved_outputs_differ": ("yellow", "#fff3cd", "#7a5b00"),  # analysis/knob_effects.py
    "regressed": ("bold red", "#fbd9d7", "#9b1c13"),
    "equivalent": ("cyan", "#dcebfa", "#1d4f86"),
    "within_noise": ("yellow", "#fdf0cc", "#7a5600"),
    "inconclusive": ("dim", "#eceef1", "#4a5261"),
    "insufficient": ("magenta", "#f1e1f7", "#6a2a83"),
    "missing": ("dim", "#f4f4f4", "#777777"),
    "drift": ("bold magenta", "#fde2f3", "#8a1a5c"),
    "flagged": ("bold magenta", "#fde2f3", "#8a1a5c"),
}


def missing(x: Any) -> bool:
    """None, NaN, an infinity or pandas' NA: a value that is not there."""
    if x is None or type(x).__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(x, (bool, str)):
        return False
    try:
        return not math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fmt_num(v: Any) -> str:
    """A number with SIG_DIGITS significant digits; integers exactly; absent reads "n/a"."""
    if isinstance(v, bool):
        return str(v).lower()
    if missing(v):
        return NA
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10000 else str(v)
    if not isinstance(v, float):
        try:
            v = float(v)  # numpy scalars
        except (TypeError, ValueError):
            return str(v)
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e15 or a < 1e-3:
        return f"{v:.{SIG_DIGITS - 1}g}"
    digits = max(0, SIG_DIGITS - 1 - int(math.floor(math.log10(a))))
    return f"{v:,.{digits}f}"


def fmt_count(v: Any) -> str:
    """A count: whole numbers (also as floats, 306.0 calls per step) as integers with thousands
    separated from 10,000 on; a mean count that is not whole (2.5 per step) as `fmt_num`."""
    if missing(v) or isinstance(v, bool):
        return fmt_num(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    whole = round(f)
    return fmt_num(int(whole)) if abs(f - whole) <= 1e-9 * max(1.0, abs(f)) else fmt_num(f)


# A figure named like a count (evidence keys, row fields): calls, ops, launches, kernels, trials...
COUNT_NAME = re.compile(r"(^|_)(calls|ops|launches|kernels|count|n|trials|steps|jobs|images)(_per_step)?$")


def fmt_named(name: str, v: Any) -> str:
    """A figure by its name: counts as counts (`COUNT_NAME`), anything else as `fmt_num`."""
    return fmt_count(v) if COUNT_NAME.search(str(name)) else fmt_num(v)


def fmt_in(v: Any, unit: str | None) -> str:
    """A number as its unit wants it, the unit not printed (table cells under a headed column)."""
    return fmt_count(v) if unit == "count" else fmt_num(v)


def fmt_val(v: Any, unit: str | None = "") -> str:
    """A number with its unit ("12.35 ms", "41.2%"); the unit is dropped when the value is absent;
    a "count" is printed as a count (`fmt_count`)."""
    s = fmt_count(v) if unit == "count" else fmt_num(v)
    if s == NA or not unit or unit in UNSHOWN_UNITS:
        return s
    return f"{s}{unit}" if unit == "%" else f"{s} {unit}"


def fmt_pct(v: Any) -> str:
    return NA if missing(v) else f"{float(v):.1f}%"


def fmt_ratio(v: Any, lo: Any = None, hi: Any = None) -> str:
    """"1.050x", with " [0.990x, 1.110x]" when both interval ends are known."""
    if missing(v):
        return NA
    text = f"{float(v):.3f}x"
    if not missing(lo) and not missing(hi):
        text += f" [{float(lo):.3f}, {float(hi):.3f}]"
    return text


def fmt_p(p: Any) -> str:
    if missing(p):
        return NA
    p = float(p)
    return "<0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def cut(text: Any, width: int = NAME_WIDTH) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= width else s[: width - 3] + "..."


def verdict_detail(row: Any) -> str:
    """The verdict plus, for inconclusive and within-noise ones, what it would take to decide
    (in jobs per side where the comparison counts processes: one job is one process). Within
    noise is shortened to its direction here: the ratio [CI] column beside it is the interval."""
    text = str(row.get("verdict") or NA)
    jobs = not missing(row.get("processes_needed"))
    need, unit = (row.get("processes_needed"), "jobs") if jobs else (row.get("trials_needed"), "trials")
    if row.get("verdict_code") == "within_noise" and not missing(row.get("ratio")):
        up, down = ("better", "worse") if row.get("better") in ("lower", "higher") else ("higher", "lower")
        text = f"likely {up if float(row['ratio']) >= 1 else down}, not decisive (CI crosses the noise band edge"
        text += f"; ~{int(need)} {unit}/side would decide)" if not missing(need) else ")"
    if row.get("verdict_code") == "inconclusive" and not missing(row.get("mde_pct")):
        text += f" (detectable here: {float(row['mde_pct']):.1f}%"
        text += f"; ~{int(need)} {unit}/side for the noise threshold)" if not missing(need) else ")"
    return text


COMPARISON_HEADERS = ["config", "metric", "baseline", "value", "ratio [CI]", "p", "adj. p", "verdict"]
RATIO_NOTE = "ratio > 1 = better"  # said once, in the table's title (the column stays narrow)


def comparison_cells(row: Any) -> list[str]:
    """The cells of one analysis comparison row, in the order of COMPARISON_HEADERS."""
    unit = row.get("unit") if isinstance(row.get("unit"), str) else ""
    return [str(row["config"]), str(row["metric"]), fmt_val(row.get("baseline_value"), unit),
            fmt_val(row.get("value"), unit), fmt_ratio(row.get("ratio"), row.get("ci_low"), row.get("ci_high")),
            fmt_p(row.get("p")), fmt_p(row.get("p_adj")), verdict_detail(row)]
