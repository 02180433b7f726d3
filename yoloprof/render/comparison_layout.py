"""How the comparisons table of an analysis fits a terminal (80 columns, or 100 when piped) without
cutting what a reader needs: each configuration's label whole and each verdict's word whole.

Three layouts, the first that fits the width is used:
1. flat: one row per comparison, the verdict with its reason (`inconclusive (detectable here: ...)`);
2. flat with footnotes: the verdict cell is its word and a mark (`inconclusive [1]`); the reasons
   are printed once each under the table (`[1] one process per side, ...`);
3. grouped: the configuration label on a line of its own above its metrics' rows (so it is never
   abbreviated), verdict words with footnotes, and columns that the ratio makes redundant left
   out, in DROPPABLE order, until the rows fit (the table says which; comparison.md has them all).
A table of figures that still cannot fit prints wider (render.fit: no value is ever split).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from yoloprof.metrics.stats import VERDICT_WORDS, verdict_words

# The verdict word of a code, where it is not the metric layer's own (`VERDICT_WORDS`): the codes
# whose text is a sentence get a word of their own; the sentence becomes the footnote.
OWN_WORDS = {"insufficient": "too few", "missing": "missing", "drift": "drift", "flagged": "flagged"}
# Columns left out of the grouped layout, first to last, until it fits: the baseline's value (the
# ratio says how the value compares), then the unadjusted p (the verdict word says what the test
# decided, with the adjusted p where there is one).
DROPPABLE = ("baseline", "p")
INDENT = 2  # a grouped row's indent under its configuration's line
SEP, MARGIN = 2, 3  # the gap between columns and the table's edge (analysis_terminal._print_table)


def verdict_word(row: dict[str, Any]) -> str:
    """The verdict's word: `improved` (`increased` for a metric without a better direction),
    `regressed`, `equivalent`, `changed, within noise`, `inconclusive`, or OWN_WORDS'."""
    code = str(row.get("verdict_code") or "")
    if code in OWN_WORDS:
        return OWN_WORDS[code]
    if code in VERDICT_WORDS:
        better = row.get("better") if row.get("better") in ("lower", "higher") else None
        return verdict_words(code, better)
    return str(row.get("verdict") or "n/a")


def verdict_reason(word: str, detail: str) -> str:
    """What the full verdict text says beyond its word (empty when nothing)."""
    if detail.startswith(word):
        return detail[len(word):].lstrip(" :;,").strip()
    return detail.strip()


def natural_width(headers: Sequence[str], rows: Sequence[Sequence[str]], margin: int = MARGIN) -> int:
    """The columns at their full width, `SEP` apart, plus `margin` (a flat table's edge; a grouped
    row's indent and one column kept free at its end)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return margin + sum(widths) + SEP * max(len(widths) - 1, 0)


@dataclass
class Layout:
    """What to print: `headers` and `cells` (one list per comparison, in the input's order; no
    config column when `grouped`), `groups` (label, row indices) when grouped, `footnotes` (each
    reason once, numbered from 1), `dropped` (columns left out)."""

    headers: list[str]
    cells: list[list[str]]
    grouped: bool = False
    groups: list[tuple[str, list[int]]] = field(default_factory=list)
    footnotes: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _footnoted(cells: list[list[str]], words: list[str], details: list[str]) -> tuple[list[list[str]], list[str]]:
    notes: list[str] = []
    out = []
    for r, word, detail in zip(cells, words, details):
        reason = verdict_reason(word, detail)
        if reason and reason not in notes:
            notes.append(reason)
        out.append([*r[:-1], f"{word} [{notes.index(reason) + 1}]" if reason else word])
    return out, notes


def layout(headers: Sequence[str], cells: Sequence[Sequence[str]], rows: Sequence[dict[str, Any]],
           width: int) -> Layout:
    """The first layout (module doc) whose rows fit `width`. `headers` start with "config" and end
    with "verdict"; `cells` are their texts, the verdict cell the full detail (`verdict_detail`)."""
    heads = list(headers)
    flat = [list(c) for c in cells]
    if natural_width(heads, flat) <= width:
        return Layout(heads, flat)
    words = [verdict_word(r) for r in rows]
    short, notes = _footnoted(flat, words, [c[-1] for c in flat])
    if natural_width(heads, short) <= width:
        return Layout(heads, short, footnotes=notes)
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(short):
        groups.setdefault(c[0], []).append(i)
    keep = list(range(1, len(heads)))
    dropped = []
    for name in DROPPABLE:
        if natural_width([heads[i] for i in keep], [[c[i] for i in keep] for c in short], INDENT + 1) <= width:
            break
        if name in heads:
            keep.remove(heads.index(name))
            dropped.append(name)
    return Layout([heads[i] for i in keep], [[c[i] for i in keep] for c in short], grouped=True,
                  groups=list(groups.items()), footnotes=notes, dropped=dropped)
