"""The `yoloprof` command line: argparse, one `cmd_<name>(args)` per subcommand, and the single
place (`main`) where project errors become a one-line message and a documented exit code.

Heavy modules (torch, pandas, hydra) are imported inside the subcommands that need them, so that
`yoloprof get profile.json img_per_s` starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, cast

from yoloprof import warn
from yoloprof.defs import files
from yoloprof.defs.version import __version__
from yoloprof.errors import PROG, ProfileError, RegressionError, UsageError, YoloprofError, one_line, run_guarded, sigint_stops

if TYPE_CHECKING:
    from yoloprof.readers.table import OptionSpec, Reader


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------------
# capture commands


def _run_capture(args: argparse.Namespace, mode: str) -> int:

    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.cli_args import settings_from_args
    from yoloprof.sweep.machine import timed_slot

    from yoloprof.profiles.outdirs import run_dir

    settings = settings_from_args(args, mode)
    from yoloprof.workloads.families import check_model

    check_model(settings)  # a --size the model's family would ignore is refused on the command line
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


def _summary_folder(args: argparse.Namespace) -> int:
    """`summary FOLDER`: one trace per rank, the multi-rank view (CLI only: a Profile is one trace)."""
    from yoloprof.readers.ranks import read_ranks
    from yoloprof.render.ranks_terminal import render_ranks

    return _emit(args, read_ranks(args.profile, jobs=args.jobs, ranks=_ranks(args)), render_ranks)


def cmd_reader(args: argparse.Namespace) -> int:
    """Every reader of the table (readers/table.py): load, compute (and write, for `report`) as
    `yoloprof.Profile`'s method does, then print JSON or the reader's text view."""
    from yoloprof.api import read_with, resolve
    from yoloprof.readers.table import BY_NAME

    reader = BY_NAME[args.command]
    if reader.folder and _is_folder(args.profile):
        return _summary_folder(args)
    result = read_with(reader, _load(args), args.profile, reader.make(vars(args)))
    resolve(reader.formats["json" if args.json else "text"])(result, args.profile)
    return 0


def _add_reader(p: argparse.ArgumentParser, reader: Reader) -> None:
    """The reader's own arguments, from its table entry (selection and folder options first)."""
    from yoloprof.readers.table import FOLDER_SPECS, SELECTION_SPECS

    folder = {s.name: s for s in FOLDER_SPECS}
    specs = ([folder["jobs"]] if reader.folder else []) + (list(SELECTION_SPECS) if reader.selection else [])
    specs += ([folder["ranks"]] if reader.folder else []) + list(reader.specs())
    group = p.add_mutually_exclusive_group(required=True) if reader.one_of else None
    for spec in specs:
        (group if group is not None and spec.name in reader.one_of else p).add_argument(
            *_names(spec), **_argument(spec))


def _names(spec: OptionSpec) -> list[str]:
    if spec.flag is None:
        return [spec.name]
    return [spec.short, spec.flag] if spec.short else [spec.flag]


def _argument(spec: OptionSpec) -> dict[str, Any]:
    """argparse's keywords for one option: a bool is a store_true flag, other types convert."""
    kw: dict[str, Any] = {"default": spec.default}
    if spec.flag is not None and spec.name != spec.flag[2:].replace("-", "_"):
        kw["dest"] = spec.name
    if spec.type is bool:
        kw["action"] = "store_true"
    elif spec.action:
        kw["action"] = spec.action
    elif spec.type is not str:
        kw["type"] = spec.type
    for key in ("help", "choices", "nargs", "metavar"):
        if getattr(spec, key) is not None:
            kw[key] = getattr(spec, key)
    return kw


