"""Ctrl-C during a capture: always an interrupt (exit 130), never swallowed, never half a result.

Python delivers SIGINT as a KeyboardInterrupt at whatever bytecode runs next. When that is a
`__del__` (a DataLoader iterator shutting its workers down as the trace pass ends), Python prints
"Exception ignored in ..." with a traceback and carries on: the capture then finished and exited 0.
`guard()` therefore records every SIGINT it sees and re-raises it at the capture's checkpoints,
and hides the ignored-exception report of an interrupt it has recorded. `deferred()` holds an
interrupt back while the results are committed (two renames), so the folder never holds a new
trace beside an old profile.

`held_import(name)` imports a library whose initialisation runs C++ that calls back into Python
(torch): a KeyboardInterrupt raised inside those callbacks escapes as a C++ exception and aborts
the process (`terminate called ... KeyboardInterrupt`, SIGABRT) or leaves the library half
initialised, so a Ctrl-C during that import is held and raised once the import is done.

`stage(name)` marks the points where an interrupt is tested: the test seam
`YOLOPROF_TEST_INTERRUPT_AT=<stage>` sends this process a SIGINT there, so tests can interrupt
each moment of a capture deterministically instead of sleeping and hoping.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
from typing import Any, Iterator

TEST_STAGE_ENV = "YOLOPROF_TEST_INTERRUPT_AT"
# The named moments of a capture, in order (docs/errors.md lists them).
STAGES = ("import", "prepare", "measure", "trace", "export", "loader-shutdown", "analyse", "write")


class _State:
    def __init__(self) -> None:
        self.active = False
        self.hit = False
        self.deferring = False


_state = _State()


def stage(name: str) -> None:
    """A named moment of the capture; the test seam interrupts here when asked to."""
    if os.environ.get(TEST_STAGE_ENV) == name:
        os.kill(os.getpid(), signal.SIGINT)
        checkpoint()  # the handler has run by now on the main thread; be sure on any other


def checkpoint() -> None:
    """Raise the interrupt that arrived while it could not be raised (inside a `__del__`)."""
    if _state.active and _state.hit and not _state.deferring:
        raise KeyboardInterrupt


def _on_sigint(_signum: int, _frame: Any) -> None:
    _state.hit = True
    if not _state.deferring:
        raise KeyboardInterrupt


def _unraisable(previous: Any) -> Any:
    def hook(args: Any) -> None:
        if isinstance(args.exc_value, KeyboardInterrupt):
            _state.hit = True  # raised again at the next checkpoint; nothing printed
            return
        previous(args)

    return hook


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Record every SIGINT of the block and make sure it ends the block as a KeyboardInterrupt."""
    if (_state.active or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        # nested, a thread that cannot own signal handlers, or a process that ignores SIGINT on
        # purpose (a sweep's worker: its launching process kills it): the outer owner decides
        yield
        return
    previous_handler = signal.signal(signal.SIGINT, _on_sigint)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(previous_hook)
    _state.active, _state.hit, _state.deferring = True, False, False
    try:
        yield
        checkpoint()
    finally:
        _state.active = False
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGINT, previous_handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold an interrupt back until the block is done (committing results), then raise it."""
    was = _state.deferring
    _state.deferring = True
    try:
        yield
    finally:
        _state.deferring = was
    checkpoint()


def held_import(name: str) -> None:
    """Import `name` with Ctrl-C held until the import is done, then raised (a no-op once imported)."""
    with guard(), deferred():
        stage("import")
        importlib.import_module(name)
