"""A copy of the trace where TensorBoard's profiler plugin (torch-tb-profiler) finds it.

The plugin lists one run per folder under its log dir, and in it only files named
`<worker>[.<span>].pt.trace.json[.gz]` (its `consts.WORKER_PATTERN`); the worker is shown as
`<node>_<process>`. `torch.profiler.tensorboard_trace_handler` writes
`<hostname>_<pid>.<time in ms>.pt.trace.json`; we write the same name, so a yoloprof trace sits
beside the user's own handler output and TensorBoard shows both.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

SUFFIX = ".pt.trace.json"
# A run name is one folder level per part; keep it to characters every file system takes.
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def worker_name(rank: int | None = None) -> str:
    """`<host>_<pid>` as torch's handler names it (the plugin splits node and process on the last
    underscore); with a distributed rank, `<host>_rank<rank>` would break that split, so the rank
    goes into the process part instead: `<host>_<rank>`."""
    host = _UNSAFE.sub("-", socket.gethostname()) or "host"
    return f"{host}_{os.getpid() if rank is None else rank}"


def run_name(*parts: object) -> str:
    """A run folder name from labels such as mode, model and batch (empty parts dropped)."""
    return "-".join(_UNSAFE.sub("-", str(p)).strip("-") for p in parts if p not in (None, "")) or "yoloprof"


def export(trace: Path, log_dir: Path, run: str, *, worker: str | None = None,
           span_ms: int | None = None) -> Path:
    """Copy `trace` (`.json` or `.json.gz`) to `log_dir/run/<worker>.<span>.pt.trace.json[.gz]`,
    atomically: the plugin polls its log dir and must never see half a file under a trace name."""
    trace = Path(trace)
    gz = ".gz" if trace.name.endswith(".gz") else ""
    folder = Path(log_dir) / run
    folder.mkdir(parents=True, exist_ok=True)
    span = int(time.time() * 1000) if span_ms is None else span_ms
    dest = folder / f"{worker or worker_name()}.{span}{SUFFIX}{gz}"
    fd, tmp = tempfile.mkstemp(prefix=".yoloprof-", suffix=".partial", dir=folder)
    os.close(fd)
    try:
        shutil.copyfile(trace, tmp)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest
