"""`yoloprof report`: one capture's views as one self-contained HTML file (inline CSS and SVG, no
scripts, nothing fetched), a file a user can attach to an issue. Lays out what
`readers.capture_report` computed; every absent figure is "n/a" with its reason.
"""

from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any, Iterable

from yoloprof.defs.version import __version__
from yoloprof.render.fmt import NA, cut, fmt_num, fmt_pct
from yoloprof.render.html import CSS

SECTIONS = ("overview", "utilisation", "steps", "breakdown", "kernels", "launches", "ops", "memory",
            "modules", "phases", "recommendations")
COLORS = ("#2f6fb0", "#e07b39", "#3a9a5b", "#c44e52")
EXTRA_CSS = ".na{color:var(--muted);font-style:italic}tr.slow td{background:#fff4e5!important}"


def _na(reason: str | None) -> str:
    return f'<p class="na">{NA}: {escape(reason or "not measured")}</p>'


def _table(headers: list[str], rows: Iterable[list[Any]], num: Iterable[int] = (),
           row_class: Iterable[str] | None = None) -> str:
    num = set(num)
    head = "".join(f'<th class="num">{escape(h)}</th>' if i in num else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    classes = list(row_class) if row_class is not None else None
    body = []
    for k, r in enumerate(rows):
        cls = f' class="{classes[k]}"' if classes and classes[k] else ""
        cells = "".join(f'<td class="num">{escape(str(c))}</td>' if i in num else f"<td>{escape(str(c))}</td>"
                        for i, c in enumerate(r))
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<div class="box"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def line_svg(series: list[tuple[str, list[float], list[float]]], x_label: str, y_label: str,
             width: int = 1100, height: int = 260, y_max: float | None = None) -> str:
    """A step-line chart of each (label, xs, ys), axes with 5 ticks, a legend; inline SVG."""
    pts = [(x, y) for _, xs, ys in series for x, y in zip(xs, ys) if y is not None]
    if not pts:
        return _na("no points")
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y1 = y_max if y_max is not None else max(p[1] for p in pts) or 1.0
    L, R, T, B = 70, 20, 20, 45
    sx = lambda x: L + (x - x0) / ((x1 - x0) or 1.0) * (width - L - R)  # noqa: E731
    sy = lambda y: height - B - y / y1 * (height - T - B)  # noqa: E731
    out = [f'<svg class="fig" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" '
           f'role="img" aria-label="{escape(y_label)} over {escape(x_label)}">']
    for k in range(6):
        y = y1 * k / 5
        out.append(f'<line x1="{L}" x2="{width - R}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#e3e6ea"/>'
                   f'<text x="{L - 6}" y="{sy(y) + 4:.1f}" text-anchor="end" font-size="11">{fmt_num(y)}</text>')
        x = x0 + (x1 - x0) * k / 5
        out.append(f'<text x="{sx(x):.1f}" y="{height - B + 16}" text-anchor="middle" font-size="11">'
                   f'{fmt_num(x)}</text>')
    out.append(f'<text x="{(L + width - R) / 2}" y="{height - 8}" text-anchor="middle" font-size="12">'
               f'{escape(x_label)}</text><text x="14" y="{(T + height - B) / 2}" font-size="12" '
               f'transform="rotate(-90 14 {(T + height - B) / 2})" text-anchor="middle">{escape(y_label)}</text>')
    for i, (label, xs, ys) in enumerate(series):
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys) if y is not None)
        color = COLORS[i % len(COLORS)]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{path}"/>'
                   f'<rect x="{L + 10 + 190 * i}" y="4" width="12" height="4" fill="{color}"/>'
                   f'<text x="{L + 28 + 190 * i}" y="10" font-size="11">{escape(label)}</text>')
    return "".join(out) + "</svg>"


