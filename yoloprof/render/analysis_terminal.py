"""Terminal rendering of an analysis: one rich table row per comparison, then best/Pareto/scaling
and the warnings. When the console is not a terminal (piped, CI) or NO_COLOR is set, the same
table prints without colour and with plain ASCII rules, so logs and diffs stay readable."""

from __future__ import annotations

import os
from typing import Any

from yoloprof.render.fmt import (NA, COMPARISON_HEADERS, RATIO_NOTE, VERDICT_STYLE, comparison_cells, fmt_in, fmt_p,
                                   fmt_ratio)


PLAIN_WIDTH = 100  # piped, COLUMNS unset: the tables fit 100 columns (render.fit), never folding a value
MAX_NOTES = 20  # per-comparison notes printed; all of them are in comparison.md and the HTML


def make_console(*, stderr: bool = False, quiet: bool = False) -> Any:
    """A rich Console; when piped and COLUMNS is unset, 100 columns (not rich's 80: the comparison
    table's cells would fold line after line), which every table of an analysis fits."""
    from rich.console import Console

    console = Console(stderr=stderr, quiet=quiet)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, quiet=quiet, width=PLAIN_WIDTH)
    return console


def _console(console: Any) -> Any:
    return make_console() if console is None else console


def _print_table(console: Any, title: str, headers: list[str], rows: list[list[str]],
                 right: tuple[int, ...] = (), styles: list[str] | None = None) -> None:
    """One table, fitted to the console's width without splitting a value (render.fit: text
    columns abbreviated, keeping what tells their values apart); one that cannot fit prints wider,
    never folded. `styles`: a rich style per row for its last cell (the verdict)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from yoloprof.render.fit import fit_rows

    fancy = console.is_terminal and not console.no_color
    # plain: rich's SIMPLE_HEAD in ASCII (a rule under the header, no vertical rules); a column
    # costs its width + 2 (padding and the gap rich keeps), the edge up to 3
    plain = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD if fancy else plain,
                  header_style="bold" if fancy else None, expand=False, padding=(0, 1, 0, 0), show_edge=False)
    heads, cells = fit_rows(headers, rows, console.width, right=right, sep=2, margin=3)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    for i, h in enumerate(heads):
        table.add_column(h, justify="right" if i in right else "left", no_wrap=True, min_width=widths[i])
    for k, r in enumerate(cells):
        out = [escape(c) for c in r]
        style = styles[k] if styles else ""
        if style and out:
            out[-1] = f"[{style}]{out[-1]}[/]"
        table.add_row(*out)
    need = sum(w + 2 for w in widths) + 3
    console.print(table, width=max(console.width, need), crop=False)


def _comparisons(console: Any, result: Any) -> None:
    """The comparisons, laid out for the console's width (render/comparison_layout.py): verdict
    words and configuration labels whole, reasons as footnotes; then the rerun hint."""
    from yoloprof.analysis.next_step import rerun_hint
    from yoloprof.render.comparison_layout import layout

    cmp = result.comparisons
    if cmp.empty:
        why = "no metric to compare (see the notes)" if not result.metrics_compared else result.baseline
        console.print("no comparisons: " + why, markup=False, highlight=False)
        return
    s = result.settings
    rows = cmp.to_dict("records")
    # an adaptive sweep's verdicts come from its sequential rule (Holm step-down inside, said in the
    # notes): a column of n/a adjusted p-values would only take width
    adj = COMPARISON_HEADERS.index("adj. p")
    keep = [i for i in range(len(COMPARISON_HEADERS))
            if i != adj or any(r.get("p_adj") is not None and r.get("p_adj") == r.get("p_adj") for r in rows)]
    cells = [[c[i] for i in keep] for c in (comparison_cells(row) for row in rows)]
    styles = [VERDICT_STYLE.get(row["verdict_code"], ("",))[0] for row in rows]
    title = f"comparisons ({RATIO_NOTE}; {s['correction']} correction, alpha {s['alpha']}, noise {s['noise']:.0%})"
    plan = layout([COMPARISON_HEADERS[i] for i in keep], cells, rows, console.width)
    right = tuple(i for i, h in enumerate(plan.headers) if h in FIGURE_HEADERS)
    if plan.grouped:
        _print_grouped(console, title, plan, right, styles)
    else:
        _print_table(console, title, plan.headers, plan.cells, right=right, styles=styles)
    for n, note in enumerate(plan.footnotes, 1):
        console.print(f"[{n}] {note}", markup=False, highlight=False)
    from yoloprof.render.knob_lines import knob_lines

    for line in knob_lines(cmp):  # outputs and payback_calls (docs/knobs.md)
        console.print(line, markup=False, highlight=False)
    hint = rerun_hint(cmp)
    if hint:
        console.print(f"hint: {hint}", markup=False, highlight=False)


FIGURE_HEADERS = ("baseline", "value", "p", "adj. p")  # right-aligned comparison columns


def _print_grouped(console: Any, title: str, plan: Any, right: tuple[int, ...], styles: list[str]) -> None:
    """Each configuration's label on its own line (whole, never abbreviated), its metrics' rows
    under it, indented; columns aligned across configurations."""
    from rich.text import Text

    from yoloprof.render.comparison_layout import INDENT, SEP
    from yoloprof.render.fit import fit_rows

    fancy = console.is_terminal and not console.no_color
    room = console.width - INDENT - 1
    verdict = len(plan.headers) - 1  # never abbreviated: the word is the point
    heads, cells = fit_rows(plan.headers, plan.cells, room, right=(*right, verdict), sep=SEP, margin=0)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]

    def line(values: list[str]) -> str:
        return (" " * INDENT + (" " * SEP).join(v.rjust(w) if i in right else v.ljust(w)
                                                  for i, (v, w) in enumerate(zip(values, widths)))).rstrip()

    console.print(title, markup=False, highlight=False)
    header = line(heads)
    console.print(Text(header, style="bold" if fancy else ""))
    console.print(" " * INDENT + ("─" if fancy else "-") * (len(header) - INDENT), markup=False, highlight=False)
    for label, members in plan.groups:
        console.print(Text(label, style="bold" if fancy else ""), crop=False, soft_wrap=True)
        for k in members:
            text = Text(line(cells[k]))
            verdict = cells[k][-1]
            if styles[k] and fancy:
                text.stylize(styles[k], len(text) - len(verdict.rstrip()), len(text))
            console.print(text, crop=False, soft_wrap=True)
    if plan.dropped:
        console.print(f"({', '.join(plan.dropped)} left out at this width: every column is in comparison.md)",
                      markup=False, highlight=False)


def _best(console: Any, result: Any) -> None:
    if result.best.empty:
        return
    rows = [[str(b["metric"]), str(b["best"]), fmt_in(b["value"], b.get("unit")), str(b["runner_up"] or NA),
             fmt_ratio(b["margin"], b["ci_low"], b["ci_high"]), fmt_p(b["p"])] for _, b in result.best.iterrows()]
    _print_table(console, "best configuration per metric",
                 ["metric", "best", "value", "runner-up", "margin [CI]", "p"], rows, right=(2, 5))


def _pareto_and_scaling(console: Any, result: Any) -> None:
    p = result.pareto
    if "pareto" in p and p["pareto"].any() and len(p) > 1:
        axes = p.attrs.get("axes", [])
        names = "; ".join(p.loc[p["pareto"], "config"].astype(str))
        console.print(f"Pareto set over {', '.join(axes)}: {names}", markup=False, highlight=False)
    for _, r in result.scaling.iterrows():
        console.print(f"scaling {r['axis']} ({r['series']}): {r['note']}", markup=False, highlight=False)


def print_analysis(result: Any, console: Any = None) -> None:
    """Print the whole analysis on a rich Console (None = a new one on stdout)."""
    console = _console(console)
    console.print(f"sweep: {result.sweep_dir}", markup=False, highlight=False)
    console.print(f"{result.baseline}; swept axes: {', '.join(result.varying) or 'none'}; jobs: "
                  + ", ".join(f"{k} {v}" for k, v in result.jobs.items()), markup=False, highlight=False)
    _comparisons(console, result)
    _best(console, result)
    _pareto_and_scaling(console, result)
    for w in result.warnings:
        console.print(f"warning: {w}", style="yellow", markup=False, highlight=False)
    for n in result.notes:
        console.print(f"note: {n}", markup=False, highlight=False)
    cmp = result.comparisons
    warned = cmp[cmp["warnings"].fillna("") != ""] if not cmp.empty else cmp
    for r in warned.head(MAX_NOTES).to_dict("records"):
        console.print(f"note: {r['config']} / {r['metric']}: {r['warnings']}", markup=False, highlight=False)
    if len(warned) > MAX_NOTES:
        console.print(f"note: ... {len(warned) - MAX_NOTES} more comparison notes in comparison.md", markup=False,
                      highlight=False)
    if result.files:
        console.print(f"wrote {len(result.files)} files to {result.out_dir} (analysis {result.name}); "
                      f"reproduce with: {result.command}", markup=False, highlight=False)


def print_analyses(items: list[dict[str, Any]], sweep_dir: str, console: Any = None) -> None:
    """`yoloprof analyze DIR --list`: one block per analysis (name, folder, date, settings, command)."""
    console = _console(console)
    if not items:
        console.print(f"no analyses in {sweep_dir} yet (run: yoloprof analyze {sweep_dir})", markup=False,
                      highlight=False)
        return
    rows = []
    for a in items:
        if a["incomplete"]:
            rows.append([a["name"], NA, "incomplete: no settings.json (interrupted while written)", NA])
            continue
        s = a["settings"] or {}
        text = "; ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in s.items()
                         if v not in (None, []))
        rows.append([a["name"], str(a["created_at"] or NA), text, str(a["command"] or NA)])
    _print_table(console, f"analyses of {sweep_dir}", ["name", "created (UTC)", "settings", "command"], rows)
