"""Tables that fit a width without splitting a value: the one home of column fitting.

A cell is never folded over two lines (`model.width=16` must not read `model.width=1` / `6`).
When a table is wider than the room, its text columns give way, widest first, and their cells are
abbreviated with a marker (`…`) that keeps the part that tells the column's values apart: the
values' common prefix and common suffix are elided first, the part between them kept, so six
series `model=yolov8n,batch=2,...,imgsz=64` that differ only in `imgsz` stay six distinct labels.
A column never shrinks below 12 characters (READABLE) nor below the width at which its distinct
values stay distinct; columns of figures never shrink. When that is still too wide, the table is
wider than the room (a line may run past it, but no value is lost or split).

Room: `table_width()`: $COLUMNS when set, else the terminal's width, else PLAIN_WIDTH (100).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Sequence

MARK = "…"
PLAIN_WIDTH = 100
MIN_TEXT = 6  # a text column is not abbreviated below this


def table_width(default: int = PLAIN_WIDTH) -> int:
    """The room for a table: $COLUMNS, else the terminal's width (piped: `default`)."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return shutil.get_terminal_size((default, 24)).columns


SEPARATORS = ",;/|: ._"  # a key=value label keeps its key: the elided parts end at one of these


def _common_prefix(values: list[str]) -> int:
    """Length of the values' common prefix, cut back to just after its last separator (so
    `model.width=16` / `model.width=8` keep `width=`)."""
    if len(values) < 2:
        return 0
    common = os.path.commonprefix(values)
    return max((common.rfind(c) + 1 for c in SEPARATORS), default=0)


def _common_suffix(values: list[str]) -> int:
    """Length of the values' common suffix, from its first separator on."""
    if len(values) < 2:
        return 0
    common = os.path.commonprefix([v[::-1] for v in values])[::-1]
    at = [common.find(c) for c in SEPARATORS if c in common]
    return len(common) - min(at) if at else 0


def _abbrev(value: str, width: int, pre: int, suf: int, balanced: bool = True) -> str:
    """`value` in at most `width` characters (when it can be): the part between the column's
    common prefix (`pre` chars) and common suffix (`suf` chars) kept, as much of the prefix's head
    and the suffix's tail as fit around it, and `…` where something was left out."""
    if len(value) <= width:
        return value
    pre = min(pre, len(value))
    suf = min(suf, len(value) - pre)
    head, mid, tail = value[:pre], value[pre:len(value) - suf], value[len(value) - suf:]
    # the separators around the middle travel with it when they fit (`…,batch=1,…` cannot be
    # read as batch=16)
    wide = (head[-1:] + mid + tail[:1], head[:-1], tail[1:])
    if width - len(wide[0]) - (1 if wide[1] else 0) - (1 if wide[2] else 0) >= 0:
        mid, head, tail = wide
    budget = width - len(mid) - (1 if head else 0) - (1 if tail else 0)
    if budget >= 0:  # the distinguishing middle fits whole: fill with the head, then the tail
        h = min(len(head), budget)
        t = min(len(tail), budget - h)
        left = head[:h] + (MARK if h < len(head) else "")
        right = (MARK if t < len(tail) else "") + (tail[len(tail) - t:] if t else "")
        return left + mid + right
    # the middle alone is too long: its start (where the values begin to differ) and its end
    room = max(width - 2, 2) if head else max(width - 1, 2)
    keep_start = (room + 1) // 2 if balanced else room  # unbalanced: the start only (`inconclus…`)
    keep_end = room - keep_start
    core = mid[:keep_start] + MARK + (mid[len(mid) - keep_end:] if keep_end else "")
    return (MARK if head else "") + core + (MARK if tail else "")


def abbreviate(values: Sequence[str], width: int) -> list[str]:
    """Each value in at most `width` characters where it can be, distinct values kept distinct
    (the width is raised, one character at a time, until they are: distinctness wins)."""
    vals = [str(v) for v in values]
    distinct = sorted(set(vals))
    if all(len(v) <= width for v in vals):
        return vals
    pre, suf = _common_prefix(distinct), _common_suffix(distinct)
    longest = max(len(v) for v in vals)
    for w in range(max(width, 1), longest + 1):
        for balanced in (False, True):  # the start alone reads best; start and end if it must
            out = {v: _abbrev(v, w, pre, suf, balanced) for v in distinct}
            if len(set(out.values())) == len(distinct):
                return [out[v] for v in vals]
    return vals


def _floor(values: list[str], header: str) -> int:
    """The narrowest width at which a column's distinct values stay distinct."""
    natural = max([len(header)] + [len(v) for v in values])
    lo = min(natural, MIN_TEXT)
    for w in range(lo, natural + 1):
        if max([0] + [len(v) for v in abbreviate(values, w)]) <= w:
            return w
    return natural


NUMERIC = re.compile(r"[-+~<>]?[\d.,]")  # a figure: `12.35`, `+20.0%`, `0.833x [0.70, 0.90]`
NOT_A_VALUE = frozenset({"", "n/a", "-", "—"})
ROOMY = 24  # text columns wider than this give way first, down to this
READABLE = 12  # then the caller's `first` column, then every text column, down to this and no further


def _numeric(values: list[str]) -> bool:
    """A column of figures (every cell a number or n/a): never abbreviated."""
    seen = [v for v in values if v.strip() not in NOT_A_VALUE]
    return bool(seen) and all(NUMERIC.match(v.strip()) for v in seen)


def fit_rows(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, *,
             right: Sequence[int] = (), first: Sequence[int] = (), sep: int = 2,
             margin: int = 2) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) whose columns fit `width` (cells joined by `sep` spaces after a `margin`)
    where they can. Columns of figures (`right`, or every cell a number) never shrink; text
    columns give way in turn, widest first: those wider than ROOMY (down to ROOMY), the caller's
    `first` ones, then all, down to READABLE characters and never below the width at which their
    values stay distinct. A table of figures and short labels may stay wider than `width`.
    Cells (and the header) of a shrunk column are abbreviated (`abbreviate`)."""
    heads = [str(h) for h in headers]
    cells = [[str(c) for c in r] for r in rows]
    n = len(heads)
    widths = [max([len(heads[i])] + [len(r[i]) for r in cells]) for i in range(n)]
    total = margin + sum(widths) + sep * max(n - 1, 0)
    if total <= width:
        return heads, cells
    text = [i for i in range(n) if i not in right and not _numeric([r[i] for r in cells])]
    floors = {i: _floor([r[i] for r in cells], heads[i]) for i in text}
    target = list(widths)
    stages = ([(i, max(floors[i], ROOMY)) for i in text],
              [(i, max(floors[i], READABLE)) for i in first if i in floors],
              [(i, max(floors[i], READABLE)) for i in text])
    for stage in stages:
        low = dict(stage)
        while total > width:
            can = [i for i in low if target[i] > low[i]]
            if not can:
                break
            i = max(can, key=lambda j: target[j])
            target[i] -= 1
            total -= 1
    for i in text:
        if target[i] < widths[i]:
            col = abbreviate([r[i] for r in cells], target[i])
            for r, v in zip(cells, col):
                r[i] = v
            heads[i] = abbreviate([heads[i]], target[i])[0]
    return heads, cells
