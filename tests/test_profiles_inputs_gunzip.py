"""The one-buffer gunzip (profiles/inputs.py `_gunzip_sized`) against Python's own `gzip`
module: same bytes where it applies, and it steps aside (None) wherever the general path must
decide (several members, trailing bytes, zero padding, a lying trailer, a possible bomb)."""

from __future__ import annotations

import gzip
import os
import zlib

import pytest

from yoloprof.profiles.inputs import MAX_DEFLATE_RATIO, _gunzip_sized, gunzip

LIMIT = 1 << 30


def _payload(n: int = 200_000) -> bytes:
    return b'{"traceEvents": [' + b",".join(b'{"ph": "X", "ts": %d}' % i for i in range(n // 20)) + b"]}"


def test_one_member_gives_gzip_modules_bytes():
    data = _payload() + os.urandom(5000)  # some incompressible bytes as well
    raw = gzip.compress(data)
    assert _gunzip_sized(raw, LIMIT) == gzip.decompress(raw) == data


def test_isal_is_the_inflater_and_zlib_gives_the_same_bytes(monkeypatch):
    """python-isal is a dependency (in the lock): the one-buffer path uses its inflate; where it
    does not import, zlib's gives the same bytes, and both refuse a wrong CRC."""
    from isal import isal_zlib

    from yoloprof.profiles import inputs

    assert inputs._inflater() is isal_zlib
    data = _payload() + os.urandom(5000)
    raw = gzip.compress(data)
    bad = bytearray(raw)
    bad[-8] ^= 1  # the trailer's CRC
    assert _gunzip_sized(raw, LIMIT) == data and _gunzip_sized(bytes(bad), LIMIT) is None
    monkeypatch.setattr(inputs, "_inflater", lambda: zlib)
    assert _gunzip_sized(raw, LIMIT) == data and _gunzip_sized(bytes(bad), LIMIT) is None


@pytest.mark.parametrize("tail", [b"\0" * 64, b"garbage after the member", gzip.compress(b"second", mtime=0)],
                         ids=["zero padding", "garbage", "a second member"])
def test_anything_after_the_member_is_left_to_the_general_path(tail, tmp_path):
    raw = gzip.compress(_payload()) + tail
    assert _gunzip_sized(raw, LIMIT) is None


def test_lying_trailer_and_possible_bomb_step_aside():
    raw = bytearray(gzip.compress(_payload()))
    raw[-4:] = (len(_payload()) + 1).to_bytes(4, "little")  # size no longer matches: zlib refuses
    assert _gunzip_sized(bytes(raw), LIMIT) is None
    raw[-4:] = (len(raw) * MAX_DEFLATE_RATIO + 1).to_bytes(4, "little")  # impossible: no buffer
    assert _gunzip_sized(bytes(raw), 1 << 40) is None
    small = gzip.compress(_payload())
    assert _gunzip_sized(small, len(small) * MAX_DEFLATE_RATIO - 1) is None
    with pytest.raises(zlib.error):
        zlib.decompress(bytes(raw), 31)


def test_general_path_still_reads_several_members(tmp_path):
    raw = gzip.compress(b"ab") + gzip.compress(b"cd")
    assert gunzip(raw, tmp_path / "x.gz", LIMIT) == b"abcd"
