"""Reader inputs (profiles/inputs.py): only regular files, a size guard that says how to raise it,
a first-byte check, bounded gzip. Each bad input ends at once with its documented exit code."""

from __future__ import annotations

import gzip
import json
import os
import socket
import time

import pytest

from yoloprof.cli import main
from yoloprof.errors import ProfileError, UsageError
from yoloprof.profiles.inputs import MAX_INPUT_ENV, Input
from yoloprof.profiles.io import read_bytes
from yoloprof.readers.load import load_any
from yoloprof.traces.parse import parse_trace_bytes

TRACE = json.dumps({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
     "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50}]}).encode()


def _exit(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def test_fifo_is_refused_without_waiting(tmp_path, capsys):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    t = time.perf_counter()
    code, err = _exit(capsys, "summary", str(fifo))
    assert code == 2 and "not a regular file (a FIFO)" in err and str(fifo) in err
    assert time.perf_counter() - t < 5  # opening it for reading would block forever


def test_char_device_socket_and_directory_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="character device"):
        read_bytes("/dev/zero")
    sock_path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(UsageError, match="socket"):
            load_any(sock_path)
    with pytest.raises(UsageError, match="is a directory"):
        load_any(tmp_path)


def test_large_sparse_file_of_zeros_fails_at_byte_0_at_once(tmp_path):
    big = tmp_path / "zeros.json"
    with open(big, "wb") as fh:
        fh.truncate(2 << 30)  # 2 GiB, sparse: nothing is written to disk
    t = time.perf_counter()
    with pytest.raises(ProfileError, match=r"byte 0 \(0x00\) cannot start JSON"):
        load_any(big)
    assert time.perf_counter() - t < 1.0


def _cpu_s() -> float:
    """CPU seconds of this process and its waited-for children: unlike a wall clock, not stretched
    by other work on the machine (a loaded machine made the wall-clock bound fail)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def test_zero_bytes_given_to_the_parser_fail_without_a_repair_pass():
    zeros = b"\0" * (200 << 20)  # made before the clock starts: only the parse is timed
    t = _cpu_s()
    with pytest.raises(ProfileError, match="byte 0"):
        parse_trace_bytes(zeros)
    assert _cpu_s() - t < 1.0  # the UTF-8 / surrogate repairs are not attempted (a regex pass: minutes)


def test_size_guard_names_the_variable_that_raises_it(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    path.write_bytes(TRACE + b" " * (2 << 20))
    monkeypatch.setenv(MAX_INPUT_ENV, "1")
    with pytest.raises(UsageError, match=f"over the input limit of 1 MiB; raise it with {MAX_INPUT_ENV}"):
        read_bytes(path)
    monkeypatch.setenv(MAX_INPUT_ENV, "3")
    assert read_bytes(path).startswith(TRACE)
    monkeypatch.setenv(MAX_INPUT_ENV, "lots")
    with pytest.raises(UsageError, match=MAX_INPUT_ENV):
        read_bytes(path)


def test_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * (64 << 20) + b"]"))  # 64 MiB in ~64 KiB
    monkeypatch.setenv(MAX_INPUT_ENV, "8")
    with pytest.raises(UsageError, match="decompressed content is over the input limit of 8 MiB"):
        load_any(bomb)


def test_first_byte_check_looks_inside_gzip_and_past_blanks_and_bom(tmp_path):
    zeros = tmp_path / "z.json.gz"
    zeros.write_bytes(gzip.compress(b"\0" * 100000))
    with pytest.raises(ProfileError, match="byte 0"):
        load_any(zeros)
    text = tmp_path / "x.json"
    text.write_bytes(b"  \n  hello")
    with pytest.raises(ProfileError, match=r"byte 5 \(0x68\)"):
        load_any(text)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + TRACE)
    assert load_any(bom)["kind"] == "trace"


def test_gzip_members_truncation_and_trailing_bytes(tmp_path):
    half = len(TRACE) // 2
    two = tmp_path / "two.json.gz"
    two.write_bytes(gzip.compress(TRACE[:half]) + gzip.compress(TRACE[half:]))
    assert read_bytes(two) == TRACE  # concatenated members, as `cat a.gz b.gz` writes them
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(TRACE)[:-10])
    with pytest.raises(ProfileError, match="corrupt gzip stream"):
        read_bytes(cut)
    junk = tmp_path / "junk.json.gz"
    junk.write_bytes(gzip.compress(TRACE) + b"junk")
    with pytest.raises(ProfileError, match="trailing bytes"):
        read_bytes(junk)


def test_prefetched_gzip_gives_the_same_bytes_and_errors(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(TRACE))
    assert Input(path).prefetch().read() == TRACE
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(TRACE * 50)[:-30])
    src = Input(cut).prefetch()
    with pytest.raises(ProfileError, match="corrupt gzip"):
        src.read()
