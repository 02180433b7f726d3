"""`python -m yoloprof.sweep [hydra args]`: the same as `yoloprof sweep`, with the same one-line
errors and exit codes (errors.run_guarded), without importing the CLI layer above this one."""

import os
import sys

from yoloprof.errors import run_guarded, sigint_stops

if __name__ == "__main__":
    sigint_stops()
    from yoloprof.sweep.app import main

    argv = sys.argv[1:]
    debug = "--debug" in argv or os.environ.get("YOLOPROF_DEBUG", "") not in ("", "0")
    raise SystemExit(run_guarded(lambda: main([a for a in argv if a != "--debug"]), debug=debug))
