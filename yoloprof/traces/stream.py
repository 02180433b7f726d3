"""A Kineto trace decoded from a stream of blocks, in bounded memory: the same figures, bit for
bit, as `parse.parse_trace_bytes` on the whole file.

Why this gives the same figures: the whole-buffer reader cuts "traceEvents" into slices at event
boundaries (`kineto._cuts`: the first `},{` at or after every CHUNK_BYTES), turns each slice into
columns (`parse._part`, times relative to ONE integer base, the first `"ts"` of the file) and
concatenates the columns (`parse._merge`). Here the cuts are found at the same byte offsets as
the blocks arrive: a cut at offset `pos` is made only once more than CHUNK_BYTES beyond `pos` are
known (the whole-buffer loop's own test, `pos < len - CHUNK_BYTES`, decided without the length),
and the separator search is the same leftmost match. So every slice, its columns and the merge
are those of the whole-buffer reader; only the slice's bytes are freed once it is columns, so
peak memory is the columns kept plus a few slices, not the file.

A trace too small to cut (under 2 x CHUNK_BYTES) is read whole and handed to the whole-buffer
reader. A slice that does not decode on its own (odd layout, invalid UTF-8, a malformed event)
ends the stream with `Restart`: the caller reads the file whole, with its repairs and its loose
per-event fallback, exactly as before.

With a second core free (`parse._may_fork`), a forked helper turns slices into columns while this
process reads, inflates, cuts and decodes the rest: a slice goes to the helper when its queue
has room, else this process decodes it, so the split follows the two processes' speeds. Slices
reach it through a pipe; its columns come back at the end.
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import threading
from collections.abc import Iterable
from typing import Any

from yoloprof.errors import ProfileError
from yoloprof.traces import exact_times, fork, kineto, parse
from yoloprof.traces.parse import Events

_FIRST, _MIDDLE, _LAST, _END = 0, 1, 2, 3  # kinds of slice, as the whole-buffer reader builds them
_HEADER = struct.Struct("<BQ")
_QUEUED = 2  # slices waiting for the helper at most (each about CHUNK_BYTES)


class Restart(Exception):
    """A slice did not decode alone: read the file whole (`parse.parse_trace_bytes`)."""


def parse_trace_blocks(blocks: Iterable[bytes], size: int | None = None) -> Events:
    """The Events of a trace given as consecutive blocks of its plain bytes; Restart when the
    whole-buffer path must be taken, ProfileError for a document that is not a usable trace."""
    size = size or kineto.CHUNK_BYTES
    cutter = _Cutter(size)
    sink = _Sink()
    try:
        for block in blocks:
            for kind, piece in cutter.feed(block):
                sink.add(kind, piece)
        rest = cutter.finish()
        if rest is not None:  # never cut: too small, or no traceEvents found
            return parse.parse_trace_bytes(rest)
        for kind, piece in cutter.tail():
            sink.add(kind, piece)
        parts, docs = sink.close()
    finally:
        sink.abort()
    out = parse._merge(parts, [])
    out.meta = kineto.merged_meta(docs)
    if not len(out) and not len(out.memory):
        raise ProfileError("trace has no events with a timestamp and duration")
    return out


class _Cutter:
    """Finds the whole-buffer reader's cuts in a growing buffer (module doc) and yields each slice
    as (kind, bytes ready for the decoder) once its end is known."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.buf = bytearray()
        self.offset = 0        # absolute offset of buf[0]
        self.key: int | None = None  # absolute offset of "traceEvents"
        self.pos = 0           # absolute offset where the next separator search starts
        self.prev: int | None = None  # absolute start of the next slice (after the last cut)
        self.total = 0

    def feed(self, block: bytes) -> list[tuple[int, bytes]]:
        self.buf += block
        self.total += len(block)
        if self.key is None:
            at = self.buf.find(kineto.TRACE_KEY, max(0, self.total - len(block) - len(kineto.TRACE_KEY)))
            if at < 0:
                return []
            self.key = at
            self.pos = at + self.size
        out = []
        while self.total > self.pos + self.size:  # the whole-buffer loop's `pos < len - size`
            m = kineto._SEPARATOR.search(self.buf, self.pos - self.offset)
            if m is None:
                break
            a, b = self.offset + m.start() + 1, self.offset + m.end() - 1
            out.append(self._slice(a))
            self.prev, self.pos = b, self.offset + m.end() + self.size
            del self.buf[:b - self.offset]
            self.offset = b
        return out

    def _slice(self, end: int) -> tuple[int, bytes]:
        with memoryview(self.buf) as view:  # one copy: the slice's text with its brackets
            if self.prev is None:
                return _FIRST, b"".join((view[:end - self.offset], b"]}"))
            return _MIDDLE, b"".join((b"[", view[:end - self.offset], b"]"))

    def finish(self) -> bytes | None:
        """At the end of the stream: the whole content when it was never cut (it is all still in
        the buffer, and smaller than 2 x size or without a place to cut)."""
        if self.prev is None:
            return bytes(self.buf)
        return None

    def tail(self) -> list[tuple[int, bytes]]:
        with memoryview(self.buf) as view:
            piece = b"".join((b'{"traceEvents":[', view))
        self.buf = bytearray()
        return [(_LAST, piece)]


