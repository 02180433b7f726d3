"""`yoloprof analyze`: exit codes, stdout/stderr split, --json, plain output. As a user runs it (a
subprocess) where the process is the point: --json's stdout holds the one document and nothing a
library prints, and --fail-on-regression's exit status 4 is the process's. The rest goes through the
CLI's own main in process (helpers.paths.run_main: same parsing, output and codes; a fresh process
pays about 2.5 s of CPU importing pandas, scipy and pyarrow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.paths import run_cli, run_main
from helpers.sweeps import BASE_CONFIG, write_job
from yoloprof.cli import main


def test_table_and_files(sweep: Path) -> None:
    r = run_main("analyze", sweep, "--no-html")
    assert r.returncode == 0, r.stderr
    assert "batch=8" in r.stdout and "img_per_s" in r.stdout and "improved" in r.stdout
    assert "\x1b[" not in r.stdout  # NO_COLOR / not a TTY: plain
    assert (sweep / "analysis" / "comparison.csv").is_file()
    assert not (sweep / "analysis" / "report.html").exists()


def test_json_is_the_only_stdout(sweep: Path) -> None:
    r = run_cli("analyze", sweep, "--json", "--no-html", "--metric", "img_per_s", "--correction", "bh")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["settings"]["correction"] == "bh"
    assert {c["config"] for c in doc["comparisons"]} == {"batch=8", "batch=16"}
    assert all(c["metric"] == "img_per_s" and c["verdict"] == "improved" for c in doc["comparisons"])


@pytest.mark.slow
def test_fail_on_regression_exit_4(sweep: Path) -> None:
    # step time per step grows with the batch: a real, significant "regression" of step_ms
    r = run_cli("analyze", sweep, "--no-html", "--metric", "step_ms", "--fail-on-regression")
    assert r.returncode == 4 and "significant regression" in r.stderr and "Traceback" not in r.stderr
    ok = run_main("analyze", sweep, "--no-html", "--metric", "img_per_s", "--fail-on-regression")
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("args, code, words", [
    (["--baseline", "batch=3"], 2, "matches no ok job (batch has 4, 8, 16)"),
    (["--vary", "imgsz"], 2, "axes that vary: batch"),
    (["--metric", "nope"], 2, "available:"),
    (["--alpha", "2"], 2, "--alpha"),
    (["--correction", "bonf"], 2, "invalid choice"),
])
def test_usage_errors(sweep: Path, args: list[str], code: int, words: str, capsys) -> None:
    # in-process through the same main() the console script runs (a subprocess each is slow)
    assert main(["analyze", str(sweep), "--no-html", *args]) == code
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.startswith("yoloprof: error:")


def test_missing_folder_and_not_a_sweep(tmp_path: Path) -> None:
    # in process (helpers.paths.run_main: the same main, errors and exit codes); the real process's
    # exit status is what the runs above check
    r = run_main("analyze", tmp_path / "nope")
    assert r.returncode == 2 and "no such sweep folder" in r.stderr
    r = run_main("analyze", tmp_path)
    assert r.returncode == 1 and "not a sweep" in r.stderr


def test_no_ok_jobs_exit_1(tmp_path: Path, capsys) -> None:
    write_job(tmp_path / "s", 0, BASE_CONFIG, None, status="failed", error="dataloader died")
    assert main(["analyze", str(tmp_path / "s")]) == 1
    assert "dataloader died" in capsys.readouterr().err
