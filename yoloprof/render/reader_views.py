"""The renderers the reader table (`readers.table`) names, one calling convention for all:
`(result, source)`, the reader's result and the path it was read from. Most are a renderer of
render/ as it is; `summary --per-step` adds the per-step table, `kernels --by-launch` prints
launches, `report` writes its HTML file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from yoloprof.render import terminal, userloop
from yoloprof.render.capture_terminal import render_launches, render_steps
from yoloprof.render.terminal import render_kernels, render_summary

View = Callable[[Mapping[str, Any], str], None]


def _plain(render: Callable[[dict[str, Any]], None]) -> View:
    def view(result: Mapping[str, Any], source: str) -> None:
        render(dict(result))

    view.__doc__ = f"{render.__module__}.{render.__name__}, which needs no source."
    return view


def render_json(result: Mapping[str, Any], source: str) -> None:
    """`--json`: the result as it is, on stdout and nothing else."""
    from yoloprof.render.jsonout import emit_json

    emit_json(dict(result))


render_get = _plain(terminal.render_get)
render_phases = _plain(terminal.render_phases)
render_ops = _plain(terminal.render_ops)
render_what_if = _plain(terminal.render_what_if)
render_compare = _plain(terminal.render_compare)
render_modules = _plain(userloop.render_modules)
render_hotspots = _plain(userloop.render_hotspots)


def render_summary_view(result: Mapping[str, Any], source: str) -> None:
    render_summary(dict(result), source=source)
    if "gpu_metrics" in result:  # --per-step
        render_steps(result["steps"], gpu=result["gpu_metrics"], breakdown=result["plugin_breakdown"])


def render_kernels_view(result: Mapping[str, Any], source: str) -> None:
    (render_launches if "launches" in result else render_kernels)(dict(result))


def write_report(result: Mapping[str, Any], source: str, options: Any) -> dict[str, Any]:
    """Write the HTML (atomically) and return what `report --json` prints."""
    from yoloprof.errors import UsageError
    from yoloprof.profiles.io import write_bytes_atomic
    from yoloprof.render.capture_html import render_capture_html

    out, data = result["report"], result["data"]
    try:
        write_bytes_atomic(out, render_capture_html(data).encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"-o {out}: cannot write it ({exc.strerror or exc})") from None
    return {"report": out, "recommendations": data["advice"]["recommendations"]}


def print_report(result: Mapping[str, Any], source: str) -> None:
    print(f"wrote {result['report']}")