def _decode(kind: int, piece: bytes | bytearray | memoryview, base: int) -> tuple[parse._Part, Any]:
    """Columns of one slice (and its top-level document for the end slices); Restart if it does
    not decode alone."""
    try:
        if kind == _MIDDLE:
            try:
                events, doc = kineto._EVENTS_DECODER.decode(piece), None
            except kineto._DECODE_ERRORS as exc:
                raise kineto.ChunkError(str(exc)) from None
        else:
            events, doc = kineto._top(bytes(piece) if isinstance(piece, memoryview) else piece)
    except kineto.ChunkError:
        raise Restart() from None
    part = parse._part(events, base)
    del events
    return part, doc


class _Sink:
    """Slices in, columns out, in slice order: the first `"ts"` of the file is the base of every
    slice (`exact_times.base_from_bytes`), so slices wait until it is seen; then a slice goes to
    the helper process when there is one with room in its queue."""

    def __init__(self) -> None:
        self.base: int | None = None
        self.waiting: list[tuple[int, bytes]] = []
        self.parts: dict[int, parse._Part] = {}
        self.docs: dict[int, Any] = {}
        self.n = 0
        self.helper: _Helper | None = None
        self.started = False

    def add(self, kind: int, piece: bytes) -> None:
        if self.base is None:
            m = exact_times._FIRST_TS.search(piece)
            self.waiting.append((kind, piece))
            if m is None and kind != _LAST:
                return
            self.base = exact_times.base_from_bytes(piece) if m is not None else 0
            waiting, self.waiting = self.waiting, []
            for k, p in waiting:
                self._take(k, p)
            return
        self._take(kind, piece)

    def _take(self, kind: int, piece: bytes) -> None:
        i, self.n = self.n, self.n + 1
        if not self.started:
            self.started = True
            self.helper = _Helper.start()
        assert self.base is not None
        if self.helper is not None and self.helper.offer(i, kind, piece, self.base):
            return
        part, doc = _decode(kind, piece, self.base)
        self.parts[i] = part
        if doc is not None:
            self.docs[i] = doc

    def close(self) -> tuple[list[parse._Part], list[Any]]:
        for kind, piece in self.waiting:  # no "ts" anywhere: base 0, as the whole-buffer reader
            self.base = 0 if self.base is None else self.base
            self._take(kind, piece)
        self.waiting = []
        if self.helper is not None:
            try:
                parts, docs = self.helper.join()
            finally:
                self.helper.kill()  # nothing left to do once joined
                self.helper = None
            self.parts.update(parts)
            self.docs.update(docs)
        return [self.parts[i] for i in sorted(self.parts)], [self.docs[i] for i in sorted(self.docs)]

    def abort(self) -> None:
        if self.helper is not None:
            self.helper.kill()
            self.helper = None


