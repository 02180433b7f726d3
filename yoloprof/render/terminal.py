"""Terminal rendering of the readers' results: rich tables when stdout is a terminal, plain aligned
text when piped (see `render._out`). Every function takes the dict a reader returned and prints;
nothing here computes a figure, so `--json` and the terminal always agree.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from yoloprof.config.stat_defaults import ALPHA
from yoloprof.render._out import Out
from yoloprof.render.fmt import NA, cut, fmt_count, fmt_in, fmt_named, fmt_num, fmt_p, fmt_pct, fmt_ratio, fmt_val


def _figure_text(f: dict[str, Any]) -> str:
    if f.get("value") is None:
        return f"{NA} ({f.get('na', 'not recorded')})"
    text = fmt_val(f["value"], f.get("unit", ""))
    if (f.get("n") or 0) >= 2 and f.get("std") is not None:
        text += f"  (+-{fmt_num(f['std'])}, n={f['n']})"
    return text


def _warnings(out: Out, warnings: list[str] | None) -> None:
    for w in dict.fromkeys(warnings or []):
        out.warn(w)


def render_summary(result: dict[str, Any], source: str | None = None, out: Out | None = None) -> None:
    out = out or Out()
    wl = dict(result.get("workload") or {})
    asked = wl.pop("device_asked", None)
    if asked and "device" in wl:  # `device=cpu (auto)`: what ran, and that auto chose it
        wl["device"] = f"{wl['device']} ({asked})"
    sub = ", ".join(f"{k}={v}" for k, v in wl.items())
    out.title(f"yoloprof summary: {source or 'profile'} [{result.get('kind')}]", sub or None)
    if result.get("unreliable"):
        out.warn(f"UNRELIABLE: memory thrashing - {result['unreliable']['why']}")
    out.kv([(f["label"], _figure_text(f)) for f in result.get("headline", [])], title="headline")
    v = result.get("verdict") or {}
    whose = f" ({v['by']})" if v.get("by") else ""  # another tool's verdict, passed through (readers.summary)
    out.line(f"verdict{whose}: {v.get('bound', 'unknown')} - {v.get('why', '')}".rstrip(" -"))
    ev = v.get("evidence") or {}
    if ev:
        out.line("  evidence: " + ", ".join(f"{k}={fmt_named(k, x) if isinstance(x, (int, float)) else x}"
                                            for k, x in ev.items()))
    for a in result.get("advice") or []:
        out.line(f"advice: {a['advice']}; try: {a['try']}")
    _render_latency(out, result)
    if result.get("device_time"):
        out.kv([(f["label"], _figure_text(f)) for f in result["device_time"]], title="device time per step")
    if result.get("devices"):
        out.table(["device", "busy ms/step", "utilisation"],
                  [[str(d["device"]), fmt_num(d["busy_ms_per_step"]), fmt_pct(d["util_pct"])]
                   for d in result["devices"]], title="per device", right=(1, 2))
    if result.get("categories"):
        out.table(["category", "ms/step", "share"],
                  [[c["category"], fmt_num(c["device_ms_per_step"]), fmt_pct(c.get("pct"))]
                   for c in result["categories"]], title="device time by category", right=(1, 2))
    if result.get("top_kernels"):
        out.table(["kernel", "category", "TC", "ms/step", "share", "calls/step"],
                  [[cut(k.get("short_name") or k.get("name"), 50), k.get("category"),
                    "yes" if k.get("tensorcore") else "", fmt_num(k.get("ms_per_step")),
                    fmt_pct(k.get("pct")), fmt_count(k.get("count_per_step"))]
                   for k in result["top_kernels"]], title="top kernels", right=(3, 4, 5))
    _render_recipe(out, result.get("train_recipe"))
    _render_warmup(out, result.get("warmup"))
    trace = result.get("trace") or {}
    if trace.get("steps_analyzed"):
        out.note(f"trace: {trace['steps_analyzed']} step(s) analysed over {fmt_num(trace.get('window_ms'))} ms")
    _warnings(out, result.get("warnings"))


WARMUP_STATES = {"steady": "steady state reached in every trial",
                 "not_tested": "steady state not tested (fewer measured steps than the test needs)"}


def _render_recipe(out: Out, recipe: dict[str, Any] | None) -> None:
    """One line: whose training step ran, its optimizer, clipping, EMA and accumulation."""
    if not recipe:
        return
    parts = [f"{recipe['optimizer']} ({recipe['groups']} parameter group(s))"]
    if recipe.get("clip_max_norm") is not None:
        parts.append(f"clip grad norm {fmt_num(recipe['clip_max_norm'])}")
    if recipe.get("ema"):
        parts.append("EMA")
    every = recipe.get("optimizer_every") or 1
    if every > 1:
        parts.append(f"the trainer's optimizer runs every {every} steps (timed every step; amortised step "
                     f"{fmt_num(recipe.get('amortised_step_ms'))} ms)")
    out.line(f"training step: {recipe['source']}: " + ", ".join(parts))


def _render_warmup(out: Out, warmup: dict[str, Any] | None) -> None:
    """One line: the warm-up steps each trial used, their bounds, and whether each reached steady
    step times (readers/summary.py warmup_used)."""
    if not warmup:
        return
    if warmup["state"] == "unknown":
        out.line(f"warm-up: n/a ({warmup['reason']})")
        return
    steps = ", ".join(str(n) for n in warmup["steps"])
    state = WARMUP_STATES.get(warmup["state"]) or "not steady at the cap in trial(s) " + ", ".join(
        str(i + 1) for i, f in enumerate(warmup["steady"]) if f is False)
    bounds = f"at least {warmup['min']}, at most {warmup['max']}"
    out.line(f"warm-up: {steps} step(s) per trial ({bounds}): {state}")


def _interval(ci: Any) -> str:
    """" [low, high]" of a percentile's 95% interval; an end no call reaches reads n/a."""
    return f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]" if isinstance(ci, list) and len(ci) == 2 else ""