def _steps(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Bucket values as a staircase: each value held until the next bucket starts."""
    sx, sy = [], []
    for i, (x, y) in enumerate(zip(xs, ys)):
        nxt = xs[i + 1] if i + 1 < len(xs) else x + (x - xs[i - 1] if i else 1.0)
        sx += [x, nxt]
        sy += [y, y]
    return sx, sy


def _overview(r: dict) -> str:
    s = r["summary"]
    cards = [(f["label"], f"{fmt_num(f['value'])} {f.get('unit', '')}" if f.get("value") is not None else NA)
             for f in s.get("headline", [])[:6]]
    for dev in ((r.get("detail") or {}).get("gpu") or {}).get("overall", []):
        cards += [(f"GPU {dev['device']} utilisation", fmt_pct(dev["gpu_util_pct"])),
                  (f"GPU {dev['device']} est. SM efficiency", fmt_pct(dev["sm_efficiency_pct"])),
                  (f"GPU {dev['device']} est. achieved occupancy", fmt_pct(dev["occupancy_pct"]))]
    tc = (r.get("detail") or {}).get("tensor_cores")
    if tc:
        cards += [("TC-eligible kernel time", fmt_pct(tc["eligible_pct"])),
                  ("of it on Tensor Cores", fmt_pct(tc["eligible_tc_pct"]))]
    v = s.get("verdict") or {}
    html = '<div class="cards">' + "".join(
        f'<div class="card"><div class="k">{escape(k)}</div><div class="v">{escape(val)}</div></div>'
        for k, val in cards) + "</div>"
    html += (f'<div class="box"><b>verdict: {escape(str(v.get("bound", "unknown")))}</b> - '
             f'{escape(str(v.get("why", "")))}</div>')
    if s.get("warnings"):
        html += '<ul class="notes">' + "".join(f'<li class="warn">{escape(w)}</li>' for w in s["warnings"]) + "</ul>"
    return html


def _utilisation(r: dict) -> str:
    d = r.get("detail")
    if not d:
        return _na(r.get("detail_na"))
    if not d["timeline"]:
        return _na("no GPU kernels in the trace (CPU capture): no utilisation timeline")
    parts = []
    for t in d["timeline"]:
        series = [("GPU utilisation %", *_steps(t["t_ms"], t["util_pct"]))]
        if t["sm_efficiency_pct"] is not None:
            series.append(("est. SM efficiency %", *_steps(t["t_ms"], t["sm_efficiency_pct"])))
        if t.get("occupancy_pct") is not None:
            series.append(("est. achieved occupancy %", *_steps(t["t_ms"], t["occupancy_pct"])))
        parts.append(f"<h3>GPU {t['device']}</h3>" + line_svg(series, "ms from the trace start", "%", y_max=100.0))
    return "".join(parts)


def _steps_view(r: dict) -> str:
    rows = r["steps"]["steps"]
    if not rows:
        return _na("no per-step rows in this profile")
    headers = ["step", "step ms", "device busy ms", "kernels", "phases (ms)", "SM eff.", "occupancy"]
    body = []
    for row in rows:
        devs = row.get("devices") or []
        step = "whole trace" if row.get("step") is None else row["step"]
        body.append([step, fmt_num(row.get("step_ms")), fmt_num(row.get("device_busy_ms")), fmt_num(row.get("kernels")),
                     ", ".join(f"{k} {fmt_num(v)}" for k, v in (row.get("phases") or {}).items() if v),
                     " / ".join(fmt_pct(x["sm_efficiency_pct"]) for x in devs) or NA,
                     " / ".join(fmt_pct(x["occupancy_pct"]) for x in devs) or NA])
    return _table(headers, body, num=(1, 2, 3), row_class=["slow" if x.get("slowest") else "" for x in rows]) + \
        (f'<p class="sub">slowest step: {escape(str(r["steps"]["slowest"]))} (highlighted)</p>'
         if r["steps"]["slowest"] is not None else "")


def _breakdown(r: dict) -> str:
    d = r.get("detail")
    if not d:
        return _na(r.get("detail_na"))
    b = d["breakdown"]
    headers = ["step"] + [f"{x} ms" for x in b["roles"]] + ["total ms", "comm. hidden"]
    rows = [[s["step"]] + [fmt_num(s[f"{x}_ms"]) for x in b["roles"]] + [fmt_num(s["total_ms"]),
            fmt_pct(s["overlap"]["hidden_pct"])] for s in b["steps"]]
    return ('<p class="sub">torch-tb-profiler\'s breakdown (each instant to the first role covering '
            'it); yoloprof\'s own device busy time is in the step table above.</p>'
            + _table(headers, rows, num=range(1, len(headers))))


def _kernels(r: dict) -> str:
    k = r["kernels"]
    if not k["kernels"]:
        return _na("; ".join(k.get("warnings") or []) or "no device kernels")
    means = {x["name"]: x for x in ((r.get("detail") or {}).get("gpu") or {}).get("kernels", [])}
    rows = [[cut(x.get("short_name") or x["name"], 60), x.get("category"), fmt_num(x.get("ms_per_step")),
             fmt_pct(x.get("pct")), fmt_num(x.get("count_per_step")),
             fmt_num(means.get(x["name"], {}).get("mean_blocks_per_sm")),
             fmt_num(means.get(x["name"], {}).get("mean_occupancy_pct"))] for x in k["kernels"]]
    return _table(["kernel", "category", "ms/step", "share", "calls/step", "mean blocks/SM", "mean occupancy %"],
                  rows, num=(2, 3, 4, 5, 6))


def _launches(r: dict) -> str:
    d = r.get("detail")
    if not d:
        return _na(r.get("detail_na"))
    if not d["launches"]:
        return _na("no kernels in the trace")
    rows = [[cut(x["name"], 50), x["op"], x["grid"] or NA, x["block"] or NA, fmt_num(x["registers_per_thread"]),
             fmt_num(x["shared_memory"]), x["calls"], fmt_num(x["total_ms"]), fmt_num(x["mean_blocks_per_sm"]),
             fmt_num(x["mean_occupancy_pct"])] for x in d["launches"]]
    return _table(["kernel", "calling op", "grid", "block", "regs/thread", "shared mem B", "calls", "total ms",
                   "mean blocks/SM", "occupancy %"], rows, num=(4, 5, 6, 7, 8, 9))


def _ops(r: dict) -> str:
    o = r["ops"]
    if not o.get("ops"):
        return _na("no ops in this profile")
    rows = [[cut(x["name"], 60), x.get("phase") or "", fmt_num(x.get("self_ms_per_step")),
             fmt_num(x.get("total_ms_per_step")), fmt_num(x.get("count_per_step")), fmt_pct(x.get("pct"))]
            for x in o["ops"]]
    return _table(["op", "phase", "self ms/step", "total ms/step", "calls/step", "share"], rows, num=(2, 3, 4, 5))


def _memory(r: dict) -> str:
    d = r.get("detail")
    if not d:
        return _na(r.get("detail_na"))
    if not d["memory"]:
        return _na("the trace has no [memory] events (record with profile_memory=True)")
    parts = []
    for m in d["memory"]:
        xs = [p[0] for p in m["points"]]
        p = m["peak"]
        parts.append(f"<h3>{escape(m['device'])}</h3>" + line_svg(
            [("allocated MiB", xs, [q[1] for q in m["points"]]), ("reserved MiB", xs, [q[2] for q in m["points"]])],
            "ms from the trace start", "MiB")
            + f'<p>peak allocated {fmt_num(p["allocated_mib"])} MiB at {fmt_num(p["t_ms"])} ms, in op '
              f'<b>{escape(str(p["op"] or NA))}</b>, module <b>{escape(str(p["module"] or NA))}</b>; '
              f'peak reserved {fmt_num(p["reserved_mib"])} MiB</p>')
    return "".join(parts)


def _modules(r: dict) -> str:
    m = r.get("modules")
    if not m:
        return _na(r.get("modules_na"))
    rows = [[("  " * int(x.get("depth") or 0)) + str(x.get("name") or x.get("module")), x.get("type", ""),
             fmt_num(x.get("forward_ms")), fmt_num(x.get("backward_ms"))] for x in m.get("modules") or []]
    return _table(["module", "type", "forward ms", "backward ms"], rows, num=(2, 3)) if rows else _na("no modules")


def _phases(r: dict) -> str:
    p = r["phases"]
    if not p.get("phases"):
        return _na("no phases in this profile")
    rows = [[x["phase"], fmt_num(x.get("wall_ms_per_step")), fmt_num(x.get("device_ms_per_step")),
             fmt_num(x.get("kernels_per_step")), fmt_num(x.get("ops_per_step"))] for x in p["phases"]]
    return _table(["phase", "wall ms/step", "device ms/step", "kernels/step", "ops/step"], rows, num=(1, 2, 3, 4))


def _recommendations(r: dict) -> str:
    a = r["advice"]
    if not a["recommendations"]:
        return '<p class="na">no recommendation fires for this capture</p>'
    items = []
    for x in a["recommendations"]:
        w = x.get("what_if")
        est = (f"what-if: step {fmt_num(w.get('step_ms'))} ms -> {fmt_num(w.get('predicted_step_ms'))} ms "
               f"({fmt_num(w.get('speedup'))}x)" if w else f"what-if: {NA} ({x.get('what_if_na')})")
        ev = ", ".join(f"{k}={fmt_num(v) if isinstance(v, (int, float)) else v}" for k, v in x["evidence"].items())
        items.append(f"<li><b>{escape(x['rule'])}</b>: {escape(x['advice'])}<span class='detail'>evidence: "
                     f"{escape(ev)}</span><span class='detail'>{escape(est)}</span>"
                     + (f"<span class='detail'>try: <code>{escape(x['try'])}</code></span>" if x.get("try") else "")
                     + "</li>")
    return '<ul class="notes">' + "".join(items) + "</ul>"


VIEWS = {"overview": _overview, "utilisation": _utilisation, "steps": _steps_view, "breakdown": _breakdown,
         "kernels": _kernels, "launches": _launches, "ops": _ops, "memory": _memory, "modules": _modules,
         "phases": _phases, "recommendations": _recommendations}
TITLES = {"overview": "Overview", "utilisation": "GPU utilisation timeline", "steps": "Steps",
          "breakdown": "Step breakdown (TensorBoard plugin's definition)", "kernels": "Kernels",
          "launches": "Kernels by launch", "ops": "Ops", "memory": "Memory timeline", "modules": "Modules",
          "phases": "Phases", "recommendations": "Recommendations"}


def render_capture_html(report: dict[str, Any]) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = "".join(f'<section id="{s}"><h2>{TITLES[s]}</h2>{VIEWS[s](report)}</section>' for s in SECTIONS)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>yoloprof report: '
            f'{escape(report["source"])}</title><style>{CSS}{EXTRA_CSS}</style></head><body><main>'
            f'<h1>yoloprof report</h1><p class="sub">{escape(report["source"])}</p>{body}'
            f"<footer>yoloprof {escape(__version__)}, {now}</footer></main></body></html>")