class _Helper:
    """A forked process decoding the slices it is sent; its columns come back pickled at the end
    (a few MB per slice). Slices are written by a sender thread (the write releases the GIL), so
    that this process decodes its own slices meanwhile instead of waiting for the helper to read;
    the queue holds at most `_QUEUED` slices (bounded memory). Any failure of the helper (a slice
    that did not decode, a crash, a broken pipe) is a Restart."""

    def __init__(self, forked: fork.Forked, to_child: int) -> None:
        self.forked, self.to_child = forked, to_child
        self.queue: queue.Queue[tuple[int, int, bytes, int] | None] = queue.Queue(_QUEUED)
        self.failed = False
        self.sender = threading.Thread(target=self._send_all, daemon=True)
        self.sender.start()

    @classmethod
    def start(cls) -> _Helper | None:
        if not parse._may_fork():
            return None
        down_r, down_w = os.pipe()
        forked = fork.fork_call(lambda: _child(down_r), close_in_child=(down_w,), close_in_parent=(down_r,))
        if forked is None:
            os.close(down_r)
            os.close(down_w)
            return None
        return cls(forked, down_w)

    def offer(self, i: int, kind: int, piece: bytes, base: int) -> bool:
        """Queue the slice for the helper unless its queue is full (then this process decodes
        it): the split follows the two processes' speeds, whatever else runs on the cores."""
        if self.failed:
            raise Restart()
        try:
            self.queue.put_nowait((i, kind, piece, base))
        except queue.Full:
            return False
        return True

    def _send_all(self) -> None:
        try:
            while True:
                item = self.queue.get()
                if item is None:
                    _write_all(self.to_child, _HEADER.pack(_END, 0))
                    return
                if self.failed:
                    continue  # drain: the parent learns of the failure at its next offer
                i, kind, piece, base = item
                head = pickle.dumps((i, base))
                _write_all(self.to_child, _HEADER.pack(kind, len(head)) + head)
                _write_all(self.to_child, struct.pack("<Q", len(piece)))
                _write_all(self.to_child, piece)
        except OSError:  # the helper died
            self.failed = True

    def join(self) -> tuple[dict[int, parse._Part], dict[int, Any]]:
        while True:  # the end mark; a sender that died (the helper's pipe broke) drains no more
            try:
                self.queue.put(None, timeout=0.05)
                break
            except queue.Full:
                if not self.sender.is_alive():
                    break
        self.sender.join()
        os.close(self.to_child)
        self.to_child = -1
        if self.failed:
            raise Restart()
        try:
            result = self.forked.join()
        except fork.ForkFailed:
            result = None
        if result is None:  # a slice did not decode alone, or the helper died
            raise Restart()
        return result

    def kill(self) -> None:
        if self.forked.pid:
            self.forked.kill()
            self.failed = True
            while self.sender.is_alive():  # unblock it: its pipe's reader is gone
                try:
                    self.queue.put(None, timeout=0.05)
                    break
                except queue.Full:
                    continue
            self.sender.join()
        if self.to_child >= 0:
            try:
                os.close(self.to_child)
            except OSError:
                pass
            self.to_child = -1


def _child(src_fd: int) -> tuple[dict[int, parse._Part], dict[int, Any]] | None:
    """The helper's loop: decode every slice sent until the end mark; None once one failed."""
    parts: dict[int, parse._Part] = {}
    docs: dict[int, Any] = {}
    failed = False
    with os.fdopen(src_fd, "rb") as src:
        while True:
            kind, n = _HEADER.unpack(_read_exact(src, _HEADER.size))
            if kind == _END:
                break
            i, base = pickle.loads(_read_exact(src, n))
            piece = _read_exact(src, struct.unpack("<Q", _read_exact(src, 8))[0])
            if failed:
                continue
            try:
                parts[i], doc = _decode(kind, piece, base)
            except Restart:
                failed = True
                continue
            if doc is not None:
                docs[i] = doc
    return None if failed else (parts, docs)


def _read_exact(src: Any, n: int) -> bytes:
    data = src.read(n)
    if len(data) != n:
        raise EOFError("helper pipe closed")
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