def _render_latency(out: Out, result: dict[str, Any]) -> None:
    lat = result.get("latency")
    if lat:
        keys = [k for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "min_ms", "max_ms") if k in lat]
        line = "  ".join(f"{k[:-3]} {fmt_num(lat[k])}{_interval(lat.get(k[:-3] + '_ci_ms'))}" for k in keys)
        out.line(f"latency (ms): {line}" + (f"  (n={lat['n']})" if lat.get("n") else ""))
    stages = result.get("stages")
    if stages:
        out.table(["stage", "ms", "share"],
                  [[s["stage"], fmt_num(s.get("ms")), fmt_pct(None if s.get("share") is None else 100 * s["share"])]
                   for s in stages], title="inference stages", right=(1, 2))


def _scalar_text(v: Any) -> str:
    """A value as a shell wants it: full precision, JSON words for booleans and null."""
    if v is None:
        return NA
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def render_get(result: dict[str, Any], out: Out | None = None) -> None:
    """One field: just the value on stdout (`$(yoloprof get p.json img_per_s)`); no field: the list."""
    if "fields" not in result:
        print(_scalar_text(result.get("value")))
        if result.get("value") is None and result.get("na"):
            print(f"yoloprof: note: {result['field']} is n/a: {result['na']}", file=sys.stderr)
        elif result.get("source"):  # another tool's figure, passed through (readers.libreyolo_names)
            print(f"yoloprof: note: {result['field']} is {result['source']}'s own figure, not yoloprof's",
                  file=sys.stderr)
        return
    out = out or Out()
    out.table(["field", "value", "unit"],
              [[f["field"], cut(_scalar_text(f["value"]), 60), f.get("unit", "")] for f in result["fields"]],
              right=(1,))