def _compare_folders(args: argparse.Namespace) -> int:
    if not (_is_folder(args.before) and _is_folder(args.after)):
        side = "before" if _is_folder(args.before) else "after"
        raise UsageError(f"{getattr(args, side)} ({side}) is a folder of rank traces but the other side "
                         "is not; compare two folders or two files")
    from yoloprof.readers.ranks import compare_ranks, read_ranks
    from yoloprof.render.ranks_terminal import render_ranks_compare

    return _emit(args, compare_ranks(read_ranks(args.before, jobs=args.jobs),
                                     read_ranks(args.after, jobs=args.jobs)), render_ranks_compare)


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
        from yoloprof.readers.table import BY_NAME

        sides = []
        for paths, side in ((before_paths, "before"), (after_paths, "after")):
            loaded = []
            for path in paths:
                with _about(path, side):
                    loaded.append(load_any(path))
            sides.append(loaded)
        with _internal_about(f"{args.before} and {args.after}"):
            reader = BY_NAME["compare"]  # the table's compute, as yoloprof.compare and Profile.compare
            result = dict(reader.compute(sides[0], sides[1], reader.make({**vars(args), "metrics": args.metric})))
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
    from yoloprof.config.cli_args import analysis_given

    return {**analysis_given(args, "analyze"), "auto_baseline": bool(getattr(args, "auto_baseline", False)),
            "name": getattr(args, "name", None)}


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

    q = HistoryQuery(Path(args.project), metric=args.metric, where=args.where or (),
                     repo=Path(args.repo) if args.repo else None, dirty=args.dirty)
    if args.detect is not None:
        q.detect = args.detect
    result = compute_history(q)
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


def _add_history_commands(add: Callable[..., argparse.ArgumentParser],
                           wanted: Callable[[str], bool] = lambda name: True) -> None:
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
    p.add_argument("--detect", type=float, default=None, metavar="FRACTION",
                   help="the step a series without a change point is checked against: the captures per "
                        "commit that would find it (default 0.02, gate's noise band)")
    for flag, kw in common:
        p.add_argument(flag, **kw)
    p = add("gate", "judge a new capture against its configuration's recent history on this machine "
            "(exit 4 on a regression)", cmd_gate)
    p.add_argument("project")
    p.add_argument("new", nargs="+", help="the new capture's profile.json (several: one per process)")
    p.add_argument("--window", type=int, default=None, help="most recent baseline captures used (default 30)")
    if wanted("gate"):
        _add_analysis_options(p, "gate")
    for flag, kw in common:
        p.add_argument(flag, **kw)


# --------------------------------------------------------------------------------------------
# parser


def cmd_tune(args: argparse.Namespace) -> int:
    """`yoloprof tune`: trial=auto sweeps of each knob's levels against the baseline (docs/tune.md)."""
    from pathlib import Path

    from yoloprof.sweep.tune_cli import run_from_args

    return run_from_args(args, Path(args.resume) if args.resume else None)


def cmd_completion(args: argparse.Namespace) -> int:
    from yoloprof.completion import script

    sys.stdout.write(script(args.shell))
    return 0


def _add_analysis_options(p: argparse.ArgumentParser, command: str, recorded: bool = False) -> None:
    """The statistics options, generated from the analysis settings schema (config/analysis_settings.py)."""
    from yoloprof.config.cli_args import add_analysis_arguments

    add_analysis_arguments(p, command, recorded=recorded)


def _add_jobs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=None,
                   help="processes parsing a folder of rank traces (default: one per core)")


