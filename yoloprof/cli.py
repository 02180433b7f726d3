"""The `yoloprof` command line: argparse, one `cmd_<name>(args)` per subcommand, and the single
place (`main`) where project errors become a one-line message and a documented exit code.

Heavy modules (torch, pandas, hydra) are imported inside the subcommands that need them, so that
`yoloprof get profile.json img_per_s` starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Callable, Iterator, Sequence

from yoloprof import warn
from yoloprof.defs import files
from yoloprof.defs.version import __version__
from yoloprof.config.stat_defaults import ALPHA, NOISE
from yoloprof.errors import PROG, ProfileError, RegressionError, UsageError, YoloprofError, one_line, run_guarded


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------------
# capture commands


def _run_capture(args: argparse.Namespace, mode: str) -> int:
    from pathlib import Path

    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.cli_args import settings_from_args
    from yoloprof.sweep.machine import timed_slot

    from yoloprof.profiles.outdirs import run_dir

    settings = settings_from_args(args, mode)
    out_dir = run_dir(args.project, mode, args.exist_ok)  # train, train2, ...: earlier ones are kept
    # registered (not locked) so that sweep jobs timing at the same time record it (other_captures)
    from yoloprof.capturing.builtin.store_record import record_capture
    from yoloprof.profiles.rows import utc_now

    started, command = utc_now(), "run" if mode == "train" else "infer"
    with timed_slot(settings.device, "shared", label=f"yoloprof {command}"):
        profile = capture(settings, out_dir, progress=not args.json)
    record_capture(profile, settings, out_dir, source=command, project=args.project, started_at=started,
                   wall_s=(utc_now() - started).total_seconds())  # the project's results store
    if args.json:
        from yoloprof.render.jsonout import emit_json

        emit_json(profile)
    else:
        from yoloprof.readers.summary import compute_summary
        from yoloprof.render.terminal import render_summary

        summary = compute_summary(profile)
        summary["warnings"] = []  # already printed on stderr, one line each, as they arose
        render_summary(summary, source=str(out_dir / files.PROFILE))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    return _run_capture(args, "train")


def cmd_infer(args: argparse.Namespace) -> int:
    return _run_capture(args, "infer")


# (mode, command, function, help): the options of both are generated from the settings schema.
CAPTURE_COMMANDS = (
    ("train", "run", cmd_run, "profile a short training run"),
    ("infer", "infer", cmd_infer, "profile the inference pipeline (preprocess, forward, postprocess/NMS)"),
)
CAPTURE_MODES = {command: mode for mode, command, _, _ in CAPTURE_COMMANDS}


# --------------------------------------------------------------------------------------------
# readers: each computes a JSON-able result (readers/) and hands it to a renderer (render/)


def _emit(args: argparse.Namespace, result: Any, render: Callable[..., None], **kw: Any) -> int:
    if getattr(args, "json", False):
        from yoloprof.render.jsonout import emit_json

        emit_json(result)
    else:
        render(result, **kw)
    return 0


def _is_folder(path: str) -> bool:
    return os.path.isdir(path)


# Selections (readers/select.py): --steps / --window on summary, kernels, ops, phases; --ranks
# on a folder of rank traces.
def _load(args: argparse.Namespace) -> dict[str, Any]:
    from yoloprof.readers.load import load_any

    if getattr(args, "ranks", None) is not None:
        raise UsageError(f"--ranks chooses traces of a folder; {args.profile} is a file")
    if getattr(args, "steps", None) is None and getattr(args, "window", None) is None:
        return load_any(args.profile)
    from yoloprof.readers.select import selection_from_args

    return load_any(args.profile, select=selection_from_args(args))


def _ranks(args: argparse.Namespace) -> Any:
    from yoloprof.readers.select import parse_ranks

    if getattr(args, "steps", None) is not None or getattr(args, "window", None) is not None:
        raise UsageError("--steps/--window apply to one trace, not to a folder of rank traces")
    return parse_ranks(getattr(args, "ranks", None))


def _add_selection(p: argparse.ArgumentParser, ranks: bool = False) -> None:
    p.add_argument("--steps", default=None, help="only these ProfilerStep numbers of a trace (4-6, or 5)")
    p.add_argument("--window", default=None,
                   help="only the steps starting in START:END, ms from the trace's first event")
    if ranks:
        p.add_argument("--ranks", default=None, help="a folder of rank traces: only these ranks (0,3 or 0-7)")


def cmd_summary(args: argparse.Namespace) -> int:
    if _is_folder(args.profile):  # one trace per rank: the multi-rank view
        from yoloprof.readers.ranks import read_ranks
        from yoloprof.render.ranks_terminal import render_ranks

        return _emit(args, read_ranks(args.profile, jobs=args.jobs, ranks=_ranks(args)), render_ranks)
    from yoloprof.readers.summary import compute_summary
    from yoloprof.render.terminal import render_summary

    profile = _load(args)
    result = compute_summary(profile)
    if getattr(args, "per_step", False):  # issue 27: the trace's per-step GPU figures too
        from yoloprof.readers.detail import NO_TRACE, read_detail
        from yoloprof.readers.steps import compute_steps
        from yoloprof.render.capture_terminal import render_steps

        detail = read_detail(args.profile, profile)
        result["steps"] = compute_steps(profile, detail["gpu"]["steps"] if detail else None)
        result["steps"]["gpu_na"] = None if detail else NO_TRACE
        result["gpu_metrics"] = detail["gpu"] if detail else None
        result["plugin_breakdown"] = detail["breakdown"] if detail else None
        if not args.json:
            render_summary(result, source=args.profile)
            render_steps(result["steps"], gpu=result["gpu_metrics"], breakdown=result["plugin_breakdown"])
            return 0
    return _emit(args, result, render_summary, source=args.profile)


def cmd_get(args: argparse.Namespace) -> int:
    from yoloprof.readers.load import load_any
    from yoloprof.readers.get import compute_get
    from yoloprof.render.terminal import render_get

    return _emit(args, compute_get(load_any(args.profile), args.field), render_get)


def cmd_phases(args: argparse.Namespace) -> int:
    from yoloprof.readers.phases import compute_phases
    from yoloprof.render.terminal import render_phases

    return _emit(args, compute_phases(_load(args)), render_phases)


def cmd_kernels(args: argparse.Namespace) -> int:
    from yoloprof.readers.kernels import compute_kernels
    from yoloprof.render.terminal import render_kernels

    if getattr(args, "by_launch", False):
        return _kernels_by_launch(args)
    result = compute_kernels(_load(args), top=args.top, category=args.category,
                             grep=args.grep, tensorcore=args.tensorcore, sort=args.sort, phase=args.phase)
    return _emit(args, result, render_kernels)


def _kernels_by_launch(args: argparse.Namespace) -> int:
    from yoloprof.readers.detail import NO_TRACE, read_detail
    from yoloprof.readers.load import load_any
    from yoloprof.render.capture_terminal import render_launches

    detail = read_detail(args.profile, load_any(args.profile), top=args.top)
    if detail is None:
        raise UsageError(f"{args.profile}: --by-launch: {NO_TRACE}")
    return _emit(args, {"launches": detail["launches"], "gpu": detail["gpu"]}, render_launches)


def cmd_report(args: argparse.Namespace) -> int:
    """One capture's self-contained HTML report (issue 27)."""
    from yoloprof.profiles.io import write_bytes_atomic
    from yoloprof.readers.capture_report import compute_capture_report
    from yoloprof.render.capture_html import render_capture_html

    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.profile)), files.CAPTURE_REPORT_HTML)
    if os.path.isdir(out):
        raise UsageError(f"-o {out}: is a folder; give the HTML file to write")
    data = compute_capture_report(args.profile)
    try:
        write_bytes_atomic(out, render_capture_html(data).encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"-o {out}: cannot write it ({exc.strerror or exc})") from None
    if args.json:
        from yoloprof.render.jsonout import emit_json

        emit_json({"report": out, "recommendations": data["advice"]["recommendations"]})
    else:
        print(f"wrote {out}")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from yoloprof.readers.ops import compute_ops
    from yoloprof.render.terminal import render_ops

    result = compute_ops(_load(args), top=args.top, phase=args.phase, sort=args.sort,
                         shapes=args.shapes)
    return _emit(args, result, render_ops)


