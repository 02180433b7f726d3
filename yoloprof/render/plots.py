"""Figures for the HTML report, as inline SVG strings (matplotlib, Agg backend, text kept as text
so the report stays small and searchable). Only the report imports this module: matplotlib is
slow to import and nothing else needs it.

Large sweeps are capped (MAX_SERIES lines, MAX_BARS bars) so the report stays readable; the
tables and parquet files always hold everything.
"""

from __future__ import annotations

import io
import re
from typing import Any

import numpy as np
import pandas as pd

from yoloprof.analysis.configs import Configs, axis_text, fmt_value

MAX_SERIES = 10
MAX_BARS = 40
MAX_AXES = 4
PALETTE = ["#2f6fb0", "#e07b39", "#3a9a5b", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c",
           "#ccb974", "#64b5cd", "#1f3b73", "#a1522a"]


def _plt():
    import logging

    # matplotlib logs "generated new fontManager" at INFO on its first run; under a sweep Hydra's
    # root handler prints INFO as `[HYDRA] ...`: its warnings still show, its progress notes do not
    logging.getLogger("matplotlib").setLevel(max(logging.WARNING, logging.getLogger("matplotlib").level))
    import matplotlib
    from cycler import cycler  # matplotlib's own dependency (what matplotlib.cycler re-exports)

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.family": "sans-serif", "font.size": 10,
                         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
                         "grid.color": "#e3e6ea", "grid.linewidth": 0.8, "axes.edgecolor": "#9aa3ad",
                         "axes.titleweight": "bold", "axes.titlesize": 11, "legend.frameon": False,
                         "axes.prop_cycle": cycler(color=PALETTE)})
    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")  # constrained layout, done during this one draw
    _plt().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    # matplotlib gives fixed pt sizes; let CSS scale the figure to the column width
    return re.sub(r'<svg([^>]*?) width="([^"]*)" height="[^"]*"', r'<svg\1 class="fig" style="max-width:\2"',
                  text, count=1)


def metrics_vs_axes(gm: pd.DataFrame, cfg: Configs, metrics: list[tuple[str, str | None]]) -> str | None:
    """One figure for all metrics: a row per metric, a column per swept axis (at most MAX_AXES);
    in each panel the geometric mean with its CI, one line per combination of the other swept axes
    (at most MAX_SERIES). A series keeps its colour down a column, so the legend is drawn once, in
    the top row: one figure and one layout pass however many metrics and configurations."""
    axes = cfg.varying[:MAX_AXES]
    metrics = [(m, u) for m, u in metrics if (gm["metric"] == m).any()]
    if not axes or not metrics:
        return None
    plt = _plt()
    # values as the tables show them (import paths shortened when unambiguous)
    text = {a: axis_text(cfg.table, a) for a in cfg.varying}
    spelled = {a: dict(zip(cfg.table[a].map(fmt_value), text[a])) for a in axes}
    longest = max(len(t) for a in axes for t in spelled[a].values())
    tilt = longest > 40 / max(len(cfg.levels(a)) for a in axes)  # labels that would overlap: slanted
    # at least the page's width whatever the number of axes (one axis gave a 4-inch figure, its
    # title cut and its panel at 40% of the page); room below for slanted tick labels
    width, below = max(4.2 * len(axes), 11.0), 0.6 + (0.055 * min(longest, 40) if tilt else 0.0)
    height = 3.0 * len(metrics) + 0.4 + below
    fig, panels = plt.subplots(len(metrics), len(axes), figsize=(width, height), squeeze=False)
    # fixed margins (inches for tick labels and axis labels): a layout engine would measure every
    # text of the 4 x 3 panels once more, about a third of this figure's cost
    fig.subplots_adjust(left=0.8 / width, right=1 - 0.15 / width, bottom=below / height,
                        top=1 - 0.5 / height, wspace=0.3, hspace=0.4 + (below - 0.6) / 3.0)
    for col, axis in enumerate(axes):
        others = [a for a in cfg.varying if a != axis]
        keys = pd.Series("", index=cfg.table.index)
        for j, a in enumerate(others):  # "a=1, b=x": vectorised, one pass per axis
            keys = keys + ((", " if j else "") + f"{a}=") + text[a]
        levels = [spelled[axis][fmt_value(v)] for v in cfg.levels(axis)]
        x_all = text[axis].map({lv: i for i, lv in enumerate(levels)})
        colours: dict[str, str] = {}
        for row, (metric, unit) in enumerate(metrics):
            ax = panels[row][col]
            d = gm[gm["metric"] == metric].set_index("group_hash")[["gmean", "lo", "hi"]]
            t = cfg.table.join(d, how="inner")
            _series(ax, t, keys.loc[t.index], x_all.loc[t.index], colours)
            ax.set_xticks(range(len(levels)), levels, rotation=25 if tilt else 0)  # centred: none sticks out
            ax.set_xlim(-0.5, len(levels) - 0.5)
            ax.set_xlabel(axis)
            ax.set_ylabel(metric + (f" ({unit})" if unit else ""))
            if others and row == 0:
                ax.legend(fontsize=8, loc="upper left")  # "best" searches positions: slow with many lines
    fig.suptitle(f"metrics vs swept axes (geometric mean, {int(round(100 * 0.95))}% CI)", fontsize=11,
                 fontweight="bold", x=0.01, ha="left")
    return _svg(fig)


