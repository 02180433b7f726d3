"""A file's plain content as a stream of blocks: read (and gunzipped) a block at a time, so that
a reader of a multi-GB trace never holds the whole file (`traces.stream`).

The checks are those of `profiles.inputs` (a regular file, the size guard, gzip members and
trailing zero padding, the decompressed-size limit against gzip bombs), applied as the blocks
flow; a leading UTF-8 byte-order mark is dropped as `Input.read` drops it. The inflater is ISA-L's
where python-isal imports (`inputs._inflater`), zlib's otherwise: both check each member's CRC
and length at its end.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Generator, Iterator

from yoloprof.errors import ProfileError, UsageError
from yoloprof.profiles.inputs import (
    GZIP_MAGIC, UTF8_BOM, _inflater, _too_large, max_input_bytes, open_regular,
)

BLOCK_BYTES = 8 << 20  # plain bytes per block: a few event slices (traces.parse.CHUNK_BYTES)
_RAW_BLOCK = 1 << 20   # compressed bytes read per inflate call


def estimated_size(path: str | os.PathLike) -> int:
    """Plain size of the file's content without reading it: the size on disk for a plain file;
    for gzip the larger of the trailer's length (modulo 4 GiB) and 8x the compressed size (JSON
    traces compress 10-20x). Used only to choose a path, never as a limit."""
    fd, size = open_regular(path)
    try:
        head = os.pread(fd, 2, 0) if size >= 2 else b""
        if head != GZIP_MAGIC or size < 18:
            return size
        trailer = int.from_bytes(os.pread(fd, 4, size - 4), "little")
        return max(trailer, 8 * size)
    finally:
        os.close(fd)


def iter_blocks(path: str | os.PathLike, block: int = BLOCK_BYTES) -> Generator[bytes, None, None]:
    """The file's plain content (gunzipped when it starts with gzip's magic), in blocks of about
    `block` bytes; UsageError / ProfileError as `profiles.inputs` raises them, naming the file."""
    p = Path(path)
    limit = max_input_bytes()
    fd, size = open_regular(p)
    try:
        if size > limit:
            raise _too_large(p, f"the file ({size >> 20} MiB)", limit)
        first = True
        source = _gunzipped(fd, p, limit, block) if os.pread(fd, 2, 0) == GZIP_MAGIC else _plain(fd, p, block)
        for piece in source:
            if first and piece:
                piece = piece[3:] if piece[:3] == UTF8_BOM else piece
                first = False
            if piece:
                yield piece
    finally:
        os.close(fd)


def _read(fd: int, n: int, path: Path) -> bytes:
    try:
        return os.read(fd, n)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _plain(fd: int, path: Path, block: int) -> Iterator[bytes]:
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        piece = _read(fd, block, path)
        if not piece:
            return
        yield piece


def _gunzipped(fd: int, path: Path, limit: int, block: int) -> Iterator[bytes]:
    """Every gzip member in turn, inflated at most `block` bytes per call (a gzip bomb never
    holds more than a block); zero padding after the last member is allowed, any other trailing
    byte is a corrupt stream."""
    inflater = _inflater()
    errors = (zlib.error, inflater.error)
    os.lseek(fd, 0, os.SEEK_SET)
    pending, total = b"", 0
    while True:
        if len(pending) < 2:
            pending += _read(fd, _RAW_BLOCK, path)
            if not pending:
                return
        if pending[:2] != GZIP_MAGIC:  # between members: zero padding or garbage
            if pending.strip(b"\0") or _read_nonzero(fd, path):
                raise ProfileError(f"{path}: corrupt gzip stream (trailing bytes after a member)")
            return
        d = inflater.decompressobj(31)
        while not d.eof:
            if not pending:
                pending = _read(fd, _RAW_BLOCK, path)
                if not pending:
                    raise ProfileError(f"{path}: corrupt gzip stream (truncated)")
            try:
                out = d.decompress(pending, block)
            except errors as exc:
                raise ProfileError(f"{path}: corrupt gzip stream ({exc})") from None
            pending = d.unconsumed_tail
            total += len(out)
            if total > limit:
                raise _too_large(path, "the decompressed content", limit)
            if out:
                yield out
        pending = d.unused_data


def _read_nonzero(fd: int, path: Path) -> bool:
    """True when the rest of the file holds a byte other than zero (read a MiB at a time)."""
    while True:
        piece = _read(fd, 1 << 20, path)
        if not piece:
            return False
        if piece.strip(b"\0"):
            return True