def _compare_folders(args: argparse.Namespace) -> int:
    if not (_is_folder(args.before) and _is_folder(args.after)):
        side = "before" if _is_folder(args.before) else "after"
        raise UsageError(f"{getattr(args, side)} ({side}) is a folder of rank traces but the other side "
                         "is not; compare two folders or two files")
    from yoloprof.readers.ranks import compare_ranks, read_ranks
    from yoloprof.render.ranks_terminal import render_ranks_compare

    return _emit(args, compare_ranks(read_ranks(args.before, jobs=args.jobs),
                                     read_ranks(args.after, jobs=args.jobs)), render_ranks_compare)


def cmd_modules(args: argparse.Namespace) -> int:
    from yoloprof.readers.load import load_any
    from yoloprof.readers.modules import compute_modules
    from yoloprof.render.userloop import render_modules

    result = compute_modules(load_any(args.profile), depth=args.depth, sort=args.sort, top=args.top)
    return _emit(args, result, render_modules)


def cmd_hotspots(args: argparse.Namespace) -> int:
    from yoloprof.readers.load import load_any
    from yoloprof.readers.hotspots import compute_hotspots
    from yoloprof.render.userloop import render_hotspots

    result = compute_hotspots(load_any(args.profile), sort=args.sort, top=args.top, grep=args.grep)
    return _emit(args, result, render_hotspots)


