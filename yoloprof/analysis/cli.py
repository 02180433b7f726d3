"""`yoloprof analyze`: argparse namespace -> analyze_sweep -> exit code.

With --json the comparison table goes to stdout as JSON and nothing else does (the rich output is
silenced; warnings go to stderr). --fail-on-regression turns a significant regression beyond the
noise threshold (after the multiple-comparison correction) into exit code 4. Job folders that are
neither ok nor failed (missing, corrupt, foreign or duplicate rows) make it exit 1 after the
analysis is written, unless --allow-partial.
"""

from __future__ import annotations

import argparse
import sys

from yoloprof.errors import ProfileError, RegressionError


def _check(args: argparse.Namespace) -> None:
    """Flag and folder checks before pandas/scipy are imported, so mistakes fail fast."""
    from yoloprof.analysis.folder import check_sweep_folder
    from yoloprof.analysis.run import resolve

    check_sweep_folder(args.sweep_dir)
    if not args.list:
        resolve(_path(args), **_given(args))


def _path(args: argparse.Namespace):
    from pathlib import Path

    return Path(args.sweep_dir)


def _given(args: argparse.Namespace) -> dict:
    return {"baseline": args.baseline, "vary": args.vary, "metrics": args.metric, "alpha": args.alpha,
            "noise": args.noise, "correction": args.correction,
            "auto_baseline": bool(getattr(args, "auto_baseline", False)), "name": getattr(args, "name", None)}


def _list(args: argparse.Namespace) -> int:
    from yoloprof.analysis.outputs import list_analyses

    items = list_analyses(_path(args))
    if getattr(args, "json", False):
        from yoloprof.render.jsonout import emit_json

        emit_json({"sweep_dir": str(args.sweep_dir), "analyses": items})
    else:
        from yoloprof.render.analysis_terminal import print_analyses

        print_analyses(items, str(args.sweep_dir))
    return 0


def run_analyze(args: argparse.Namespace) -> int:
    args.list = bool(getattr(args, "list", False))
    _check(args)
    if args.list:
        return _list(args)
    from yoloprof.analysis.run import analyze_sweep
    from yoloprof.render.analysis_terminal import make_console

    as_json = bool(getattr(args, "json", False))
    console = make_console(stderr=True, quiet=True) if as_json else make_console()
    result = analyze_sweep(args.sweep_dir, html=args.html, console=console, **_given(args))
    if as_json:
        from yoloprof.render.jsonout import emit_json

        emit_json(result.to_json())
        for w in result.warnings:
            print(f"yoloprof: warning: {w}", file=sys.stderr)
    reg = result.regressions()
    if getattr(args, "fail_on_regression", False) and not reg.empty:
        worst = ", ".join(f"{r.config} {r.metric} x{r.ratio:.3f}" for r in reg.itertuples())
        raise RegressionError(f"{len(reg)} significant regression(s) beyond the "
                              f"{result.settings['noise']:.0%} noise threshold: {worst}")
    bad = result.unaccounted()
    if bad and not getattr(args, "allow_partial", False):
        raise ProfileError(f"{args.sweep_dir}: {len(bad)} job folder(s) not analysed ("
                           + "; ".join(f"job {j['job']}: {j['state']}" for j in bad[:5])
                           + ("; ..." if len(bad) > 5 else "") + "); the analysis is written without them; "
                           "--allow-partial accepts that")
    return 0
