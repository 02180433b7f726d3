"""`python -m yoloprof.sweep [hydra args]`: the same as `yoloprof sweep`, with the CLI's one-line
errors and exit codes."""

import sys

from yoloprof.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["sweep", *sys.argv[1:]]))
