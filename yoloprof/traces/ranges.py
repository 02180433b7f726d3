"""A plain (not gzipped) trace file decoded slice by slice straight from the file, by this process
and forked helpers that claim slices in turn: every core parses, nothing is piped but the
columns, and the figures are those of `parse.parse_trace_bytes` on the whole file, bit for bit.

Why the same figures: the slices are the whole-buffer reader's (`kineto._cuts`: the first `},{`
at or after every CHUNK_BYTES from "traceEvents"), found by reading a few KB at each cut
(`plan_file`) instead of the whole file; each slice is read with the same brackets the
whole-buffer reader adds (`kineto.decode_slice`), turned into columns against the same integer
base (the file's first `"ts"`, `exact_times.base_from_bytes`) and the columns are merged in
slice order (`parse._merge`), whoever decoded them.

Why claiming, not halves: the machine's cores are shared (other programs, a busy neighbour), so
each process takes the next unclaimed slice (`fork.claims`) until none is left: the split
follows the processes' real speeds. Memory: each
process holds its columns and the slice it is decoding, read into one buffer it reuses from
slice to slice (`_Slices`); the helpers' columns come back pickled at the end (`traces.fork`).

Whatever this path does not take returns None and the caller streams the file
(`traces.stream`), which has the whole-buffer fallbacks: gzip, a leading byte-order mark, no
"traceEvents" in the first MiB, a file too small to cut, no "ts" in the first slice, a slice
that does not decode alone, a helper that fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from yoloprof.errors import ProfileError
from yoloprof.profiles.inputs import GZIP_MAGIC, UTF8_BOM, max_input_bytes, open_regular
from yoloprof.traces import exact_times, fork, kineto, parse
from yoloprof.traces.parse import Events
from yoloprof.traces.stream import _FIRST, _LAST, _MIDDLE, Restart, _decode

HEAD_BYTES = 1 << 20   # "traceEvents" must be named within this many first bytes
_WINDOW = 1 << 16      # bytes read at a cut to find the separator (grown when it is not there)


def parse_trace_file(path: str | os.PathLike, size: int | None = None,
                     accept: Callable[[bytes], bool] | None = None) -> Events | None:
    """The Events of a plain trace file, or None when the stream must take it (module doc) or
    `accept` refuses the file's first bytes."""
    size = size or kineto.CHUNK_BYTES
    fd, length = open_regular(path)
    try:
        if length > max_input_bytes():
            return None  # the stream names the limit
        head = os.pread(fd, HEAD_BYTES, 0)
        if head[:2] == GZIP_MAGIC or head[:3] == UTF8_BOM or (accept is not None and not accept(head)):
            return None
        cuts = plan_file(fd, length, head, size)
        if not cuts:
            return None
        first = _read_slice(fd, length, cuts, 0)
        if exact_times._FIRST_TS.search(first[1]) is None:
            return None
        base = exact_times.base_from_bytes(first[1])
        parts, docs = _run(fd, length, cuts, base, first)
    finally:
        os.close(fd)
    if parts is None:
        return None
    out = parse._merge(parts, [])
    out.meta = kineto.merged_meta(docs)
    if not len(out) and not len(out.memory):
        raise ProfileError("trace has no events with a timestamp and duration")
    return out


def plan_file(fd: int, length: int, head: bytes, size: int) -> list[tuple[int, int]]:
    """`kineto.plan` of the file's content, reading only a window at each cut: the same loop
    (`pos < len - size`), and the same leftmost separator at or after `pos` (a separator found in
    a window is the leftmost of the file from `pos`: one starting earlier and crossing the
    window's end would hold the found one's `}` among its blanks)."""
    key = head.find(kineto.TRACE_KEY)
    if key < 0 or length < 2 * size:
        return []
    cuts, pos = [], key + size
    while pos < length - size:
        found = _separator(fd, pos, length)
        if found is None:
            break
        start, end = found
        cuts.append((start + 1, end - 1))
        pos = end + size
    return cuts


def _separator(fd: int, pos: int, length: int) -> tuple[int, int] | None:
    window = _WINDOW
    while True:
        buf = os.pread(fd, window, pos)
        m = kineto._SEPARATOR.search(buf)
        if m is not None:
            return pos + m.start(), pos + m.end()
        if pos + len(buf) >= length:
            return None
        window *= 4


def _bounds(length: int, cuts: list[tuple[int, int]], i: int) -> tuple[int, int, int, bytes, bytes]:
    """(kind, first byte, end, text before, text after) of slice i: the brackets
    `kineto.decode_slice` gives it."""
    if i == 0:
        return _FIRST, 0, cuts[0][0], b"", b"]}"
    if i == len(cuts):
        return _LAST, cuts[-1][1], length, b'{"traceEvents":[', b""
    return _MIDDLE, cuts[i - 1][1], cuts[i][0], b"[", b"]"


def _fill(fd: int, view: memoryview, lo: int, hi: int, pre: bytes, post: bytes) -> None:
    """The slice's text with its brackets in `view` (exactly its size): one read."""
    view[:len(pre)] = pre
    view[len(view) - len(post):] = post
    at, end = len(pre), len(pre) + (hi - lo)
    while at < end:
        got = os.preadv(fd, [view[at:end]], lo + at - len(pre))
        if got <= 0:
            raise Restart()  # the file shrank meanwhile
        at += got


