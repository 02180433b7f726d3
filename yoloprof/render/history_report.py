"""Printing `yoloprof history` and `yoloprof gate` results (analysis/history.py, analysis/gate.py):
terminal tables, and a self-contained HTML page (inline CSS and SVG, like render/html.py) with one
plot per series: the per-commit values, the segment means and the change points.
"""

from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any

from yoloprof.render._out import Out
from yoloprof.render.fit import abbreviate
from yoloprof.render.fmt import NA, fmt_num, fmt_p, fmt_ratio, missing

MAX_SERIES_ROWS = 40  # series listed per machine in the terminal (--json has them all)
MAX_PLOTS = 24  # series plotted in the HTML page: those with change points first


def short(commit: Any) -> str:
    text = "" if commit is None else str(commit)
    return text if text.startswith("capture@") else text[:10]


def fmt_change(cp: dict[str, Any]) -> str:
    """'+6.1% [+4.0, +8.3]': the step as a change of the metric, with its interval."""
    pct = cp.get("change_pct")
    if missing(pct):
        return NA
    text = f"{pct:+.1f}%"
    if not missing(cp.get("ci_low")) and not missing(cp.get("ci_high")):
        text += f" [{100 * (cp['ci_low'] - 1):+.1f}, {100 * (cp['ci_high'] - 1):+.1f}]"
    return text


def attribution(cp: dict[str, Any]) -> str:
    """The commit, or the range since the previous captured commit when captures are missing."""
    if cp.get("exact") or cp.get("range") is None:
        return short(cp["commit"])
    n = cp.get("commits_in_range")
    return f"{short(cp['previous'])}..{short(cp['commit'])}" + (f" ({n} commits)" if n else " (commits between unknown)")


def likely(cp: dict[str, Any]) -> str:
    if cp.get("likely_commits", 1) <= 1:
        return short(cp["likely_first"])
    return f"{short(cp['likely_first'])}..{short(cp['likely_last'])} ({cp['likely_commits']} captured)"


def _fingerprint(machine: dict[str, Any]) -> str:
    fp = machine.get("fingerprint") or {}
    return ", ".join(f"{k}={fp.get(k)}" for k in fp)