def render_phases(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    rows = [[p["phase"], fmt_num(p["wall_ms_per_step"]), fmt_pct(None if p.get("wall_share") is None
                                                                 else 100 * p["wall_share"]),
             fmt_num(p["device_ms_per_step"]), fmt_count(p["kernels_per_step"]), fmt_count(p["ops_per_step"])]
            for p in result.get("phases", [])]
    t = result.get("totals") or {}
    if rows:
        rows.append(["total", fmt_num(t.get("wall_ms_per_step")), "", fmt_num(t.get("device_ms_per_step")),
                     fmt_count(t.get("kernels_per_step")), fmt_count(t.get("ops_per_step"))])
        out.table(["phase", "wall ms", "of step", "device ms", "kernels", "ops"], rows,
                  title=f"phases per step (step {fmt_val(result.get('step_ms'), 'ms')})", right=(1, 2, 3, 4, 5))
    other, step = result.get("unattributed_wall_ms"), result.get("step_ms")
    if other is not None and step and other > 0.005 * step:
        out.note(f"{fmt_num(result['unattributed_wall_ms'])} ms of the step is in no phase")
    _warnings(out, result.get("warnings"))


def render_kernels(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    f = result.get("filters") or {}
    active = ", ".join(f"{k}={v}" for k, v in f.items() if v not in (None, False) and k not in ("sort", "top"))
    rows = [[cut(k.get("short_name") or k.get("name")), k.get("kind") or "kernel", k.get("category"),
             "yes" if k.get("tensorcore") else "", k.get("phase") or "", fmt_num(k.get("ms_per_step")),
             fmt_pct(k.get("pct")), fmt_count(k.get("count_per_step"))] for k in result.get("kernels", [])]
    if rows:
        out.table(["kernel", "kind", "category", "TC", "phase", "ms/step", "share", "calls/step"], rows,
                  title=f"kernels by {f.get('sort', 'time')}" + (f" ({active})" if active else ""),
                  right=(5, 6, 7))
    if result.get("total"):
        out.note(f"showing {len(rows)} of {result['matched']} matching rows ({result['total']} in all); "
                 f"matching: {fmt_num(result['matched_ms_per_step'])} ms/step = "
                 f"{fmt_pct(result.get('matched_pct'))} of device activity time")
        out.note(f"summed per step: kernels {fmt_num(result.get('kernel_ms_per_step'))} ms, memcpy "
                 f"{fmt_num(result.get('memcpy_ms_per_step'))} ms, memset {fmt_num(result.get('memset_ms_per_step'))} ms "
                 "(share = of the row's own kind)")
        if not rows:
            out.line("no kernel matches these filters")
    _warnings(out, result.get("warnings"))


def render_ops(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    f = result.get("filters") or {}
    second = "input shapes" if f.get("shapes") else "phase"
    mem = bool(result.get("has_memory"))
    rows = []
    for o in result.get("ops", []):
        row = [cut(o.get("name")), cut(str(o.get("input_shapes") if f.get("shapes") else o.get("phase") or ""), 40),
               fmt_num(o.get("self_ms_per_step")), fmt_pct(o.get("pct")), fmt_num(o.get("total_ms_per_step")),
               fmt_count(o.get("count_per_step")), fmt_num(o.get("mean_self_us"))]
        if mem:
            row += [fmt_bytes(o.get("alloc_bytes_per_step")), fmt_bytes(o.get("freed_bytes_per_step"))]
        rows.append(row)
    if rows:
        phase = f.get("phase")
        head = ["op", second, "self ms", "share", "total ms", "calls", "self us/call"]
        out.table(head + (["self alloc", "self freed"] if mem else []), rows,
                  title=f"ops by {f.get('sort', 'self')} per step" + (f" (phase={phase})" if phase else ""),
                  right=tuple(range(2, len(head) + (2 if mem else 0))))
        out.note(f"showing {len(rows)} of {result['matched']} ops; self CPU time in ops "
                 f"{fmt_num(result['self_ms_per_step'])} ms/step, {fmt_count(result['calls_per_step'])} calls/step, "
                 f"mean {fmt_num(result.get('mean_self_us'))} us/call")
    _warnings(out, result.get("warnings"))


def fmt_bytes(n: Any) -> str:
    """Bytes per step in binary units (what torch's memory columns use)."""
    if not isinstance(n, (int, float)):
        return NA
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def render_compare(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    rows, few = [], []
    for m in result.get("metrics", []):
        ci = m.get("ci")
        ratio = fmt_ratio(m.get("ratio"), *(ci or (None, None)))
        verdict = m.get("verdict") or "no verdict"
        if m.get("verdict_code") == "insufficient":
            verdict = "n/a (no samples on a side)"
            few.append(m["metric"])
        rows.append([m["metric"], verdict, NA if m.get("change_pct") is None else f"{m['change_pct']:+.1f}%",
                     ratio, fmt_p(m.get("p_welch")), fmt_p(m.get("p_mwu")), _n_cell(m),
                     fmt_in(m["before"]["value"], m.get("unit")), fmt_in(m["after"]["value"], m.get("unit"))])
    if rows:
        # verdict first: on a narrow terminal the right-hand columns are the ones cut
        level = f"{100 * (1 - result.get('alpha', ALPHA)):.3g}%"
        out.table(["metric", "verdict", "change", f"ratio [{level} CI]", "p Welch", "p MW", "n proc (trials)",
                   "before", "after"],
                  rows, right=(2, 4, 5, 6, 7, 8), shrink=0,
                  title=f"compare (ratio > 1 = better; alpha {result.get('alpha'):.3g}, "
                        f"noise {result.get('noise'):.0%})")
    if few:
        out.note(f"no usable samples on one side ({', '.join(few)}): no verdict")
    diffs = result.get("differences") or []
    if diffs:
        out.table(["differs", "before", "after", "flags verdicts"],
                  [[d["label"], str(d.get("before")), str(d.get("after")),
                    "yes" if d.get("big") else ""] for d in diffs],
                  title="the sides differ besides the code")
    for m in result.get("metrics", []):
        if m.get("verdict_code") in ("inconclusive", "within_noise") and m.get("note"):
            out.note(f"{m['metric']}: {m['note']}")
    if result.get("deltas"):
        out.table(["", "before", "after", "delta"],
                  [[d["label"], fmt_val(d["before"], d["unit"]), fmt_val(d["after"], d["unit"]), _delta(d)]
                   for d in result["deltas"]], title="deltas", right=(1, 2, 3))
    b = result.get("bound") or {}
    out.line(f"bound: before {b.get('before')}, after {b.get('after')}")
    _one_time_lines(out, result)
    _render_trace_compare(out, result)
    for n in result.get("notes", []):
        out.note(n)
    _warnings(out, result.get("warnings"))


def _one_time_lines(out: Out, result: dict[str, Any]) -> None:
    """One-time setup, payback and outputs against eager float32 (readers/knob_costs.py), where recorded."""
    one = result.get("one_time") or {}
    setup = one.get("setup_s") or [None, None]
    if any(v is not None for v in setup):
        out.line("one-time setup: " + ", ".join(f"{side} {NA if v is None else f'{v:.3g} s'}"
                                                for side, v in zip(("before", "after"), setup)))
    for m in result.get("metrics", []):
        if m.get("payback_calls") is not None:
            from yoloprof.render.knob_lines import calls_text

            out.line(f"{m['metric']}: the after side's extra setup pays back after {calls_text(m['payback_calls'])} calls")
    labels = [(side, o.get("label")) for side, o in zip(("before", "after"), one.get("outputs") or []) if o.get("label")]
    if labels:
        out.line("outputs vs eager float32: " + ", ".join(f"{side} {label}" for side, label in labels))


def _n_cell(m: dict[str, Any]) -> str:
    """Processes (trials) per side: the process is the unit a verdict counts."""
    b, a = m["before"], m["after"]
    return f"{b.get('processes', 1)} ({b['n']}) / {a.get('processes', 1)} ({a['n']})"


def _delta(d: dict[str, Any]) -> str:
    if d.get("delta") is None:
        return NA
    rel = f" ({100 * d['rel']:+.1f}%)" if d.get("rel") is not None else ""
    return f"{d['delta']:+.4g}{rel}"


def _render_trace_compare(out: Out, result: dict[str, Any]) -> None:
    cats = [c for c in result.get("categories") or [] if c["before_ms"] or c["after_ms"]]
    if cats:
        out.table(["category", "before ms/step", "after ms/step", "delta ms", "change"],
                  [[c["category"], fmt_num(c["before_ms"]), fmt_num(c["after_ms"]), f"{c['delta_ms']:+.3f}",
                    NA if c.get("rel") is None else f"{100 * c['rel']:+.1f}%"] for c in cats],
                  title="device time by category", right=(1, 2, 3, 4))
    steps = result.get("per_step")
    if steps and (steps["before"] or steps["after"]):
        n = max(len(steps["before"]), len(steps["after"]))
        rows = []
        for i in range(n):
            b = steps["before"][i] if i < len(steps["before"]) else {}
            a = steps["after"][i] if i < len(steps["after"]) else {}
            d = (a["step_ms"] - b["step_ms"]) if b.get("step_ms") is not None and a.get("step_ms") is not None else None
            rows.append([str(i), str(b.get("step", "")), fmt_num(b.get("step_ms")), str(a.get("step", "")),
                         fmt_num(a.get("step_ms")), NA if d is None else f"{d:+.3f}"])
        out.table(["#", "before step", "before ms", "after step", "after ms", "delta ms"], rows,
                  title="per step (no significance: steps are not trials)", right=(2, 4, 5))


def render_what_if(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    ch = result.get("change") or {}
    parts = ([f"remove category {ch['remove_category']}"] if "remove_category" in ch else []) + \
        ([f"remove {ch['remove_launches']} launch(es) per step"] if "remove_launches" in ch else [])
    what = " and ".join(parts)
    out.title(f"what if: {what}")
    speed = result.get("speedup")
    out.kv([("step now", fmt_val(result.get("step_ms"), "ms")),
            ("predicted step", fmt_val(result.get("predicted_step_ms"), "ms")),
            ("saving", f"{fmt_val(result.get('saving_ms'), 'ms')} ({fmt_ratio(speed)} speed-up)"),
            ("host / device now", f"{fmt_num(result.get('host_ms'))} / {fmt_num(result.get('device_ms'))} ms "
                                  f"({result.get('bound_now')}-bound)"),
            ("host / device after", f"{fmt_num(result.get('host_ms_after'))} / "
                                    f"{fmt_num(result.get('device_ms_after'))} ms ({result.get('bound_after')}-bound)"),
            ("cost per launch", fmt_val(result.get("cost_per_launch_us"), "us"))]
           + ([("if cheapest ops", fmt_val(result["predicted_step_ms_if_cheapest"], "ms"))]
              if result.get("predicted_step_ms_if_cheapest") is not None else []))
    out.line("assumptions:")
    for a in result.get("assumptions", []):
        out.line(f"  - {a}")
    _warnings(out, result.get("warnings"))