def _read_slice(fd: int, length: int, cuts: list[tuple[int, int]], i: int) -> tuple[int, bytearray]:
    """(kind, text) of slice i in a buffer of its own."""
    kind, lo, hi, pre, post = _bounds(length, cuts, i)
    buf = bytearray(len(pre) + (hi - lo) + len(post))
    with memoryview(buf) as view:
        _fill(fd, view, lo, hi, pre, post)
    return kind, buf


class _Slices:
    """The slices of one process, read into ONE buffer reused from slice to slice (`buffer`).

    Why: a new buffer per slice (4 MiB) is fresh memory each time: pages the kernel zeroes,
    faults them in, and glibc unmaps after (a 4 MiB block is above its mmap threshold), about a
    third of the cost of reading the slice; the reused one is only copied into. Why it is safe:
    nothing of a slice may outlive its decode but copies. A msgspec.Raw decoded from a buffer
    is a view of it (it holds an export of the view it was decoded from): `parse._part` copies
    the one it reads (`GpuArgs.dims`) to bytes, and the end slices' top-level documents, which
    keep theirs until the merge, are read into buffers of their own. Should anything keep a view
    anyway, releasing the slice's view fails (`done`) and the buffer is left to it: the next
    slice gets a new one, never bytes that something still reads."""

    def __init__(self, fd: int, length: int, cuts: list[tuple[int, int]]) -> None:
        self.fd, self.length, self.cuts = fd, length, cuts
        self.size = max((b[0] - a[1] for a, b in zip(cuts, cuts[1:])), default=0) + 2
        self.buffer: bytearray | None = None

    def read(self, i: int) -> tuple[int, bytearray | memoryview]:
        """(kind, text) of slice i: a view of the reused buffer for a middle slice."""
        if i == 0 or i == len(self.cuts):
            return _read_slice(self.fd, self.length, self.cuts, i)
        kind, lo, hi, pre, post = _bounds(self.length, self.cuts, i)
        n = len(pre) + (hi - lo) + len(post)
        if self.buffer is None or len(self.buffer) < n:
            self.buffer = bytearray(max(n, self.size))  # one per process: allocated after the fork
        view = memoryview(self.buffer)[:n]
        try:
            _fill(self.fd, view, lo, hi, pre, post)
        except Restart:
            view.release()
            raise
        return kind, view

    def done(self, piece: bytearray | memoryview) -> None:
        """The slice is columns: its buffer may take the next one, unless something still views
        it (then it is left to that, and the next slice gets a new buffer)."""
        if isinstance(piece, memoryview):
            try:
                piece.release()
            except BufferError:
                self.buffer = None


def _work(fd: int, length: int, cuts: list[tuple[int, int]], base: int, claims: int,
          first: tuple[int, bytearray] | None = None) -> tuple[dict[int, Any], dict[int, Any]]:
    """Decode slices until no claim is left: {slice: columns}, {slice: top-level doc}. Restart
    when one does not decode alone."""
    parts: dict[int, Any] = {}
    docs: dict[int, Any] = {}
    if first is not None:
        parts[0], doc = _decode(first[0], first[1], base)
        docs[0] = doc
    slices = _Slices(fd, length, cuts)
    while (i := fork.claim(claims)) is not None:
        kind, piece = slices.read(i)
        parts[i], doc = _decode(kind, piece, base)
        slices.done(piece)
        del piece
        if doc is not None:
            docs[i] = doc
    return parts, docs


def _helper(fd: int, length: int, cuts: list[tuple[int, int]], base: int, claims: int
            ) -> tuple[dict[int, Any], dict[int, Any]] | None:
    try:
        return _work(fd, length, cuts, base, claims)
    except Restart:
        return None


def _may_fork() -> bool:
    """As for the whole-buffer reader (`parse._may_fork`: a second worker, a single-threaded
    process, a core idle now); with claiming, a helper slowed later only takes fewer slices."""
    return parse._may_fork()


def _run(fd: int, length: int, cuts: list[tuple[int, int]], base: int, first: tuple[int, bytearray]
         ) -> tuple[list[Any] | None, list[Any]]:
    n = len(cuts) + 1
    claims = fork.claims(range(1, n))  # slice 0 is decoded here first (it was read for the base)
    if claims is None:
        return None, []
    helpers: list[fork.Forked] = []
    try:
        if _may_fork():
            for _ in range(parse.SLICE_WORKERS - 1):
                h = fork.fork_call(lambda: _helper(fd, length, cuts, base, claims))
                if h is not None:
                    helpers.append(h)
        try:
            parts, docs = _work(fd, length, cuts, base, claims, first)
        except Restart:
            return None, []
        for h in helpers:
            try:
                theirs = h.join()
            except fork.ForkFailed:
                theirs = None
            if theirs is None:
                return None, []
            parts.update(theirs[0])
            docs.update(theirs[1])
    finally:
        for h in helpers:
            h.kill()
        os.close(claims)
    if len(parts) != n:
        return None, []
    return [parts[i] for i in range(n)], [docs[i] for i in sorted(docs)]
