"""`analysis/report.html`: one self-contained file (inline CSS, inline SVG figures, no scripts, no
fonts or anything fetched from the network) that a person can open offline, mail or attach to CI.
"""

from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any, Collection

import pandas as pd

from yoloprof.render.fmt import (NA, COMPARISON_HEADERS, RATIO_NOTE, VERDICT_STYLE, comparison_cells, fmt_in, fmt_num, fmt_p,
                                   fmt_ratio)

CSS = """
:root{--fg:#1d232b;--muted:#5b6573;--line:#e3e6ea;--bg:#f6f7f9;--card:#fff;--accent:#2f6fb0}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 -apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,"DejaVu Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 60px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:34px 0 10px;padding-bottom:6px;
border-bottom:2px solid var(--line)}
.sub{color:var(--muted);margin:0 0 18px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:18px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 16px;min-width:140px}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:22px;font-weight:600}
.box{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 16px;overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;font-weight:600;color:var(--muted);border-bottom:2px solid var(--line);padding:7px 10px;
white-space:nowrap}
td{border-bottom:1px solid var(--line);padding:6px 10px;vertical-align:top}
tr:nth-child(even) td{background:#fafbfc}
th.num,td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:12px;font-weight:600;white-space:nowrap}
.detail{display:block;color:var(--muted);font-size:12px}
.fig{width:100%;height:auto;display:block;margin:6px 0 14px}
ul.notes{margin:0;padding-left:20px}ul.notes li{margin:3px 0}
li.warn{color:#8a5a00}
.legend span{margin-right:14px}
footer{color:var(--muted);font-size:12px;margin-top:40px}
"""


def _badge(code: str, text: str) -> str:
    _, bg, fg = VERDICT_STYLE.get(code, ("", "#eee", "#333"))
    return f'<span class="badge" style="background:{bg};color:{fg}">{escape(text)}</span>'


def _table(headers: list[str], rows: list[list[str]], numeric: Collection[int] = frozenset()) -> str:
    """rows hold already-escaped HTML cells."""
    head = "".join(f'<th class="num">{escape(h)}</th>' if i in numeric else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f'<div class="box"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _comparison_rows(cmp: pd.DataFrame) -> list[list[str]]:
    out = []
    for r in cmp.to_dict("records"):
        cells = [escape(c) for c in comparison_cells(r)]
        verdict = _badge(r["verdict_code"], str(r["verdict"]))
        detail = comparison_cells(r)[-1][len(str(r["verdict"])):].strip()
        warn = str(r.get("warnings") or "")
        extra = " ".join(x for x in (detail, warn) if x)
        cells[-1] = verdict + (f'<span class="detail">{escape(extra)}</span>' if extra else "")
        out.append(cells)
    return out


def _cards(result: Any) -> str:
    cmp = result.comparisons
    counts = cmp["verdict_code"].value_counts() if not cmp.empty else pd.Series(dtype=int)
    items = [("configurations", len(result.configs)), ("jobs ok", result.jobs.get("ok", 0)),
             ("jobs failed", result.jobs.get("failed", 0)), ("comparisons", len(cmp)),
             ("improved", int(counts.get("improved", 0))), ("regressed", int(counts.get("regressed", 0)))]
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="k">{escape(k)}</div><div class="v">{v}</div></div>' for k, v in items) + "</div>"


def _best_html(best: pd.DataFrame) -> str:
    rows = []
    for _, b in best.iterrows():
        sig = {True: "yes", False: "no"}.get(b.get("significant"), NA)
        value = fmt_in(b["value"], b.get("unit"))
        rows.append([escape(str(b["metric"])), f"<b>{escape(str(b['best']))}</b>", value,
                     escape(str(b["runner_up"] or NA)), fmt_ratio(b["margin"], b["ci_low"], b["ci_high"]),
                     fmt_p(b["p"]), sig])
    return _table(["metric", "best", "value", "runner-up", "margin [CI]", "p", "significant"], rows, {2, 4, 5})


def _pareto_html(p: pd.DataFrame) -> str:
    axes = p.attrs.get("axes") or []
    front = p[p["pareto"]] if "pareto" in p else p.iloc[0:0]
    if front.empty or not axes:
        return ""
    rows = [[escape(str(r["config"]))] + [fmt_num(r[a]) for a in axes] for _, r in front.iterrows()]
    return _table(["config"] + axes, rows, set(range(1, len(axes) + 1)))


def _figures(result: Any) -> list[tuple[str, str]]:
    from yoloprof.render import plots
    from yoloprof.analysis.configs import Configs
    from yoloprof.analysis.tables import metric_meta

    cfg = Configs(result.configs.set_index("group_hash", drop=False), [], result.varying)
    meta = metric_meta(result.tables["metrics"])
    shown = [(m, meta[m][1]) for m in dict.fromkeys(result.metrics_compared + ["img_per_s"]) if m in meta]
    figs = [("metrics vs swept axes", plots.metrics_vs_axes(result.gmeans, cfg, shown))]
    order = list(result.configs["config"])
    figs.append(("phases", plots.stacked_bars(result.tables["phases"], "phase", "wall_ms_per_step",
                                              "phase wall time per step (ms)", order)))
    cats = plots.stacked_bars(result.tables["categories"], "category", "device_ms_per_step",
                              "device time by kernel category (ms/step)", order)
    if cats is None:  # CPU sweeps have no device kernels: show where host time goes instead
        cats = plots.stacked_bars(_top_ops(result.tables["ops"]), "name", "self_ms_per_step",
                                  "CPU self time of the top ops (ms/step)", order)
    figs.append(("kernel categories or top ops", cats))
    figs.append(("pareto", plots.pareto_chart(result.pareto)))
    return [(t, s) for t, s in figs if s]


def _caps_note() -> str:
    from yoloprof.render import plots

    return (f"Plots are capped so that they stay readable (the tables above and the parquet files hold "
            f"everything): at most {plots.MAX_AXES} swept axes, {plots.MAX_SERIES} lines per panel, "
            f"{plots.MAX_BARS} configurations per bar chart and {plots.MAX_BARS} labels on the Pareto chart.")


def _top_ops(ops: pd.DataFrame, n: int = 8) -> pd.DataFrame:
    """The n ops with the most self time over the sweep; everything else summed as "other"."""
    if ops.empty or "self_ms_per_step" not in ops or "name" not in ops:
        return ops
    top = ops.groupby("name")["self_ms_per_step"].sum().nlargest(n).index
    ops = ops.assign(name=ops["name"].where(ops["name"].isin(top), "other"))
    return ops.groupby(["config", "job_id", "name"], as_index=False)["self_ms_per_step"].sum()


def _notes(result: Any) -> str:
    items = [f'<li class="warn">{escape(w)}</li>' for w in result.warnings]
    items += [f"<li>{escape(n)}</li>" for n in result.notes]
    return f'<ul class="notes">{"".join(items)}</ul>' if items else "<p>None.</p>"


def _settings_text(s: dict) -> str:
    return "; ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in s.items()
                     if v not in (None, []))