def _series(ax, t: pd.DataFrame, keys: pd.Series, x: pd.Series, colours: dict[str, str]) -> None:
    """The lines of one panel: a plain line plus one LineCollection of CI bars per series (much
    cheaper to draw and to list in a legend than errorbar's containers)."""
    xs, mean = x.to_numpy(dtype=float), t["gmean"].to_numpy(dtype=float)
    lo = np.where(np.isnan(t["lo"].to_numpy(dtype=float)), mean, t["lo"].to_numpy(dtype=float))
    hi = np.where(np.isnan(t["hi"].to_numpy(dtype=float)), mean, t["hi"].to_numpy(dtype=float))
    for series, idx in t.groupby(keys, sort=False).indices.items():
        if series not in colours:
            if len(colours) >= MAX_SERIES:
                continue
            colours[series] = PALETTE[len(colours) % len(PALETTE)]
        idx = idx[np.argsort(xs[idx], kind="stable")]
        c = colours[series]
        ax.plot(xs[idx], mean[idx], marker="o", ms=4, lw=1.6, color=c, label=series or None)
        ax.vlines(xs[idx], lo[idx], hi[idx], color=c, lw=1.2)


def stacked_bars(df: pd.DataFrame, part: str, value: str, title: str, order: list[str]) -> str | None:
    """Horizontal stacked bars per configuration (mean over its jobs), parts in a fixed order."""
    if df.empty or part not in df or value not in df:
        return None
    wide = df.groupby(["config", part], sort=False)[value].mean().unstack(part).fillna(0)
    wide = wide.reindex([c for c in order if c in wide.index])[:MAX_BARS]
    wide = wide[wide.sum().sort_values(ascending=False).index]
    if wide.empty or not (wide.to_numpy() > 0).any():
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.34 * len(wide)), layout="constrained")
    left = pd.Series(0.0, index=wide.index)
    for i, col in enumerate(wide.columns):
        ax.barh(range(len(wide)), wide[col], left=left, color=PALETTE[i % len(PALETTE)], label=str(col), height=0.7)
        left += wide[col]
    ax.set_yticks(range(len(wide)), wide.index)
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(value.replace("_", " "))
    ax.set_title(title, loc="left")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _svg(fig)


def pareto_chart(p: pd.DataFrame) -> str | None:
    """Throughput vs latency; marker area grows with memory; the Pareto set is highlighted."""
    axes = p.attrs.get("axes") or []
    if len(axes) < 2 or "pareto" not in p or len(p) < 2:
        return None
    lat = axes[1] if len(axes) > 1 and axes[1] != "peak_mem_mb" else None
    xcol, ycol = (lat, axes[0]) if lat else (axes[1], axes[0])
    d = p.dropna(subset=[xcol, ycol])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    size: Any = 40.0  # one size, or a Series of sizes by peak memory
    if "peak_mem_mb" in d and d["peak_mem_mb"].notna().any() and xcol != "peak_mem_mb":
        mem = d["peak_mem_mb"].fillna(d["peak_mem_mb"].min())
        size = 30 + 300 * (mem - mem.min()) / max(mem.max() - mem.min(), 1e-9)
    ax.scatter(d[xcol], d[ycol], s=size, color="#b8c2cc", edgecolor="#7d8790", label="dominated", zorder=2)
    front = d[d["pareto"]].sort_values(xcol)
    ax.scatter(front[xcol], front[ycol], s=size[front.index] if hasattr(size, "index") else size,
               color="#2f6fb0", edgecolor="#1f3b73", label="Pareto set", zorder=3)
    ax.plot(front[xcol], front[ycol], color="#2f6fb0", lw=1, alpha=0.6, zorder=1)
    for _, r in front.head(MAX_BARS).iterrows():
        ax.annotate(str(r["config"]), (r[xcol], r[ycol]), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlabel(f"{xcol} (lower is better)")
    ax.set_ylabel(f"{ycol} (higher is better)")
    extra = " - marker size = peak memory" if hasattr(size, "index") else ""
    ax.set_title(f"Pareto set: {', '.join(axes)}{extra}", loc="left")
    ax.legend(fontsize=8)
    return _svg(fig)
