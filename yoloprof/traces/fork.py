"""One forked helper process and its result: the fork primitive every multi-core reader uses
(`traces.parse` for a buffer in memory, `traces.stream` for a stream, `traces.ranges` for a
plain file).

Why fork, not multiprocessing: the helper shares the parent's memory copy-on-write (a trace's
bytes, the decoder, the imported engine), starts in about a millisecond, and needs nothing
pickled on the way in; only its result comes back. The child never returns into the caller's
code and never runs the parent's exit handlers (`os._exit`).

How the result comes back (`_send`, `_receive`): pickled, its arrays out of band (pickle
protocol 5) into an anonymous shared file (`memfd`, made before the fork) that the parent maps
copy-on-write: the arrays' bytes are copied once, by the helper, and never through a pipe; the
parent's arrays are views of the mapping (private to it, like any array) and the mapping goes
when the last of them does. Only the pickle without its arrays goes through the pipe. Where
there is no memfd (not Linux) or it cannot be written (no memory), the whole result is
pickled through the pipe instead: the same objects either way.

Whether to fork at all is the caller's decision (`may_fork`: a second worker wanted, a
single-threaded parent: a fork copies no other thread, and a lock one of them held would never
be released in the child). `claims` lets several processes take numbered pieces of work in turn.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
from collections.abc import Callable, Iterable
from typing import IO, Any


class ForkFailed(Exception):
    """The helper died, failed or sent a cut result: the caller takes its one-process path."""


class Forked:
    """A running helper: `join()` waits for its result, `kill()` ends it early. Both are
    idempotent, and `kill()` after `join()` does nothing."""

    def __init__(self, pid: int, read_fd: int, shared: int = -1) -> None:
        self.pid, self.read_fd, self.shared = pid, read_fd, shared

    def join(self) -> Any:
        """The helper's return value; ForkFailed when it raised, died or wrote a cut result."""
        if not self.pid:
            raise ForkFailed("helper already joined or killed")
        # Unpickled straight from the pipe: the arrays are read into their own buffers, never
        # into one payload copied again (that copy was the reader's last peak on a 1 GB trace).
        failure = ""
        with os.fdopen(self.read_fd, "rb") as src:
            self.read_fd = -1
            try:
                result = _receive(src, self.shared)
            except Exception as exc:  # noqa: BLE001 (a cut payload: the helper died while writing)
                failure = f"helper result unreadable ({exc})"
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        self._close_shared()
        if status != 0:
            raise ForkFailed(f"helper exited with status {status}")
        if failure:
            raise ForkFailed(failure)
        return result

    def kill(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, 9)
            except OSError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0
        if self.read_fd >= 0:
            try:
                os.close(self.read_fd)
            except OSError:
                pass
            self.read_fd = -1
        self._close_shared()

    def _close_shared(self) -> None:
        """The parent's descriptor of the shared file: the arrays received keep their mapping."""
        if self.shared >= 0:
            os.close(self.shared)
            self.shared = -1


def fork_call(fn: Callable[[], Any], close_in_child: Iterable[int] = (),
              close_in_parent: Iterable[int] = ()) -> Forked | None:
    """Run `fn()` in a forked child; its return value comes back pickled (`Forked.join`). The
    file descriptors `close_in_child` are closed in the child before `fn` runs (the parent's ends
    of pipes to it), `close_in_parent` in the parent once forked (the child's ends). None when
    the fork itself fails (then nothing is closed: the caller still owns every descriptor)."""
    read_fd, write_fd = os.pipe()
    shared = _memfd()
    try:
        pid = os.fork()
    except OSError:
        for fd in (read_fd, write_fd, shared):
            if fd >= 0:
                os.close(fd)
        return None
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = 0
        try:
            os.close(read_fd)
            for fd in close_in_child:
                os.close(fd)
            result = [fn()]  # held by `_send` alone, which frees it once its arrays are copied
            trim_heap()  # its working memory, freed: not held while the result is written
            with os.fdopen(write_fd, "wb") as out:
                _send(out, result, shared)
        except BaseException:  # noqa: BLE001 (any failure is an exit status the parent reads)
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    for fd in close_in_parent:
        os.close(fd)
    return Forked(pid, read_fd, shared)


# --- The result's way back (module doc). The pipe carries a tag byte, then a pickle: b"P" the
# whole result; b"M" (the pickle without its arrays, [(offset, bytes)] of each array in the
# shared file).
_IN_PIPE, _IN_SHARED = b"P", b"M"
_ALIGN = 64  # each array's offset in the shared file: aligned as numpy aligns its own


def _memfd() -> int:
    """An anonymous shared file for a helper's arrays, -1 where there is none."""
    make = getattr(os, "memfd_create", None)
    if make is None:
        return -1
    try:
        return int(make("yoloprof-result", getattr(os, "MFD_CLOEXEC", 1)))
    except OSError:
        return -1


