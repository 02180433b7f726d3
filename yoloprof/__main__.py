"""`python -m yoloprof`: the CLI, with Ctrl-C at any moment of the process ending in exit 130 and
one line (docs/errors.md "Ctrl-C"): also while the CLI itself is imported, and after it returned
(a late Ctrl-C while the interpreter shuts torch down must not turn the status into a traceback or
a death by SIGINT)."""

import gc

gc.disable()  # until cli.main, which sets the collector for the command (cli._only_reads)

import signal  # noqa: E402

from yoloprof.errors import run_guarded  # noqa: E402


def _main() -> int:
    from yoloprof.cli import main

    gc.enable()  # main pauses it again first thing (nothing is allocated in between)
    return main()


code = run_guarded(_main)  # cli.main guards itself; this one covers importing it
try:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run is over: its status stands
except KeyboardInterrupt:  # one that arrived just before the handler changed
    pass
raise SystemExit(code)
