"""Terminal views of one capture's detail: `summary --per-step` and `kernels --by-launch`.
Lays out what `readers.steps`, `readers.detail` and `readers.gpu_metrics` return."""

from __future__ import annotations

from typing import Any

from yoloprof.render._out import Out
from yoloprof.render.fmt import NA, cut, fmt_num, fmt_pct


def render_gpu_overall(out: Out, gpu: dict[str, Any] | None, na: str | None = None) -> None:
    if gpu is None:
        out.line(f"GPU metrics: {NA} ({na})")
        return
    for d in gpu["overall"]:
        out.kv([("GPU utilisation", fmt_pct(d["gpu_util_pct"])),
                ("est. SM efficiency", fmt_pct(d["sm_efficiency_pct"]) if d["sm_efficiency_pct"] is not None
                 else f"{NA} ({d['sm_efficiency_na']})"),
                ("est. achieved occupancy", fmt_pct(d["occupancy_pct"]) if d["occupancy_pct"] is not None
                 else f"{NA} ({d['occupancy_na']})")],
               title=f"GPU {d['device']} over steps {', '.join(gpu['plugin_steps'])} "
               "(TensorBoard plugin's definitions)")
    for n in gpu.get("notes") or []:
        out.note(n)


def render_steps(result: dict[str, Any], out: Out | None = None, gpu: dict[str, Any] | None = None,
                 breakdown: dict[str, Any] | None = None) -> None:
    out = out or Out()
    rows = []
    for r in result["steps"]:
        devs = r.get("devices") or []
        step = "whole trace" if r.get("step") is None else str(r["step"])
        rows.append([f"{step}{' *' if r.get('slowest') else ''}", fmt_num(r.get("step_ms")),
                     fmt_num(r.get("device_busy_ms")), fmt_num(r.get("kernels")),
                     ", ".join(f"{k} {fmt_num(v)}" for k, v in (r.get("phases") or {}).items() if v),
                     " / ".join(fmt_pct(d["sm_efficiency_pct"]) for d in devs) or NA,
                     " / ".join(fmt_pct(d["occupancy_pct"]) for d in devs) or NA])
    if not rows:
        out.line("no per-step rows in this profile")
        return
    out.table(["step", "step ms", "device busy ms", "kernels", "phases ms", "SM eff.", "occupancy"], rows,
              title="per step (* = slowest)", right=(1, 2, 3))
    if result.get("gpu_na"):
        out.note(f"SM efficiency and occupancy per step: {NA} ({result['gpu_na']})")
        return
    if breakdown and breakdown["steps"]:
        roles = breakdown["roles"]
        out.table(["step"] + [r.replace("_", " ") for r in roles] + ["total", "comm. hidden"],
                  [[s["step"]] + [fmt_num(s[f"{r}_ms"]) for r in roles] + [fmt_num(s["total_ms"]),
                   fmt_pct(s["overlap"]["hidden_pct"])] for s in breakdown["steps"]],
                  title="per step, ms: torch-tb-profiler's breakdown (each instant to the first role covering it)",
                  right=tuple(range(1, len(roles) + 3)))
    render_gpu_overall(out, gpu)


def render_launches(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    rows = [[cut(x["name"], 48), cut(x["op"], 28), x["grid"] or NA, x["block"] or NA,
             fmt_num(x["registers_per_thread"]), fmt_num(x["shared_memory"]), str(x["calls"]),
             fmt_num(x["total_ms"]), fmt_num(x["mean_blocks_per_sm"]), fmt_num(x["mean_occupancy_pct"])]
            for x in result["launches"]]
    if not rows:
        out.line("no kernels in the trace")
    else:
        out.table(["kernel", "calling op", "grid", "block", "regs/thr", "smem B", "calls", "total ms",
                   "blocks/SM", "occ. %"], rows, title="kernels by launch (name, op, configuration)",
                  right=(4, 5, 6, 7, 8, 9))
    render_gpu_overall(out, result.get("gpu"))