def _send(out: IO[bytes], box: list[Any], shared: int) -> None:
    """The helper's side: the result's (`box`'s one item) arrays into the shared file, the rest
    through the pipe; all of it through the pipe when there is no shared file or it cannot hold
    them."""
    result = box.pop()
    if shared >= 0:
        buffers: list[pickle.PickleBuffer] = []
        data = pickle.dumps(result, protocol=5, buffer_callback=buffers.append)
        try:
            spans = _write_shared(shared, [b.raw() for b in buffers])
        except (OSError, ValueError, BufferError):
            pass
        else:
            del buffers, result
            trim_heap()  # the arrays' private copies, freed: the shared file holds them now
            out.write(_IN_SHARED)
            pickle.dump((data, spans), out, protocol=pickle.HIGHEST_PROTOCOL)
            return
    out.write(_IN_PIPE)
    pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)


def _write_shared(fd: int, views: list[memoryview]) -> list[tuple[int, int]]:
    """The arrays' bytes written into the shared file at aligned offsets: [(offset, bytes)].
    Written, not mapped: a write into it allocates its pages without zeroing them first and
    without a fault per page (mapped, 62 MB took 0.24 CPU-s here; written, 0.05), and a
    machine out of memory answers an error, not a signal."""
    spans, at = [], 0
    for view in views:
        at = -(-at // _ALIGN) * _ALIGN
        spans.append((at, view.nbytes))
        at += view.nbytes
    os.ftruncate(fd, at)
    for (start, n), view in zip(spans, views):
        done = 0
        while done < n:
            done += os.pwrite(fd, view[done:], start + done)
    return spans


def _receive(src: IO[bytes], shared: int) -> Any:
    """The parent's side of `_send`: the arrays are views of the shared file mapped
    copy-on-write (writing to one changes this process's copy only, as with any array)."""
    tag = src.read(1)
    if tag == _IN_PIPE:
        return pickle.load(src)
    if tag != _IN_SHARED or shared < 0:
        raise ValueError("no result")
    data, spans = pickle.load(src)
    total = max((start + n for start, n in spans), default=0)
    if not total:
        return pickle.loads(data, buffers=[bytearray(0) for _ in spans])
    mapped = mmap.mmap(shared, total, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    whole = memoryview(mapped)
    return pickle.loads(data, buffers=[whole[start:start + n] for start, n in spans])


def trim_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc's `malloc_trim(0)`; nothing where
    the C library has none). Why: the columns of a large trace's slices are small arrays, freed
    once merged into the trace's columns, and glibc keeps such freed blocks in its heap; they are
    no memory anyone uses, yet they count in this process's resident set and, after a fork, in
    the helper's too (a fork maps every resident page in the child): about 190 MB of 350 MB
    after reading a 1 GB trace, returned in 17 ms."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        import ctypes

        try:
            _MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", False)
        except (OSError, TypeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM: Any = None  # the C library's malloc_trim, False where there is none; looked up once


def available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """The memory the system can still give without swapping (Linux's MemAvailable), or None
    where it is not known."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def may_fork(workers: int) -> bool:
    """Whether a helper may be forked at all: `workers` processes wanted (2 or more), fork
    available, and this process single-threaded (a fork copies no other thread, and a lock one
    of them held would never be released in the child)."""
    import threading

    return workers >= 2 and hasattr(os, "fork") and threading.active_count() == 1


class Soon:
    """`fn()`'s result when asked (`result()`): computed meanwhile by a forked helper when
    `parallel` and the fork works, else here when asked; a helper that fails is replaced by
    computing it here (the same function on the same data: the same result). `cancel()` ends a
    helper whose result is no longer wanted (an error in the caller)."""

    def __init__(self, fn: Callable[[], Any], parallel: bool) -> None:
        self.fn = fn
        self.helper = fork_call(fn) if parallel else None

    def result(self) -> Any:
        if self.helper is None:
            return self.fn()
        trim_heap()  # this process's freed working memory, handed back while the helper works
        try:
            return self.helper.join()
        except ForkFailed:
            return self.fn()
        finally:
            self.cancel()

    def cancel(self) -> None:
        if self.helper is not None:
            self.helper.kill()
            self.helper = None


# --- Claims: numbered pieces of work taken in turn by several processes. A pipe holds every
# number as 4 bytes; a read of 4 bytes from a pipe is atomic, so each number is taken by exactly
# one process, and the split follows the processes' real speeds (a helper slowed by a busy core
# only takes fewer pieces).
_RECORD = struct.Struct("<I")
_PIPE_DEFAULT = 65536


def claims(numbers: range) -> int | None:
    """The read end of a pipe holding `numbers` (its write end closed), or None when the pipe
    cannot hold them all at once."""
    r, w = os.pipe()
    data = b"".join(_RECORD.pack(i) for i in numbers)
    try:
        if len(data) > _PIPE_DEFAULT:
            import fcntl

            fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), len(data))
        os.set_blocking(w, False)
        if data and os.write(w, data) != len(data):
            raise OSError("short write")
    except (OSError, ImportError):
        os.close(r)
        os.close(w)
        return None
    os.close(w)
    return r


def claim(fd: int) -> int | None:
    """The next unclaimed number, or None when all are taken."""
    rec = os.read(fd, _RECORD.size)
    return _RECORD.unpack(rec)[0] if len(rec) == _RECORD.size else None
