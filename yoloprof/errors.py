"""Exception types that map one-to-one onto the documented exit codes (DESIGN.md section 2).

Every module raises one of these for problems a user can fix; `run_guarded` (used by `cli.main`
and `python -m yoloprof.sweep`) is the single place that turns them into a one-line message and
an exit code, so no other code calls `sys.exit`.
"""

from __future__ import annotations

import sys
from typing import Callable

PROG = "yoloprof"
EXIT_INTERRUPTED = 130


class YoloprofError(Exception):
    """Base class: a problem the user can act on. `exit_code` is what the CLI returns."""

    exit_code = 1


class ProfileError(YoloprofError):
    """A profile or trace exists but cannot be parsed or analysed (exit 1)."""

    exit_code = 1


class UsageError(YoloprofError):
    """Missing/unreadable file, unknown field, phase, category or option value (exit 2)."""

    exit_code = 2


class NotApplicableError(UsageError):
    """A knob level that cannot apply to this model or machine (exit 2): `--compile` without a C++
    compiler, a CUDA-only mode on CPU, a runtime whose exporter cannot take the network. The one
    line starts with the flag and "not applicable:"; a planner (`tune`) catches it and skips the
    level instead of failing."""


class RuntimeNotApplicable(NotApplicableError):
    """An inference runtime (`runtime` setting) cannot run this model: an op its exporter cannot
    handle, a precision or device it lacks, its extra not installed (exit 2; a sweep records the
    row as "not applicable: <the message>")."""


class DataTooSmallError(YoloprofError):
    """The data cannot fill --warmup + --steps batches (exit 3)."""

    exit_code = 3


class RegressionError(YoloprofError):
    """--fail-on-regression found a significant regression beyond the noise threshold (exit 4)."""

    exit_code = 4


def one_line(text: str) -> str:
    """An error message as one line: no leading blank line, inner line breaks joined with '; '."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def sigint_stops() -> None:
    """Ctrl-C (SIGINT) stops yoloprof wherever it was started. A shell without job control starts
    a background command (`yoloprof sweep ... &` in a script, CI steps) with SIGINT ignored, and a
    Python program keeps that: the sweep then went on through every Ctrl-C and `kill -INT` while
    its worker, whose capture installs its own handler, recorded the job as failed. The program
    takes Python's default handler back at its start (docs/errors.md "Ctrl-C"); to keep a sweep
    running past a terminal's Ctrl-C, start it in its own session (`setsid`)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_guarded(fn: Callable[[], int], debug: bool = False) -> int:
    """Run an entry point: a project error -> `yoloprof: error: ...` and its exit code, Ctrl-C ->
    130, a closed pipe -> 0, anything else -> one line naming it and, when the code that failed
    tagged it (`exc.yoloprof_subject`), the file it was reading (all with the traceback under
    `debug`)."""
    try:
        return _run(fn, debug)
    finally:
        forget_handled_interrupt()


def forget_handled_interrupt() -> None:
    """Clear CPython's record of an interrupt we handled, so `python -m yoloprof` exits with the
    status we return (130 after Ctrl-C), not by SIGINT.

    CPython sets a process-wide "unhandled KeyboardInterrupt" flag whenever a KeyboardInterrupt
    ends code run by `exec`/`eval` of a *string*, and catching the exception does not clear it;
    dataclasses, namedtuple and torch build functions that way (hundreds while torch imports), so
    a Ctrl-C often lands in one. When `python -m` ends with that flag set, the interpreter throws
    our exit status away and kills itself with SIGINT (returncode -2). Every exec of a string
    resets the flag before it runs, so one empty exec, once the interrupt is handled, clears it."""
    exec("pass", {})  # noqa: S102 - a constant string: only its side effect on the flag matters


def _run(fn: Callable[[], int], debug: bool) -> int:
    try:
        return int(fn() or 0)
    except YoloprofError as exc:
        if debug:
            raise
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `yoloprof kernels x | head`
        sys.stderr.close()
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place that turns surprises into one line
        if debug:
            raise
        subject = getattr(exc, "yoloprof_subject", None)
        where = f" reading {subject}" if subject else ""
        print(f"{PROG}: error: internal error{where}: {type(exc).__name__}: {one_line(str(exc))} "
              "(rerun with --debug for the traceback)", file=sys.stderr)
        return 1
