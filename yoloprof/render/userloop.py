"""Terminal rendering of `yoloprof modules` and `yoloprof hotspots` (the readers compute; this prints)."""

from __future__ import annotations

from typing import Any

from yoloprof.render._out import Out
from yoloprof.render.fmt import NA, cut, fmt_count, fmt_num, fmt_pct

ROOT_LABEL = "(model)"  # the root module has the empty qualified name


def _warnings(out: Out, warnings: list[str] | None) -> None:
    for w in dict.fromkeys(warnings or []):
        out.warn(w)


def _mem(v: Any) -> str:
    return NA if v is None else fmt_num(v)


def render_modules(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    tree = (result.get("filters") or {}).get("sort") == "tree"
    rows = []
    for m in result.get("modules", []):
        name = m.get("module") or ROOT_LABEL
        label = ("  " * (m.get("depth") or 0) + name.rsplit(".", 1)[-1]) if tree else name
        calls = "not called" if m.get("called") is False else fmt_count(m.get("calls_per_step"))
        rows.append([cut(label, 48), m.get("type") or "", calls,
                     fmt_num(m.get("forward_ms")), fmt_num(m.get("forward_self_ms")), fmt_pct(m.get("forward_pct")),
                     fmt_num(m.get("backward_ms")), fmt_num(m.get("backward_self_ms")), fmt_pct(m.get("backward_pct")),
                     _mem(m.get("mem_mb")), fmt_num(m.get("params"))])
    if rows:
        depth = (result.get("filters") or {}).get("depth")
        out.table(["module", "type", "calls", "fwd ms", "fwd self", "fwd share", "bwd ms", "bwd self",
                   "bwd share", "mem MiB", "params"], rows,
                  title="time per module per step" + (f" (depth <= {depth})" if depth is not None else ""),
                  right=tuple(range(2, 11)))
        out.note(f"showing {len(rows)} of {result['total']} modules; {result.get('method')} over "
                 f"{result.get('steps')} step(s), {result.get('timing')}; backward outside any module "
                 f"{fmt_num(result.get('backward_unattributed_ms'))} ms/step")
    _warnings(out, result.get("warnings"))


def render_hotspots(result: dict[str, Any], out: Out | None = None) -> None:
    out = out or Out()
    rows = [[cut(f.get("function"), 40), cut(f"{f.get('file')}:{f.get('line')}", 50),
             fmt_count(f.get("calls_per_step")),
             fmt_num(f.get("self_ms")), fmt_pct(f.get("self_pct")), fmt_num(f.get("cum_ms"))]
            for f in result.get("functions", [])]
    if rows:
        sort = (result.get("filters") or {}).get("sort")
        out.table(["function", "where", "calls", "self ms", "self share", "cum ms"], rows,
                  title=f"Python functions per step by {sort} time ({result.get('method')}, "
                        f"{result.get('steps')} step(s))", right=(2, 3, 4, 5))
        out.note(f"showing {len(rows)} of {result['matched']} functions kept in the profile")
    _warnings(out, result.get("warnings"))
