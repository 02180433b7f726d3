"""Error lines: one line, naming the file (and the side in compare), --debug keeps the traceback;
warnings: one channel line each, never Python's source-path format."""

from __future__ import annotations

import contextlib
import io
import warnings
from contextlib import redirect_stderr, redirect_stdout

import pytest

from yoloprof import cli, warn
from yoloprof.errors import ProfileError


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("side", ["before", "after"])
def test_compare_errors_say_which_side(tmp_path, good, side):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "yoloprof.profile/1", "metr')
    argv = ["compare", str(bad), good] if side == "before" else ["compare", good, str(bad)]
    code, _, err = run(*argv)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"yoloprof: error: {side}: ") and str(bad) in err


def test_missing_side_is_exit_2_naming_it(tmp_path, good):
    code, _, err = run("compare", good, str(tmp_path / "nope.json"))
    assert code == 2 and err == f"yoloprof: error: after: no such file: {tmp_path / 'nope.json'}\n"


def test_multi_line_messages_become_one_line(monkeypatch, good):
    def boom(*_a, **_k):
        raise ProfileError("\nfirst part\n\n  second part\n")

    monkeypatch.setattr("yoloprof.readers.summary.compute_summary", boom)
    code, _, err = run("summary", good)
    assert code == 1 and err == f"yoloprof: error: {good}: first part; second part\n"


def test_internal_error_names_the_file_and_debug_keeps_the_traceback(monkeypatch, good):
    def boom(*_a, **_k):
        raise AttributeError("'str' object has no attribute 'get'")

    monkeypatch.setattr("yoloprof.readers.summary.compute_summary", boom)
    code, _, err = run("summary", good)
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"yoloprof: error: internal error reading {good}: AttributeError:")
    with pytest.raises(AttributeError):
        run("summary", good, "--debug")


def test_python_warnings_print_as_one_channel_line(monkeypatch, good):
    def chatty(profile):
        warnings.warn("Tight layout not applied.\nThe bottom and top margins cannot be made large enough",
                      UserWarning)
        return {"kind": "train", "headline": [], "warnings": []}

    monkeypatch.setattr("yoloprof.readers.summary.compute_summary", chatty)
    code, _, err = run("summary", good)
    assert code == 0
    assert err == (f"{warn.PREFIX}Tight layout not applied. The bottom and top margins cannot be made "
                   "large enough\n")


def test_collector_keeps_each_warning_once_in_order():
    stream = io.StringIO()
    with warn.collecting(stream=stream) as notes:
        for _ in range(3):
            warnings.warn("skipping corrupt image a.jpg", UserWarning)
        notes.add("--workers 8 capped at 2")
        notes.add("skipping corrupt image a.jpg")
    assert notes.messages == ["skipping corrupt image a.jpg", "--workers 8 capped at 2"]
    assert stream.getvalue().splitlines() == [warn.PREFIX + m for m in notes.messages]


class _ChattyImages:
    """A dataset whose decoding warns the way Pillow does on a damaged file."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        import torch

        warnings.warn(f"Corrupt EXIF data in image {i}.\nExpecting to read 4 bytes", UserWarning)
        return torch.zeros(3, 8, 8, dtype=torch.uint8), torch.zeros(0, 5)


def test_loader_workers_print_library_warnings_as_channel_lines(capfd):
    from yoloprof.workloads.data import make_loader

    batches = list(make_loader(_ChattyImages(), batch=1, workers=1))
    assert len(batches) == 2
    err = capfd.readouterr().err
    assert f"{warn.PREFIX}Corrupt EXIF data in image 0. Expecting to read 4 bytes" in err
    assert "UserWarning" not in err and ".py:" not in err


@pytest.mark.parametrize("argv, preset, expected", [
    (["get", "{good}", "step_ms"], None, "1"),           # a reader: numpy's BLAS starts one thread
    (["get", "{good}", "step_ms"], "3", "3"),            # the user's value wins
    (["run", "--help"], None, None),                    # a capture keeps the user's environment
])
def test_readers_start_one_blas_thread_captures_do_not(monkeypatch, good, argv, preset, expected):
    import os

    if preset is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", preset)
    with pytest.raises(SystemExit) if argv[-1] == "--help" else contextlib.nullcontext():
        run(*[a.format(good=good) for a in argv])
    assert os.environ.get("OPENBLAS_NUM_THREADS") == expected
