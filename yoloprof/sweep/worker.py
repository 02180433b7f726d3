"""Job isolation: run one capture in a fresh worker process, so no job measures another's leftovers.

With the basic launcher every job used to run in the launching process: each inherited the heap,
allocator caches, threads and imported state of the jobs before it, and a long sweep drifted (RSS
grew ~0.15 MiB per job; a same-work A/B sweep came out "regressed"). Here each capture runs in a new
process forked from a forkserver that imported torch and yoloprof once and never ran a job, so
every job starts from the same state at the cost of one fork (tens of ms), not one interpreter
start and torch import per job. The forkserver never touches CUDA, so the workers can.

The worker receives the capture function, the settings, the job dir and the launching process's
current environment; it sends back the profile and the job's starting memory footprint, or the
error as one line plus its traceback. Ctrl-C: the worker leads a process group of its own (its
DataLoader workers join it) and ignores SIGINT, so a terminal's Ctrl-C reaches only the launching
process, which kills the whole group: an interrupted sweep ends with one line, no orphaned loader
worker printing tracebacks, and no half-written files (the capture writes atomically at the end).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import traceback
import types
from pathlib import Path
from typing import Any, Callable, Iterator

from yoloprof.defs.metrics import BYTES_PER_MIB

# Imported once by the forkserver, so that each job's fresh process starts with them: besides torch
# and the capture, what a first capture imports lazily (the statistics' scipy.stats, the FLOP
# counter, and torch._dynamo/sympy that torch pulls in on first use) cost each job about 1.5-2 s
# before its first timed step. A module missing from an older torch is skipped by the forkserver.
_PRELOAD = ["torch", "yoloprof.capturing.builtin.capture_entry", "yoloprof.workloads.models",
            "yoloprof.metrics.stats", "torch.utils.flop_counter", "torch._dynamo", "sympy"]
_CONTEXT: Any = None


class WorkerError(Exception):
    """The capture failed in the worker: `str()` is the one-line error, `.trace` its traceback."""

    def __init__(self, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.trace = trace


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        _start_forkserver()
        _CONTEXT = ctx
    return _CONTEXT


def _start_forkserver() -> None:
    """Start the forkserver with SIGINT ignored, which it inherits through exec: it imports torch
    for seconds before it ignores SIGINT itself, and a terminal's Ctrl-C in that time printed its
    import traceback beside the sweep's one line. (A Ctrl-C in the few milliseconds of the spawn
    itself is lost; the next one stops the sweep.)"""
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


def footprint_mib(device: str) -> float | None:
    """The memory this process already holds before the job's capture, in MiB, measured the way the
    capture measures its peak: resident set (VmRSS) on CPU, allocated tensor memory on CUDA (0 in a
    process that has not initialised CUDA, without initialising it here)."""
    from yoloprof.capturing.device.peak_memory import proc_status_mib
    from yoloprof.config.device_spec import parse_device

    spec = parse_device(device)
    if spec.is_cuda:
        import torch

        if not torch.cuda.is_initialized():
            return 0.0
        return torch.cuda.memory_allocated(spec.index or 0) / BYTES_PER_MIB
    return proc_status_mib("VmRSS")


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when its parent (the forkserver, which exits with the launching
    process) dies, so a killed sweep leaves no capture running on. Best effort elsewhere."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _let_forkserver_go() -> None:
    """The forkserver hands each child a copy of the launching process's "alive" pipe, which keeps
    the forkserver running while any child holds it: a worker whose launching process was killed
    then kept its parent alive, so `_die_with_parent` never fired and the capture ran on alone.
    Closing the copy lets the forkserver exit with the launching process, and the worker with it."""
    try:
        from multiprocessing import forkserver

        server: Any = getattr(forkserver, "_forkserver", None)
        fd = getattr(server, "_forkserver_alive_fd", None)
        if fd is not None:
            os.close(fd)
            server._forkserver_alive_fd = None
    except OSError:
        pass


def _child(conn: Any, fn: Callable[..., dict], settings: Any, job_dir: str, env: dict[str, str]) -> None:
    _die_with_parent()
    _let_forkserver_go()
    os.setpgid(0, 0)  # its own group: Ctrl-C goes to the launching process, which kills the group
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the launching process decides what Ctrl-C does
    os.environ.clear()
    os.environ.update(env)
    try:
        start = footprint_mib(settings.device)
        message: tuple = ("ok", fn(settings, Path(job_dir)), start)
    except BaseException as exc:  # noqa: BLE001 - everything goes back as a failed job
        message = ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc())
    try:
        conn.send(message)
    except OSError:  # the launching process is gone (killed): nobody to tell
        pass
    finally:
        conn.close()


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """multiprocessing re-imports the `__main__` script in every forkserver child (as
    `__mp_main__`); a script that calls `yoloprof sweep` without an `if __name__ == "__main__"`
    guard would start the sweep again in each worker. The worker needs nothing from `__main__`
    (its function is looked up by module name), so it starts with an empty one."""
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


def _kill_group(proc: Any) -> None:
    """SIGKILL the worker's process group (the worker and the DataLoader workers it started), then
    reap the worker; a worker that has not made its group yet is killed alone."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # no such group yet (ESRCH): the worker alone
        proc.kill()
    proc.join()


def run_in_worker(fn: Callable[..., dict], settings: Any, job_dir: Path) -> tuple[dict, float | None]:
    """(profile, starting footprint MiB) of `fn(settings, job_dir)` run in a fresh worker process."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, settings, str(job_dir), dict(os.environ)),
                       name="yoloprof-job")  # not a daemon: DataLoader workers are its children
    from yoloprof.capturing.passes import interrupt

    try:
        with _main_hidden(), interrupt.guard(), interrupt.deferred():
            proc.start()  # Ctrl-C here waits until the worker's pid is known, so it can be killed
    except BaseException:
        if proc.pid is not None:
            _kill_group(proc)
        raise
    finally:
        send.close()
    try:
        message = receive.recv()
    except EOFError:
        message = None
    except BaseException:  # Ctrl-C or a stop: the worker and its loader workers go with us
        _kill_group(proc)
        raise
    finally:
        receive.close()
    proc.join()
    if message is None:
        code = proc.exitcode
        why = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        raise WorkerError(f"the job's worker process died ({why}) before it reported a result")
    if message[0] == "error":
        raise WorkerError(message[1], message[2])
    return message[1], message[2]