def _last_two(args: argparse.Namespace) -> None:
    """`compare --last PROJECT`: the two latest captures of a run/infer project, as BEFORE AFTER."""
    if args.last is None:
        return
    if args.sides or args.run_a or args.run_b:
        raise UsageError("compare: give BEFORE AFTER (or --run-a/--run-b) or --last PROJECT, not both")
    from yoloprof.profiles.outdirs import last_two

    args.sides = [str(p) for p in last_two(args.last)]
    print(f"yoloprof compare: {args.sides[0]} -> {args.sides[1]}", file=sys.stderr)


def _compare_sides(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """BEFORE AFTER, or several per side: A1 A2 ... vs B1 B2 ... (one profile per process)."""
    sides = list(args.sides or [])
    if "vs" in sides:
        i = sides.index("vs")
        before, after = sides[:i], sides[i + 1:]
    elif len(sides) == 2:
        before, after = sides[:1], sides[1:]
    else:
        raise UsageError("compare needs BEFORE AFTER, or A1 A2 ... vs B1 B2 ... (several captures per "
                         f"side), or --run-a CMD --run-b CMD; got {len(sides)} path(s)")
    if not before or not after:
        raise UsageError("compare: A1 A2 ... vs B1 B2 ... needs at least one profile on each side of 'vs'")
    return before, after


def _compare_ab(args: argparse.Namespace) -> dict:
    """--run-a/--run-b: run both sides in fresh alternating processes (sweep/ab.py)."""
    if not (args.run_a and args.run_b) or args.sides:
        raise UsageError("--run-a and --run-b go together, without profile paths")
    import tempfile
    from pathlib import Path

    from yoloprof.sweep.ab import ab_compare, command_runner, run_ab

    metric = (args.metric or ["step_ms"])[0]
    with tempfile.TemporaryDirectory(prefix="yoloprof-ab-") as tmp:
        run = run_ab(command_runner(args.run_a), command_runner(args.run_b), Path(tmp), metric=metric,
                     alpha=args.alpha, noise=args.noise, max_runs=args.max_runs, budget_s=args.budget_s,
                     progress=None if args.json else (lambda m: print(f"{PROG}: {m}", file=sys.stderr)))
        return ab_compare(run, metrics=args.metric, noise=args.noise)


def cmd_compare(args: argparse.Namespace) -> int:
    _last_two(args)
    from yoloprof.render.terminal import render_compare

    if args.run_a or args.run_b:
        from yoloprof.render.noise import render_ab

        result = _compare_ab(args)
        if not args.json:
            render_ab(result)
    else:
        before_paths, after_paths = _compare_sides(args)
        args.before, args.after = before_paths[0], after_paths[0]
        if len(before_paths) == len(after_paths) == 1 and (_is_folder(args.before) or _is_folder(args.after)):
            return _compare_folders(args)
        from yoloprof.readers.load import load_any
        from yoloprof.readers.compare import compute_compare

        sides = []
        for paths, side in ((before_paths, "before"), (after_paths, "after")):
            loaded = []
            for path in paths:
                with _about(path, side):
                    loaded.append(load_any(path))
            sides.append(loaded)
        with _internal_about(f"{args.before} and {args.after}"):
            result = compute_compare(sides[0], sides[1], metrics=args.metric, alpha=args.alpha,
                                     noise=args.noise, noise_file=args.noise_file)
    _emit(args, result, render_compare)
    if args.fail_on_regression:
        from yoloprof.readers.compare import regressions

        bad = regressions(result)
        if bad:
            raise RegressionError(f"significant regression beyond the {args.noise:.0%} noise threshold: "
                                  + ", ".join(bad))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """`yoloprof calibrate [--processes K] -- yoloprof infer ...` or `--from P1 P2 P3 ...`."""
    from yoloprof.render.noise import render_calibration
    from yoloprof.sweep import calibrate

    command = [a for a in (args.command or [])]
    command = command[1:] if command[:1] == ["--"] else command
    if bool(command) == bool(args.profiles):
        raise UsageError("calibrate needs a capture command (after --) or --from PROFILE ..., not both")
    if args.profiles:
        from yoloprof.readers.load import load_any

        loaded = []
        for path in args.profiles:
            with _about(path):
                loaded.append(load_any(path))
        result = calibrate.calibrate_profiles(loaded, "learned from " + ", ".join(args.profiles), args.noise_file)
    else:
        result = calibrate.calibrate_command(
            command, args.processes, noise_file=args.noise_file,
            progress=None if args.json else (lambda m: print(f"{PROG}: {m}", file=sys.stderr)))
    return _emit(args, result, render_calibration)


def cmd_what_if(args: argparse.Namespace) -> int:
    from yoloprof.readers.load import load_any
    from yoloprof.readers.what_if import compute_what_if
    from yoloprof.render.terminal import render_what_if

    result = compute_what_if(load_any(args.profile), remove_category=args.remove_category,
                             remove_launches=args.remove_launches)
    return _emit(args, result, render_what_if)


def _check_analyze(args: argparse.Namespace) -> None:
    """Flag and folder checks before pandas/scipy are imported, so mistakes fail fast."""
    from yoloprof.analysis.folder import check_sweep_folder
    from yoloprof.analysis.run import resolve

    check_sweep_folder(args.sweep_dir)
    if not args.list:
        resolve(_analyze_path(args), **_analyze_given(args))


def _analyze_path(args: argparse.Namespace):
    from pathlib import Path

    return Path(args.sweep_dir)


def _analyze_given(args: argparse.Namespace) -> dict:
    return {"baseline": args.baseline, "vary": args.vary, "metrics": args.metric, "alpha": args.alpha,
            "noise": args.noise, "correction": args.correction,
            "auto_baseline": bool(getattr(args, "auto_baseline", False)), "name": getattr(args, "name", None)}


def _analyze_list(args: argparse.Namespace) -> int:
    from yoloprof.analysis.outputs import list_analyses

    items = list_analyses(_analyze_path(args))
    if getattr(args, "json", False):
        from yoloprof.render.jsonout import emit_json

        emit_json({"sweep_dir": str(args.sweep_dir), "analyses": items})
    else:
        from yoloprof.render.analysis_terminal import print_analyses

        print_analyses(items, str(args.sweep_dir))
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    """`yoloprof analyze`: with --json the comparison table goes to stdout as JSON and nothing
    else does (the rich output is silenced; warnings go to stderr). --fail-on-regression turns a
    significant regression beyond the noise threshold (after the multiple-comparison correction)
    into exit code 4. Job folders that are neither ok nor failed (missing, corrupt, foreign or
    duplicate rows) make it exit 1 after the analysis is written, unless --allow-partial."""
    args.list = bool(getattr(args, "list", False))
    _check_analyze(args)
    if args.list:
        return _analyze_list(args)
    from yoloprof.render.report import analyze_sweep
    from yoloprof.render.analysis_terminal import make_console

    as_json = bool(getattr(args, "json", False))
    console = make_console(stderr=True, quiet=True) if as_json else make_console()
    result = analyze_sweep(args.sweep_dir, html=args.html, console=console, **_analyze_given(args))
    if as_json:
        from yoloprof.render.jsonout import emit_json

        emit_json(result.to_json())
        for w in result.warnings:
            print(f"{PROG}: warning: {w}", file=sys.stderr)
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


# --------------------------------------------------------------------------------------------
# history and gate: the project's results store over commits (docs/history.md)


def cmd_history(args: argparse.Namespace) -> int:
    from pathlib import Path

    from yoloprof.analysis.history import HistoryQuery, compute_history

    result = compute_history(HistoryQuery(Path(args.project), metric=args.metric, where=args.where or (),
                                          repo=Path(args.repo) if args.repo else None, dirty=args.dirty))
    if args.html:
        from yoloprof.profiles.io import write_bytes_atomic
        from yoloprof.render.history_report import render_history_html

        write_bytes_atomic(args.html, render_history_html(result).encode())
    from yoloprof.render.history_report import render_history

    return _emit(args, result, render_history)


def cmd_gate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from yoloprof.analysis.gate import compute_gate
    from yoloprof.render.history_report import render_gate

    result = compute_gate(Path(args.project), args.new, metrics=args.metric, window=args.window, alpha=args.alpha,
                          noise=args.noise, repo=Path(args.repo) if args.repo else None, dirty=args.dirty,
                          where=args.where or ())
    _emit(args, result, render_gate)
    if result["regressions"]:
        raise RegressionError(f"significant regression beyond the {args.noise:.0%} noise threshold against the "
                              f"history in {args.project}: " + ", ".join(result["regressions"]))
    return 0


def _add_history_commands(add: Callable[..., argparse.ArgumentParser]) -> None:
    common = (("--repo", dict(default=None, help="the git repository that orders commits (default: the current "
                                                "directory's)")),
              ("--where", dict(action="append", default=None, metavar="KEY=VALUE",
                               help="keep rows whose column equals the value (repeatable)")),
              ("--dirty", dict(action="store_true", help="keep captures of dirty working trees")),
              ("--json", dict(action="store_true", help="machine output on stdout")))
    p = add("history", "each configuration's series over commits from the project's results store, change "
            "points attributed to commits", cmd_history)
    p.add_argument("project", help="the project folder (--project of run/infer, project= of sweep)")
    p.add_argument("--metric", default="step_ms")
    p.add_argument("--html", default=None, metavar="FILE", help="also write a self-contained HTML page with plots")
    for flag, kw in common:
        p.add_argument(flag, **kw)
    p = add("gate", "judge a new capture against its configuration's recent history on this machine "
            "(exit 4 on a regression)", cmd_gate)
    p.add_argument("project")
    p.add_argument("new", nargs="+", help="the new capture's profile.json (several: one per process)")
    p.add_argument("--metric", action="append", default=None, help="repeatable; default: step_ms")
    p.add_argument("--window", type=int, default=None, help="most recent baseline captures used (default 30)")
    p.add_argument("--alpha", type=float, default=ALPHA)
    p.add_argument("--noise", type=float, default=NOISE)
    for flag, kw in common:
        p.add_argument(flag, **kw)


# --------------------------------------------------------------------------------------------
# parser


def cmd_completion(args: argparse.Namespace) -> int:
    from yoloprof.completion import script

    sys.stdout.write(script(args.shell))
    return 0


def _add_jobs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=None,
                   help="processes parsing a folder of rank traces (default: one per core)")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `command`, one in which the capture commands other than `command`
    have no options: their options are generated from the settings schema, whose import and
    expansion are most of the parser's cost, and a reader does not need them."""
    def wanted(name: str) -> bool:
        return command is None or command == name

    parser = _Parser(prog=PROG, description="Where does a PyTorch training step or inference call "
                     "spend its time, and did a change really make it faster?")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help: str, fn: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show Python tracebacks on errors")
        p.set_defaults(func=fn)
        return p

    for mode, name, fn, text in CAPTURE_COMMANDS:
        p = add(name, text, fn)
        if not wanted(name):
            continue
        from yoloprof.config.cli_args import add_capture_arguments
        from yoloprof.config.capture_settings import OUTPUT_KEYS

        add_capture_arguments(p, mode)
        p.add_argument("--project", default=OUTPUT_KEYS["project"][0],
                       help=f"{OUTPUT_KEYS['project'][1]} (default: %(default)s)")
        p.add_argument("--json", action="store_true", help="print the profile as JSON on stdout")
        p.add_argument("--exist-ok", action="store_true",
                       help=f"write into PROJECT/{mode} again instead of a new {mode}2, {mode}3, ...")

    def reader(name: str, help: str, fn: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = add(name, help, fn)
        p.add_argument("profile", help="profile.json or a Kineto trace (.json / .json.gz)")
        p.add_argument("--json", action="store_true", help="machine output on stdout")
        return p

    p = reader("summary", "the broad reading of a profile or trace; a folder of rank traces gives "
               "the per-rank view", cmd_summary)
    _add_jobs(p)
    _add_selection(p, ranks=True)
    p.add_argument("--per-step", action="store_true", help="each step's time, device busy, kernels, "
                   "phases, SM efficiency and occupancy; the slowest marked")
    p = reader("report", "one capture's self-contained HTML report (overview, utilisation, kernels, "
               "ops, memory, modules, phases, recommendations)", cmd_report)
    p.add_argument("-o", "--output", default=None, help="the HTML file (default: "
                   "capture_report.html beside the input)")
    p = reader("get", "one metric, for shell loops (no field = list the fields)", cmd_get)
    p.add_argument("field", nargs="?", default=None)
    _add_selection(reader("phases", "per phase: device ms, wall ms, kernels, ops", cmd_phases))
    p = reader("kernels", "device kernels by share of device time", cmd_kernels)
    _add_selection(p)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--category", default=None,
                   help="a category, or a unique prefix/substring of one (gemm -> gemm/conv)")
    p.add_argument("--grep", default=None, help="regular expression on the kernel name")
    p.add_argument("--tensorcore", action="store_true", help="only Tensor Core kernels")
    p.add_argument("--sort", default="time", choices=("time", "count", "name"))
    p.add_argument("--phase", default=None)
    p.add_argument("--by-launch", action="store_true", help="one row per (kernel, calling op, grid, "
                   "block, registers, shared memory), from the trace (a profile's own trace file)")
    p = reader("ops", "framework view: aten/autograd ops by self CPU time", cmd_ops)
    _add_selection(p)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--phase", default=None)
    p.add_argument("--sort", default="self", choices=("self", "total", "calls", "name"))
    p.add_argument("--shapes", action="store_true",
                   help="one row per (op, input shapes) when the trace recorded shapes")
    p = reader("modules", "forward/backward time per nn.Module (inclusive, self), calls, memory", cmd_modules)
    p.add_argument("--depth", type=int, default=None, help="deepest module level shown (0 = the model)")
    p.add_argument("--sort", default="tree", choices=("tree", "forward", "backward", "total"))
    p.add_argument("--top", type=int, default=0, help="rows shown (0 = all)")
    p = reader("hotspots", "Python functions by self and cumulative time (--python-hotspots)", cmd_hotspots)
    p.add_argument("--sort", default="cum", choices=("cum", "self", "calls"))
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--grep", default=None, help="regular expression on file:function")
    p = reader("what-if", "estimate the gain of a change before writing it", cmd_what_if)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--remove-category", default=None,
                   help="a category, or a unique prefix/substring of one (gemm -> gemm/conv)")
    g.add_argument("--remove-launches", type=int, default=None)

    p = add("compare", "deltas and a significance verdict per metric", cmd_compare)
    p.add_argument("sides", nargs="*", metavar="PROFILE",
                   help="BEFORE AFTER, or several captures per side: A1 A2 ... vs B1 B2 ...")
    p.add_argument("--run-a", default=None, metavar="CMD", help="run side A itself: a capture command "
                   "line, alternated with --run-b in fresh processes (A B B A ...) until decided")
    p.add_argument("--run-b", default=None, metavar="CMD")
    p.add_argument("--max-runs", type=int, default=20, help="with --run-a/-b: most processes in all")
    p.add_argument("--budget-s", type=float, default=None, help="with --run-a/-b: time budget in seconds")
    p.add_argument("--noise-file", default=None, help="the noise-floor store (default: per user)")
    p.add_argument("--last", metavar="PROJECT", default=None,
                   help="compare the two latest captures of a run/infer --project (e.g. train2, train3)")
    p.add_argument("--metric", action="append", default=None, help="repeatable; default: headline metrics")
    p.add_argument("--alpha", type=float, default=ALPHA)
    p.add_argument("--noise", type=float, default=NOISE)
    p.add_argument("--fail-on-regression", action="store_true")
    p.add_argument("--json", action="store_true")
    _add_jobs(p)

    p = add("calibrate", "measure this machine's run-to-run noise floor for a workload: K identical "
            "captures in fresh processes", cmd_calibrate)
    p.add_argument("--processes", type=int, default=5, help="fresh-process captures to run (default 5)")
    p.add_argument("--from", dest="profiles", nargs="+", default=None, metavar="PROFILE",
                   help="learn the floor from earlier identical captures instead of running any")
    p.add_argument("--noise-file", default=None, help="the noise-floor store (default: per user)")
    p.add_argument("--json", action="store_true")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- yoloprof infer|run ... (the capture)")

    p = add("analyze", "the analysis stages over a finished (or partly finished) sweep", cmd_analyze)
    p.add_argument("sweep_dir")
    # settings left unset are the ones the sweep recorded (docs/analysis.md "Settings")
    p.add_argument("--baseline", nargs="+", default=None, metavar="KEY=VALUE")
    p.add_argument("--vary", default=None, metavar="AXIS")
    p.add_argument("--auto-baseline", action="store_true",
                   help="ignore the sweep's recorded baseline/vary; use the automatic rule")
    p.add_argument("--metric", action="append", default=None)
    p.add_argument("--alpha", type=float, default=None, help=f"significance level (default {ALPHA})")
    p.add_argument("--noise", type=float, default=None, help=f"noise threshold as a fraction (default {NOISE})")
    p.add_argument("--correction", default=None, choices=("holm", "bh", "none"))
    p.add_argument("--name", default=None, help="folder name for an analysis with other settings "
                   "(default: derived from the settings)")
    p.add_argument("--list", action="store_true", help="list the analyses of the sweep and exit")
    p.add_argument("--allow-partial", action="store_true",
                   help="exit 0 even when job folders have a missing, corrupt or duplicate row")
    p.add_argument("--html", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--fail-on-regression", action="store_true")
    p.add_argument("--json", action="store_true")

    _add_history_commands(add)

    p = add("completion", "print the shell completion script: eval \"$(yoloprof completion bash)\"",
            cmd_completion)
    p.add_argument("shell", choices=("bash", "zsh"))

    # `sweep` is listed for --help; its arguments go to Hydra untouched (see main).
    add("sweep", "run a Hydra capture sweep: yoloprof sweep +sweep=NAME | -m key=a,b ...", lambda a: 0)
    return parser


def _debug_wanted(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("YOLOPROF_DEBUG", "") not in ("", "0")


# Commands that only read and compute (readers, analysis, completion): none does linear algebra
# on large matrices, so numpy's OpenBLAS is told to start one thread instead of a pool of one per
# core, which takes half of numpy's import time (0.10 of 0.17 s measured on 2 cores). Captures
# and sweeps run the user's code and keep the user's environment. A value the user set wins.
def _dispatch(argv: list[str]) -> int:
    runs_captures = argv[:1] == ["calibrate"] or any(a.startswith("--run-") for a in argv)
    if argv and argv[0] not in (*CAPTURE_MODES, "sweep") and not runs_captures:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if argv[:1] == ["__complete"]:  # the shell completion script's query (COMP_LINE, COMP_POINT)
        from yoloprof.completion import query_from_env

        sys.stdout.write("\n".join(query_from_env(build_parser())) + "\n")
        return 0
    if argv and argv[0] in CAPTURE_MODES:
        from yoloprof.config.cli_args import key_value_hint

        key_value_hint(argv[1:], CAPTURE_MODES[argv[0]])
    if argv and argv[0] == "sweep":
        from yoloprof import completion
        from yoloprof.sweep import app

        app.SHELL_COMPLETION = lambda overrides: completion.hydra_flag(overrides, build_parser)
        sweep_main = app.main

        return sweep_main([a for a in argv[1:] if a != "--debug"])
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    if isinstance(getattr(args, "profile", None), str):  # a reader of one file: errors name it
        with _about(args.profile):
            return int(args.func(args) or 0)
    return int(args.func(args) or 0)


@contextlib.contextmanager
def _about(path: str, side: str | None = None) -> Iterator[None]:
    """Make an error of the block name the file it is about (and, in `compare`, its side)."""
    try:
        yield
    except YoloprofError as exc:
        text = one_line(str(exc))
        if path not in text:
            text = f"{path}: {text}"
        exc.args = (f"{side}: {text}" if side else text,)
        raise
    except Exception as exc:  # noqa: BLE001 - tagged for main's one-line internal error
        _tag(exc, f"{side} {path}" if side else path)
        raise


@contextlib.contextmanager
def _internal_about(subject: str) -> Iterator[None]:
    """Name `subject` in the line of an internal error raised by the block."""
    try:
        yield
    except YoloprofError:
        raise
    except Exception as exc:  # noqa: BLE001 - tagged for main's one-line internal error
        _tag(exc, subject)
        raise


def _tag(exc: Exception, subject: str) -> None:
    if not hasattr(exc, "yoloprof_subject"):
        exc.yoloprof_subject = subject  # type: ignore[attr-defined]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_guarded(lambda: _dispatch_in_channel(argv), debug=_debug_wanted(argv))


def _dispatch_in_channel(argv: list[str]) -> int:
    with warn.channel():  # Python warnings print as one `yoloprof: warning:` line each
        return _dispatch(argv)


if __name__ == "__main__":
    raise SystemExit(main())