def render_report(result: Any) -> str:
    """The whole report for an AnalysisResult, as one HTML string."""
    s = result.settings
    cmp = result.comparisons
    figs = _figures(result)
    parts = [f"<h1>Sweep analysis: {escape(result.title)}</h1>",
             f'<p class="sub">{escape(result.baseline)}. Swept axes: {escape(", ".join(result.varying) or "none")}. '
             f"alpha {s['alpha']}, noise threshold {s['noise']:.0%}, {escape(s['correction'])} correction; "
             "ratio &gt; 1 means better.</p>",
             f'<p class="sub">Analysis <b>{escape(result.name)}</b> ({escape(_settings_text(s))}); '
             f"reproduce with: <code>{escape(result.command or '-')}</code></p>",
             _cards(result), f"<h2>Comparisons</h2><p>{escape(RATIO_NOTE)}</p>"]
    parts.append(_table(COMPARISON_HEADERS, _comparison_rows(cmp), {2, 3, 4, 5, 6}) if not cmp.empty
                 else "<p>No comparisons: one configuration only, or no baseline pairs.</p>")
    if not result.best.empty:
        parts += ["<h2>Best configuration per metric</h2>", _best_html(result.best)]
    pareto_html = _pareto_html(result.pareto)
    if pareto_html:
        parts += [f"<h2>Pareto set ({escape(', '.join(result.pareto.attrs.get('axes', [])))})</h2>", pareto_html]
    if not result.scaling.empty:
        parts += ["<h2>Scaling</h2>", '<ul class="notes">' + "".join(
            f"<li><b>{escape(r['axis'])}</b> ({escape(str(r['series']))}): {escape(r['note'])}</li>"
            for _, r in result.scaling.iterrows()) + "</ul>"]
    if figs:
        parts.append("<h2>Plots</h2>")
        parts.append(f'<p class="sub">{escape(_caps_note())}</p>')
        parts += [f'<div class="box" aria-label="{escape(t)}">{svg}</div><br>' for t, svg in figs]
    parts += ["<h2>Warnings and notes</h2>", _notes(result)]
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(f"<footer>yoloprof analyze - {escape(stamp)} - jobs: "
                 + escape(", ".join(f"{k} {v}" for k, v in result.jobs.items())) + "</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>yoloprof sweep analysis: {escape(result.title)}</title><style>{CSS}</style>"
            f"</head><body><main>{''.join(parts)}</main></body></html>\n")