class _Unbuilt:
    """Stands for the subcommand parser of a command other than the one being run, whose
    arguments are never parsed: they are not added (`build_parser(command)`)."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Unbuilt:
        return self


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `command`, one with that subcommand alone: the options of the
    capture commands are generated from the settings schema, whose import and expansion are most
    of the parser's cost, and every other subcommand costs its argparse objects too (a reader's
    start, 0.005 s for all of them), none of which the command needs. Parsing, errors and `--help`
    of that command read the same; an unknown word gets the whole parser (its error lists them)."""
    def wanted(name: str) -> bool:
        return command is None or command == name

    names: list[str] = []
    parser = _Parser(prog=PROG, description="Where does a PyTorch training step or inference call "
                     "spend its time, and did a change really make it faster?")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help: str, fn: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        names.append(name)
        if not wanted(name):
            return cast(argparse.ArgumentParser, _Unbuilt())
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

    from yoloprof.readers.table import READERS

    for entry in READERS:  # the reader table: one subcommand per entry built from its options
        if not entry.cli_built:
            continue
        p = add(entry.name, entry.help, cmd_reader)
        if not wanted(entry.name):
            continue
        p.add_argument("profile", help="profile.json or a Kineto trace (.json / .json.gz)")
        p.add_argument("--json", action="store_true", help="machine output on stdout")
        _add_reader(p, entry)

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
    if wanted("compare"):
        _add_analysis_options(p, "compare")
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
    if wanted("analyze"):
        _add_analysis_options(p, "analyze", recorded=True)
    p.add_argument("--auto-baseline", action="store_true",
                   help="ignore the sweep's recorded baseline/vary; use the automatic rule")
    p.add_argument("--name", default=None, help="folder name for an analysis with other settings "
                   "(default: derived from the settings)")
    p.add_argument("--list", action="store_true", help="list the analyses of the sweep and exit")
    p.add_argument("--allow-partial", action="store_true",
                   help="exit 0 even when job folders have a missing, corrupt or duplicate row")
    p.add_argument("--fail-on-regression", action="store_true")
    p.add_argument("--json", action="store_true")

    _add_history_commands(add, wanted)

    p = add("tune", "try each knob's levels against the baseline in trial=auto sweeps, confirm the "
            "combination of the improvements, write best.yaml", cmd_tune)
    if wanted("tune"):
        from yoloprof.sweep.tune_cli import add_tune_arguments

        add_tune_arguments(p)

    p = add("completion", "print the shell completion script: eval \"$(yoloprof completion bash)\"",
            cmd_completion)
    p.add_argument("shell", choices=("bash", "zsh"))

    # `sweep` is listed for --help; its arguments go to Hydra untouched (see main).
    add("sweep", "run a Hydra capture sweep: yoloprof sweep +sweep=NAME | -m key=a,b ...", lambda a: 0)
    return parser if command is None or command in names else build_parser()


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
    # the command is the first word that is not a top-level flag (`yoloprof --debug compare ...`)
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
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
    """The program (`yoloprof`, `python -m yoloprof`) when `argv` is None: the process ends when it
    returns; with `argv`, a call inside a caller's process (tests), whose collector is restored."""
    collecting = gc.isenabled()
    gc.disable()  # while the CLI starts; turned on again below unless the command only reads (`_only_reads`)
    entry = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if entry:
        sigint_stops()
    try:
        # (a partial, not a lambda: a closure's cells would be allocated before the collector is paused)
        return run_guarded(functools.partial(_dispatch_in_channel, argv, collecting), debug=_debug_wanted(argv))
    finally:
        if collecting:
            if entry and not gc.isenabled():  # a reader's: what is left lives until the exit, and
                gc.freeze()  # the interpreter's shutdown collection (0.01 s) need not walk it
            gc.enable()


def _dispatch_in_channel(argv: list[str], collecting: bool = False) -> int:
    with warn.channel():  # Python warnings print as one `yoloprof: warning:` line each
        if collecting and not _only_reads(argv):
            gc.enable()
        return _dispatch(argv)


# The cyclic garbage collector is paused for the readers of the table (summary, get, kernels, ops,
# phases, report, compare of files...). Why: a reader's run leaves a fixed ~1,500 objects in
# reference cycles whatever the input's size (1,511 after `summary` of a 3 KB, a 54 MB and a
# 1 GB trace alike, measured with gc.collect() at exit; the same peak RSS with and without the
# collector), so collecting frees nothing, while each collection walks every young container:
# the tens of thousands of objects the imports make and the event lists of the parse (about 60
# collections, 0.02-0.04 s of CPU in a `summary` of the 54 MB trace). Captures, sweeps and
# `compare --run-a/-b` run the user's code and keep the collector; so does every other command.
def _only_reads(argv: Sequence[str]) -> bool:
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is None or command in CAPTURE_MODES or command == "sweep":
        return False
    from yoloprof.readers.table import BY_NAME  # the parser imports it next in any case

    return command in BY_NAME and not any(a.startswith("--run-") for a in argv)


if __name__ == "__main__":
    raise SystemExit(main())
