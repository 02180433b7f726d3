"""Every analysis is a reproducible record (issue 16): the sweep records its analysis settings,
a bare `yoloprof analyze` repeats the end-of-sweep analysis byte for byte, an analysis with other
settings lands in its own folder, all files are written together, `--list` shows them all."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from helpers.sweeps import batch_truth, make_sweep
from yoloprof.analysis.settings import AnalysisSettings
from yoloprof.cli import main as cli_main

TABLES = ("comparison.csv", "comparison.md", "comparisons.parquet", "configs.parquet", "metrics.parquet")


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file()}


def test_manifest_records_the_resolved_settings(demo: Path) -> None:
    manifest = json.loads((demo / "yoloprof_sweep.json").read_text())
    # sweeps/demo.yaml declares `analysis.vary: batch`; the rest are the schema's defaults
    assert manifest["analysis"] == {"baseline": [], "vary": "batch", "metrics": [], "alpha": 0.05,
                                    "noise": 0.02, "correction": "holm", "output_tol": 0.001}
    rec = json.loads((demo / "analysis" / "settings.json").read_text())
    assert rec["name"] == "default" and rec["settings"] == manifest["analysis"]
    assert rec["command"] == shlex.join(["yoloprof", "analyze", str(demo.resolve())])
    assert set(TABLES) | {"settings.json"} <= set(rec["files"])


def test_bare_analyze_is_byte_identical_and_baseline_lands_beside(demo: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # the --list table below is read as one line per analysis
    first = _snapshot(demo / "analysis")
    assert cli_main(["analyze", str(demo), "--no-html"]) == 0
    again = _snapshot(demo / "analysis")
    for name in TABLES:
        assert again[name][0] == first[name][0], name
    md = (demo / "analysis" / "comparison.md").read_text()
    assert md.startswith('---\nanalysis: "default"\ncommand: "yoloprof analyze ') and '\nvary: "batch"\n' in md
    assert "each level of batch vs batch=1" in md
    capsys.readouterr()

    before = _snapshot(demo / "analysis")
    assert cli_main(["analyze", str(demo), "--no-html", "--baseline", "batch=4"]) == 0
    assert _snapshot(demo / "analysis") == before  # not one byte, not one mtime of the first
    other = demo / "analysis" / "baseline-batch=4"
    rec = json.loads((other / "settings.json").read_text())
    assert rec["settings"]["baseline"] == ["batch=4"] and rec["settings"]["vary"] is None
    assert rec["command"].endswith("--baseline batch=4")
    assert "baseline batch=4 (given)" in (other / "comparison.md").read_text()
    # the recorded command reproduces it: same folder, same tables
    tables = (other / "comparison.csv").read_bytes()
    assert cli_main(shlex.split(rec["command"])[1:] + ["--no-html"]) == 0
    assert (other / "comparison.csv").read_bytes() == tables

    capsys.readouterr()
    assert cli_main(["analyze", str(demo), "--list", "--json"]) == 0
    listed = {a["name"]: a for a in json.loads(capsys.readouterr().out)["analyses"]}
    assert set(listed) == {"default", "baseline-batch=4"}
    assert listed["default"]["settings"]["vary"] == "batch" and listed["default"]["created_at"]
    assert cli_main(["analyze", str(demo), "--list"]) == 0
    out = capsys.readouterr().out
    assert "baseline-batch=4" in out and "vary batch" in out and "--baseline batch=4" in out


def test_same_name_other_settings_is_refused(tmp_path: Path, capsys) -> None:
    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    assert cli_main(["analyze", str(sweep), "--no-html", "--alpha", "0.01", "--name", "strict"]) == 0
    kept = _snapshot(sweep / "analysis" / "strict")
    assert cli_main(["analyze", str(sweep), "--no-html", "--alpha", "0.1", "--name", "strict"]) == 2
    assert "holds another analysis" in capsys.readouterr().err
    assert _snapshot(sweep / "analysis" / "strict") == kept
    assert cli_main(["analyze", str(sweep), "--no-html", "--name", "../x"]) == 2
    # a name that is one of the default analysis' files never touches that file
    assert cli_main(["analyze", str(sweep), "--no-html"]) == 0
    md = (sweep / "analysis" / "comparison.md").read_bytes()
    assert cli_main(["analyze", str(sweep), "--no-html", "--name", "comparison.md"]) == 2
    assert (sweep / "analysis" / "comparison.md").read_bytes() == md


def test_outputs_are_written_together_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    import yoloprof.render.html as html

    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    assert cli_main(["analyze", str(sweep), "--no-html"]) == 0
    before = _snapshot(sweep / "analysis")
    monkeypatch.setattr(html, "render_report", lambda r: 1 / 0)  # the last output fails to render
    with pytest.raises(ZeroDivisionError):
        cli_main(["analyze", str(sweep), "--html", "--debug"])
    assert _snapshot(sweep / "analysis") == before
    with pytest.raises(ZeroDivisionError):
        cli_main(["analyze", str(sweep), "--html", "--correction", "bh", "--debug"])
    assert not (sweep / "analysis" / "correction-bh").exists()
    assert not [p for p in (sweep / "analysis").iterdir() if p.name.startswith(".")]


def test_json_document_states_settings_and_command(tmp_path: Path, capsys) -> None:
    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    assert cli_main(["analyze", str(sweep), "--no-html", "--json", "--noise", "0.05"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["analysis"] == "noise-0.05" and doc["settings"]["noise"] == 0.05
    assert doc["command"] == shlex.join(["yoloprof", "analyze", str(sweep.resolve()), "--noise", "0.05"])
    assert Path(doc["analysis_dir"]) == sweep / "analysis" / "noise-0.05"


@pytest.mark.parametrize("given, flags, name", [
    ({"baseline": ["batch=1"]}, ["--baseline", "batch=1"], "baseline-batch=1"),
    ({"auto_baseline": True}, ["--auto-baseline"], "auto-baseline"),
    ({"metrics": ["step_ms", "p50_ms"], "correction": "bh"},
     ["--metric", "step_ms", "--metric", "p50_ms", "--correction", "bh"], "metrics-step_ms+p50_ms_correction-bh"),
])
def test_flags_and_names_from_settings(given: dict, flags: list[str], name: str) -> None:
    recorded = AnalysisSettings(vary="amp")
    s = recorded.with_given(**given)
    assert s.flags(recorded) == flags and s.derived_name(recorded) == name
    assert recorded.with_given().flags(recorded) == []
    # the flags, given back, give the same settings
    back = recorded.with_given(baseline=given.get("baseline"), metrics=given.get("metrics"),
                               correction=given.get("correction"), auto_baseline=given.get("auto_baseline", False))
    assert back == s


# ---- every job folder accounted for (issue 10) ---------------------------------------------------

def _broken_sweep(tmp_path: Path) -> Path:
    """Six good jobs (two configs x 3 trials), then one job folder of each broken kind."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from helpers.sweeps import BASE_CONFIG, write_job

    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    write_job(sweep, 6, {**BASE_CONFIG, "batch": 16}, None, status="failed", error="boom")
    (sweep / "7").mkdir()                                             # missing row
    (sweep / "8" / "row.parquet").mkdir(parents=True)                 # a folder named row.parquet
    (sweep / "9").mkdir()
    (sweep / "9" / "row.parquet").write_bytes(b"not parquet")        # corrupt
    good = pq.read_table(sweep / "0" / "row.parquet")
    (sweep / "10").mkdir()
    pq.write_table(good.slice(0, 0), sweep / "10" / "row.parquet")    # zero rows
    (sweep / "11").mkdir()
    pq.write_table(pa.table({"a": [1], "b": ["x"]}), sweep / "11" / "row.parquet")  # foreign schema
    two = pa.concat_tables([good, good]).set_column(2, "job_num", pa.array([12, 12], pa.int32()))
    (sweep / "12").mkdir()
    pq.write_table(two, sweep / "12" / "row.parquet")                # two rows in one file
    (sweep / "13").mkdir()
    pq.write_table(good, sweep / "13" / "row.parquet")               # a copy of job 0's row
    return sweep


