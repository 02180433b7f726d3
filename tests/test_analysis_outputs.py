"""An analysis never removes or changes outputs it was not asked to write (report.html under
--no-html), in the default analysis folder and in a named one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.sweeps import batch_truth, make_sweep
from yoloprof.cli import main


@pytest.mark.parametrize("name", [None, "mine"])
def test_no_html_keeps_an_earlier_report(tmp_path: Path, capsys, name) -> None:
    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    named = ["--name", name, "--metric", "img_per_s"] if name else []
    folder = sweep / "analysis" / (name or "")
    assert main(["analyze", str(sweep), *named]) in (0, 4)
    report = (folder / "report.html").read_bytes()
    stamp = (folder / "report.html").stat().st_mtime_ns
    assert main(["analyze", str(sweep), "--json", "--no-html", *named]) in (0, 4)
    assert (folder / "report.html").read_bytes() == report  # kept, byte for byte
    assert (folder / "report.html").stat().st_mtime_ns == stamp
    settings = json.loads((folder / "settings.json").read_text())
    assert "report.html" not in settings["files"]  # this analysis did not write it
    capsys.readouterr()
