"""profiles/blocks.py: a file's plain content in blocks, with the checks of profiles/inputs.py.
Reference: gzip.decompress / the file's bytes."""

from __future__ import annotations

import gzip

import pytest

from yoloprof.errors import ProfileError, UsageError
from yoloprof.profiles.blocks import estimated_size, iter_blocks
from yoloprof.profiles.inputs import MAX_INPUT_ENV

TEXT = b'{"traceEvents": [' + b",".join(b'{"ph":"X","ts":%d}' % i for i in range(20000)) + b"]}"


def _read(path, block=4096) -> bytes:
    return b"".join(iter_blocks(path, block))


@pytest.mark.parametrize("name,data,expected", [
    ("plain.json", TEXT, TEXT),
    ("bom.json", b"\xef\xbb\xbf" + TEXT, TEXT),
    ("one.json.gz", gzip.compress(TEXT), TEXT),
    ("members.json.gz", gzip.compress(TEXT[:1000]) + gzip.compress(TEXT[1000:]), TEXT),
    ("padded.json.gz", gzip.compress(TEXT) + b"\0" * 3000, TEXT),
])
def test_blocks_join_to_the_content(tmp_path, name, data, expected) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert _read(path) == expected
    assert all(len(b) <= 4096 for b in iter_blocks(path, 4096))  # bounded blocks, a bomb too


@pytest.mark.parametrize("data,message", [
    (gzip.compress(TEXT)[:-12], "truncated"),
    (gzip.compress(TEXT) + b"junk", "trailing bytes"),
    (b"\x1f\x8b\x08\x00garbage-garbage-garbage", "corrupt gzip"),
])
def test_broken_gzip_is_a_profile_error_naming_the_file(tmp_path, data, message) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(data)
    with pytest.raises(ProfileError, match=message) as info:
        _read(path)
    assert str(path) in str(info.value)


def test_the_input_limit_holds_for_the_decompressed_stream(tmp_path, monkeypatch) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * (3 << 20)))
    monkeypatch.setenv(MAX_INPUT_ENV, "1")
    with pytest.raises(UsageError, match=MAX_INPUT_ENV):
        _read(path, 1 << 16)
    assert estimated_size(path) == 3 << 20  # the trailer's length, above 8x the small file