EXPECTED_STATES = {"6": "failed", "7": "missing_row", "8": "corrupt_row", "9": "corrupt_row",
                   "10": "corrupt_row", "11": "foreign_schema", "12": "duplicate_rows", "13": "duplicate_rows"}


def test_every_job_folder_is_accounted_for(tmp_path: Path, capsys) -> None:
    sweep = _broken_sweep(tmp_path)
    assert cli_main(["analyze", str(sweep), "--no-html", "--json"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    states = {f["job"]: f["state"] for f in doc["job_folders"]}
    assert states == EXPECTED_STATES
    assert doc["jobs"] == {"total": 14, "ok": 6, "failed": 1, "corrupt_row": 3, "missing_row": 1,
                           "foreign_schema": 1, "duplicate_rows": 2}
    # only the six good jobs are analysed: 3 trials per side, the two-row file is not counted twice
    assert {(c["n_baseline"], c["n"]) for c in doc["comparisons"]} == {(3, 3)}
    err = captured.err
    assert err.count("\n") == 1 and err.startswith("yoloprof: error:") and "--allow-partial" in err
    assert "job 7: missing_row" in err
    md = (sweep / "analysis" / "comparison.md").read_text()
    for job, state in EXPECTED_STATES.items():
        if state != "failed":
            assert f"job {job}: {state.replace('_', ' ')}" in md
    assert "same job (20240101-000000-abcd/0) as folder 0" in md and "holds 2 rows" in md
    assert cli_main(["analyze", str(sweep), "--no-html", "--allow-partial"]) == 0
    out = capsys.readouterr().out
    assert "job 11: foreign schema" in out and "job 8: corrupt row: row.parquet is a folder" in out


def test_only_failed_jobs_is_still_exit_0(tmp_path: Path) -> None:
    from helpers.sweeps import BASE_CONFIG, write_job

    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    write_job(sweep, 6, {**BASE_CONFIG, "batch": 16}, None, status="failed", error="boom")
    assert cli_main(["analyze", str(sweep), "--no-html"]) == 0


def test_matplotlib_chatter_becomes_one_note(tmp_path: Path, monkeypatch, capfd) -> None:
    import warnings

    import yoloprof.render.html as html

    def chatty(result):
        for _ in range(3):
            warnings.warn("Tight layout not applied. The left and right margins cannot be made large "
                          "enough\n to accommodate all Axes decorations.", UserWarning)
        return "<html></html>"

    monkeypatch.setattr(html, "render_report", chatty)
    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    assert cli_main(["analyze", str(sweep)]) == 0
    out, err = capfd.readouterr()
    assert "UserWarning" not in out + err and "warnings.warn" not in out + err
    assert out.count("note: report figures: Tight layout not applied.") == 1


def test_rows_come_from_the_consolidation_unless_rewritten_since(tmp_path: Path, monkeypatch) -> None:
    import os

    import pyarrow.parquet as pq

    import yoloprof.analysis.inventory as inv
    from yoloprof.profiles.rows import consolidate

    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    consolidate(sweep)
    read = []
    real = inv.read_one
    monkeypatch.setattr(inv, "read_one", lambda p: read.append(p.parent.name) or real(p))
    rows, folders = inv.read_sweep(sweep)
    assert read == [] and rows.num_rows == 6 and {f.state for f in folders} == {"ok"}
    # job 3 rewritten after the consolidation (a resumed job): its own file is read, and wins
    table = pq.read_table(sweep / "3" / "row.parquet")
    table = table.set_column(table.schema.get_field_index("step_ms"), "step_ms", __import__("pyarrow").array([1.0]))
    pq.write_table(table, sweep / "3" / "row.parquet")
    later = os.stat(sweep / "results.parquet").st_mtime_ns + 10**9
    os.utime(sweep / "3" / "row.parquet", ns=(later, later))
    rows, _ = inv.read_sweep(sweep)
    assert read == ["3"]
    step = dict(zip(rows.column("job_num").to_pylist(), rows.column("step_ms").to_pylist()))
    assert step[3] == 1.0 and len(step) == 6
    # the same rows as reading every file one by one
    every = {int(p.parent.name): pq.read_table(p).column("step_ms")[0].as_py() for p in sweep.glob("*/row.parquet")}
    assert step == every


def test_jobs_of_one_process_are_named_as_not_independent():
    import pandas as pd

    from yoloprof.analysis.collect import _inprocess_warnings

    assert _inprocess_warnings(pd.DataFrame({"isolation": ["process"] * 4})) == []
    assert _inprocess_warnings(pd.DataFrame({"isolation": ["inprocess"]})) == []
    [w] = _inprocess_warnings(pd.DataFrame({"isolation": ["inprocess", "inprocess", "process"]}))
    assert w.startswith("2 jobs ran in one process (launch.isolation=inprocess): they are not independent")