def render_history(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    better = {"lower": "lower is better", "higher": "higher is better"}.get(str(result.get("better")), "no direction")
    out.title(f"yoloprof history: {result['project']}",
              f"metric {result['metric']} ({result.get('unit') or ''}, {better}); {result['rows']} captures")
    if not result["machines"]:
        out.line("no stored captures match")
    for m in result["machines"]:
        out.line(f"machine {m['machine']}: {_fingerprint(m)}; hosts: {', '.join(m['hostnames']) or NA}")
        series = sorted(m["series"], key=lambda s: (-len(s["change_points"]), s["config"]))
        # labels abbreviated together, keeping what tells them apart (render.fit), never cut blind
        label = dict(zip((s["config"] for s in series), abbreviate([s["config"] for s in series], 56)))
        rows = [[label[s["config"]], s["config_key"][:8], s["captures"], s["commits"], s["order"],
                 fmt_num(s["points"]["mean"][-1]),
                 f"{100 * s['noise_cv']:.1f}%" if s.get("noise_cv") is not None else NA, len(s["change_points"])]
                for s in series[:MAX_SERIES_ROWS]]
        out.table(["configuration", "key", "captures", "commits", "order", "last", "noise", "changes"], rows,
                  title="series", right=(2, 3, 5, 6, 7), shrink=0)
        if len(series) > MAX_SERIES_ROWS:
            out.note(f"{len(series) - MAX_SERIES_ROWS} more series (--json lists them all)")
        cps = [(s, cp) for s in series for cp in s["change_points"]]
        if cps:
            out.table(["configuration", "came with", "likely commits", "change [95% CI]", "p", "what"],
                      [[label[s["config"]], attribution(cp), likely(cp), fmt_change(cp), fmt_p(cp["p"]),
                        cp.get("direction") or "change"] for s, cp in cps], title="change points", shrink=0)
        quiet = [s for s in series[:MAX_SERIES_ROWS] if s.get("detectable")]
        for s in quiet:  # what each series without a change point could have found
            out.note(f"{label[s['config']]}: {s['detectable']['words']}" if len(quiet) > 1
                     else s["detectable"]["words"])
    for note in result.get("notes") or []:
        out.note(note)
    for why, n in (result.get("excluded") or {}).items():
        out.note(f"left out: {n} capture(s), {why}")


def render_gate(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    out.title(f"yoloprof gate: {', '.join(result['new'])} against {result['project']}",
              f"machine {result['machine']}; baseline: the last {result['window']} captures of this configuration "
              f"since its last change point")
    rows = []
    for j in result["judgements"]:
        since = f" since {short(j['baseline_since_change'])}" if j.get("baseline_since_change") else ""
        rows.append([j["metric"], fmt_num(j["baseline_mean"]), fmt_num(j["new_mean"]),
                     f"{j['baseline_n']} ({j['baseline_commits']} commits{since})",
                     f"{100 * j['noise_cv']:.1f}%" if j.get("noise_cv") is not None else NA,
                     fmt_ratio(j["ratio"], j.get("ci_low"), j.get("ci_high")), fmt_p(j.get("p")), j["verdict"]])
    out.table(["metric", "baseline", "new", "baseline captures", "noise", "ratio (>1 better) [CI]", "p", "verdict"],
              rows, right=(1, 2, 4, 6))
    for j in result["judgements"]:  # what an inconclusive judgement could have seen
        if j.get("detectable"):
            out.note(f"{j['metric']} inconclusive: {j['detectable']}")
    if result.get("config_key") is None:
        out.note("no stored history of this configuration on this machine: nothing to judge against")
    for note in result.get("notes") or []:
        out.note(note)


# ---- HTML --------------------------------------------------------------------------------------
def _plot(series: dict[str, Any], unit: str) -> str | None:
    from yoloprof.render import plots

    plt = plots._plt()
    pts = series["points"]
    x = list(range(len(pts["mean"])))
    fig, ax = plt.subplots(figsize=(8.5, 2.6), layout="constrained")
    ax.vlines(x, pts["min"], pts["max"], color="#b8c2cc", linewidth=1)
    ax.plot(x, pts["mean"], "o", markersize=3, color=plots.PALETTE[0])
    bounds = [0, *(cp["index"] for cp in series["change_points"]), len(x)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = pts["mean"][a:b]
        if seg:
            ax.hlines(sum(seg) / len(seg), a - 0.4, b - 0.6, color=plots.PALETTE[1], linewidth=2)
    for cp in series["change_points"]:
        ax.axvline(cp["index"] - 0.5, color=plots.PALETTE[3], linestyle="--", linewidth=1)
        ax.annotate(f"{short(cp['commit'])} {fmt_change(cp).split(' ')[0]}", (cp["index"] - 0.5, ax.get_ylim()[1]),
                    fontsize=8, color=plots.PALETTE[3], ha="left", va="top")
    ax.set_xlabel(f"commit ({series['order']} order)")
    ax.set_ylabel(unit or "")
    return plots._svg(fig)


def render_history_html(result: dict[str, Any]) -> str:
    from yoloprof.render.html import CSS

    parts = [f"<h1>yoloprof history</h1><p class='sub'>{escape(result['project'])}: metric "
             f"{escape(result['metric'])} ({escape(str(result.get('unit') or ''))}), {result['rows']} captures; "
             f"series from different machines are never mixed</p>"]
    plotted = 0
    for m in result["machines"]:
        parts.append(f"<h2>machine {escape(m['machine'])}</h2><p class='sub'>{escape(_fingerprint(m))}</p>")
        for s in sorted(m["series"], key=lambda s: (-len(s["change_points"]), s["config"])):
            if plotted >= MAX_PLOTS:
                break
            cps = "; ".join(f"{attribution(cp)} {fmt_change(cp)} ({cp.get('direction') or 'change'})"
                            for cp in s["change_points"]) or (s.get("detectable") or {}).get("words", "no change points")
            svg = _plot(s, str(result.get("unit") or ""))
            parts.append(f"<div class='box'><b>{escape(s['config'])}</b><span class='detail'>{s['captures']} "
                         f"captures, {s['commits']} commits; {escape(cps)}</span>{svg or ''}</div>")
            plotted += 1
    notes = [*result.get("notes", []), *(f"left out: {n} capture(s), {w}" for w, n in result.get("excluded", {}).items())]
    if notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>yoloprof history</title>"
            f"<style>{CSS}</style></head><body><main>{''.join(parts)}<footer>written {stamp}; at most "
            f"{MAX_PLOTS} series are plotted (--json has all)</footer></main></body></html>")
