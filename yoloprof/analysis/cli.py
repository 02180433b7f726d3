"""`yoloprof analyze`: argparse namespace -> analyze_sweep -> exit code.

With --json the comparison table goes to stdout as JSON and nothing else does (the rich output is
silenced; warnings go to stderr). --fail-on-regression turns a significant regression beyond the
noise threshold (after the multiple-comparison correction) into exit code 4.
"""

from __future__ import annotations

import argparse
import sys

from yoloprof.errors import RegressionError, UsageError


def _check(args: argparse.Namespace) -> None:
    """Flag and folder checks before pandas/scipy are imported, so mistakes fail fast."""
    from yoloprof.analysis.folder import check_sweep_folder

    check_sweep_folder(args.sweep_dir)
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, not {args.alpha}")
    if not 0 <= args.noise < 1:
        raise UsageError(f"--noise must be in [0, 1), not {args.noise} (it is a fraction: 0.02 = 2%)")


def run_analyze(args: argparse.Namespace) -> int:
    _check(args)
    from yoloprof.analysis.run import analyze_sweep
    from yoloprof.render.analysis_terminal import make_console

    as_json = bool(getattr(args, "json", False))
    console = make_console(stderr=True, quiet=True) if as_json else make_console()
    result = analyze_sweep(args.sweep_dir, baseline=args.baseline, vary=args.vary, metrics=args.metric,
                           alpha=args.alpha, noise=args.noise, correction=args.correction,
                           html=args.html, console=console)
    if as_json:
        from yoloprof.render.jsonout import emit_json

        emit_json(result.to_json())
        for w in result.warnings:
            print(f"yoloprof: warning: {w}", file=sys.stderr)
    reg = result.regressions()
    if getattr(args, "fail_on_regression", False) and not reg.empty:
        worst = ", ".join(f"{r.config} {r.metric} x{r.ratio:.3f}" for r in reg.itertuples())
        raise RegressionError(f"{len(reg)} significant regression(s) beyond the "
                              f"{args.noise:.0%} noise threshold: {worst}")
    return 0
