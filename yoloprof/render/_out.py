"""One small writer for the terminal renderers (numbers are formatted by render/fmt.py): rich tables and panels when stdout is a terminal,
plain aligned text when it is piped (so `| grep`, `| awk` and logs see no box drawing).

Colour follows rich's own rules, which honour NO_COLOR; plain mode never colours.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Sequence, TextIO

if TYPE_CHECKING:
    from rich.console import Console

class Out:
    """Writes titles, key/value blocks, tables and notes in rich or plain form."""

    def __init__(self, stream: TextIO | None = None, rich: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.rich = self.stream.isatty() if rich is None else rich
        self._console = None
        if self.rich:
            from rich.console import Console

            self._console = Console(file=self.stream, highlight=False,
                                    no_color=bool(os.environ.get("NO_COLOR")) or None)

    def _plain(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def title(self, text: str, subtitle: str | None = None) -> None:
        if self._console:
            from rich.rule import Rule

            self._console.print(Rule(f"[bold]{_esc(text)}[/bold]", align="left"))
            if subtitle:
                self._console.print(_esc(subtitle), style="dim")
        else:
            self._plain(text if not subtitle else f"{text}  ({subtitle})")

    def kv(self, pairs: Sequence[tuple[str, str]], title: str | None = None) -> None:
        """Aligned `label  value` lines (a panel in rich mode)."""
        if not pairs:
            return
        width = max(len(k) for k, _ in pairs)
        lines = [f"{k.ljust(width)}  {v}" for k, v in pairs]
        if self._console:
            from rich.panel import Panel

            self._console.print(Panel("\n".join(_esc(x) for x in lines), title=title, expand=False))
        else:
            if title:
                self._plain(f"{title}:")
            for line in lines:
                self._plain(f"  {line}")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None,
              right: Sequence[int] = (), shrink: int = 0) -> None:
        """A table that fits the room without splitting a value (`render.fit`): the terminal's
        width, or piped $COLUMNS else 100 columns. `right` lists the columns to right-align
        (numbers: they never shrink); text columns give way, `shrink` first, then the widest,
        abbreviated so that their values stay distinct. Columns empty in every row are left out."""
        from yoloprof.render.fit import fit_rows, table_width

        srows = [[str(c) for c in r] for r in rows]
        keep = [i for i in range(len(headers)) if not srows or any(r[i] for r in srows)]
        headers = [headers[i] for i in keep]
        srows = [[r[i] for i in keep] for r in srows]
        right = [keep.index(i) for i in right if i in keep]
        first = [keep.index(shrink)] if shrink in keep else []
        if self._console:
            headers, srows = fit_rows(headers, srows, self._console.width, right=right, first=first,
                                      sep=3, margin=4)
        else:
            headers, srows = fit_rows(headers, srows, table_width(), right=right, first=first)
        widths = [max([len(h)] + [len(r[i]) for r in srows]) for i, h in enumerate(headers)]
        if self._console:
            self._rich_table(self._console, headers, srows, widths, title, right)
            return
        if title:
            self._plain(f"{title}:")
        for r in [list(headers)] + srows:
            cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
            self._plain(("  " + "  ".join(cells)).rstrip())

    def _rich_table(self, console: Console, headers: Sequence[str], rows: list[list[str]], widths: list[int],
                    title: str | None, right: Sequence[int]) -> None:
        from rich import box
        from rich.table import Table

        # SIMPLE_HEAD: no vertical rules (a column costs its width + 3): width-friendly. Cells come
        # fitted (render.fit); a table that cannot fit is printed wider, never cut or folded.
        t = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
        for i, h in enumerate(headers):
            t.add_column(h, justify="right" if i in right else "left", no_wrap=True, min_width=widths[i])
        for r in rows:
            t.add_row(*(_esc(c) for c in r))
        need = sum(w + 3 for w in widths) + 4
        console.print(t, width=max(console.width, need), crop=False)

    def line(self, text: str, style: str | None = None) -> None:
        if self._console:
            self._console.print(_esc(text), style=style)
        else:
            self._plain(text)

    def blank(self) -> None:
        self.line("")

    def warn(self, text: str) -> None:
        self.line(f"warning: {text}", style="yellow")

    def note(self, text: str) -> None:
        self.line(f"note: {text}", style="dim")


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)

