"""Terminal rendering of an analysis: one rich table row per comparison, then best/Pareto/scaling
and the warnings. When the console is not a terminal (piped, CI) or NO_COLOR is set, the same
table prints without colour and with plain ASCII rules, so logs and diffs stay readable."""

from __future__ import annotations

import os
from typing import Any

from yoloprof.render.fmt import (NA, COMPARISON_HEADERS, RATIO_NOTE, VERDICT_STYLE, comparison_cells, fmt_in, fmt_p,
                                   fmt_ratio)


PLAIN_WIDTH = 100  # piped, COLUMNS unset: the tables fold their widest cells into 100 columns
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


def _table(console: Any, title: str, headers: list[str], right: tuple[int, ...] = ()) -> Any:
    from rich import box
    from rich.table import Table

    fancy = console.is_terminal and not console.no_color
    # plain: rich's SIMPLE_HEAD in ASCII (a rule under the header, no vertical rules: a column
    # costs its width + 2, so the demo's comparison table fits 100 columns without folding)
    plain = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD if fancy else plain,
                  header_style="bold" if fancy else None, expand=False, padding=(0, 1, 0, 0), show_edge=False)
    for i, h in enumerate(headers):
        table.add_column(h, justify="right" if i in right else "left", overflow="fold")
    return table


def _comparisons(console: Any, result: Any) -> None:
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
    right = tuple(keep.index(i) for i in (2, 3, 5, 6) if i in keep)
    t = _table(console, f"comparisons ({RATIO_NOTE}; {s['correction']} correction, alpha {s['alpha']}, "
                        f"noise {s['noise']:.0%})", [COMPARISON_HEADERS[i] for i in keep], right=right)
    for row in rows:
        cells = comparison_cells(row)
        style = VERDICT_STYLE.get(row["verdict_code"], ("",))[0]
        cells[-1] = f"[{style}]{cells[-1]}[/]" if style else cells[-1]
        t.add_row(*(cells[i] for i in keep))
    console.print(t)


def _best(console: Any, result: Any) -> None:
    if result.best.empty:
        return
    t = _table(console, "best configuration per metric",
               ["metric", "best", "value", "runner-up", "margin [CI]", "p"], right=(2, 5))
    for _, b in result.best.iterrows():
        t.add_row(b["metric"], str(b["best"]), fmt_in(b["value"], b.get("unit")), str(b["runner_up"] or NA),
                  fmt_ratio(b["margin"], b["ci_low"], b["ci_high"]), fmt_p(b["p"]))
    console.print(t)


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
    t = _table(console, f"analyses of {sweep_dir}", ["name", "created (UTC)", "settings", "command"])
    for a in items:
        if a["incomplete"]:
            t.add_row(a["name"], NA, "incomplete: no settings.json (interrupted while written)", NA)
            continue
        s = a["settings"] or {}
        text = "; ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in s.items()
                         if v not in (None, []))
        t.add_row(a["name"], str(a["created_at"] or NA), text, str(a["command"] or NA))
    console.print(t)
