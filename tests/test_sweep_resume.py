"""resume= reproduces the manifest or refuses; finished jobs are never rewritten but by a confirmed
rerun; what resume says it runs is what it runs; an interrupted resume counts right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yoloprof.errors import UsageError
from yoloprof.profiles.jobstate import read_state
from yoloprof.profiles.rows import ROW_NAME, read_rows
from yoloprof.sweep import resume as resumes
from yoloprof.sweep.app import main

QUIET = ["device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]


def _snapshot(job: Path) -> dict[str, bytes]:
    """Every file of a job folder, byte for byte (Hydra's .hydra/ included)."""
    return {str(p.relative_to(job)): p.read_bytes() for p in sorted(job.rglob("*")) if p.is_file()}


def _two_jobs(sweep_env, monkeypatch) -> Path:
    monkeypatch.setenv("FAKE_FAIL_BATCH", "2")
    assert main(["-m", "batch=1,2", "imgsz=64", *QUIET]) == 1
    monkeypatch.delenv("FAKE_FAIL_BATCH")
    [sweep] = sweep_env()
    return sweep


@pytest.mark.slow
def test_resume_refuses_other_overrides_keeps_finished_jobs_and_reruns_only_when_confirmed(
        sweep_env, monkeypatch, capsys):
    import yoloprof.capturing.builtin.capture_entry as capture_api
    from helpers.fake_sweep import fake_capture

    sweep = _two_jobs(sweep_env, monkeypatch)  # job 0 ok, job 1 failed
    before = _snapshot(sweep / "0")
    state0 = read_state(sweep / "0")
    # other overrides: refused, one line naming each difference, nothing touched
    with pytest.raises(UsageError) as err:
        main([f"resume={sweep}", "-m", "batch=4", "imgsz=64", *QUIET])
    msg = str(err.value)
    assert "\n" not in msg and "batch=4 (the sweep has batch=1,2)" in msg and "resume=" in msg
    with pytest.raises(UsageError, match=r"device=cuda:0 \(the sweep has device=cpu\)"):
        main([f"resume={sweep}", "-m", "batch=1,2", "imgsz=64", *QUIET[1:], "device=cuda:0"])
    with pytest.raises(UsageError, match="imgsz=64 missing"):
        main([f"resume={sweep}", "-m", "batch=1,2", *QUIET])
    # an interrupted resume: counts the planned jobs, never marks the finished one interrupted
    def interrupt(settings, out_dir, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(capture_api, "capture", interrupt)
    capsys.readouterr()
    assert main([f"resume={sweep}"]) == 130
    assert "interrupted after 2 of 2 jobs (0 by this run)" in capsys.readouterr().err
    assert read_state(sweep / "0") == state0 and read_state(sweep / "1")["state"] == "interrupted"
    # the stored overrides in another order: the same sweep, continued; job 0 not launched at all
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    assert main([f"resume={sweep}", *reversed(QUIET), "imgsz=64", "batch=1,2", "-m"]) == 0
    assert "1 of 2 jobs have an ok row; running 1:" in capsys.readouterr().err
    assert _snapshot(sweep / "0") == before
    assert list(read_rows(sweep)["status"]) == ["ok", "ok"]
    # finished jobs run again only when confirmed
    with pytest.raises(UsageError, match="finished job.* 0; add --yes"):
        main([f"resume={sweep}", "rerun=0"])
    with pytest.raises(UsageError, match="no job 7"):
        main([f"resume={sweep}", "rerun=7", "--yes"])
    with pytest.raises(UsageError, match="with resume="):
        main(["rerun=0", *QUIET])
    assert _snapshot(sweep / "0") == before
    kept1 = _snapshot(sweep / "1")
    assert main([f"resume={sweep}", "rerun=0", "--yes"]) == 0
    assert (sweep / "0" / ROW_NAME).read_bytes() != before[ROW_NAME]  # rewritten, as confirmed
    assert read_state(sweep / "0")["state"] == "done" and _snapshot(sweep / "1") == kept1


def test_resume_alone_reproduces_every_stored_override_and_runs_what_it_says(sweep_env, monkeypatch, capsys):
    (Path.cwd() / "mymodels.py").write_text("import torch\ndef Net(width=4):\n"
                                            "    return torch.nn.Conv2d(3, width, 3)\n")
    monkeypatch.setenv("FAKE_FAIL_BATCH", "2")
    assert main(["-m", "batch=1,2,3", "imgsz=64", "+model.width=8", "model._target_=mymodels.Net", *QUIET]) == 1
    [sweep] = sweep_env()
    monkeypatch.delenv("FAKE_FAIL_BATCH")
    (sweep / "2" / ROW_NAME).unlink()
    kept = {n: _snapshot(sweep / str(n)) for n in (0,)}
    capsys.readouterr()
    main([f"resume={sweep}"])
    err = capsys.readouterr().err
    assert "1 of 3 jobs have an ok row; running 2:" in err
    said = {int(line.split("job ", 1)[1].split(":")[0]) for line in err.splitlines() if ":   job " in line}
    assert said == {1, 2}
    assert _snapshot(sweep / "0") == kept[0]  # not launched at all: no file of it rewritten
    df = read_rows(sweep).sort_values("job_num")
    for row in df.itertuples():  # every stored override came back, model and device included
        overrides = json.loads(row.overrides)
        assert "model._target_=mymodels.Net" in overrides and "device=cpu" in overrides
    manifest = json.loads((sweep / "yoloprof_sweep.json").read_text())
    assert [p["job_num"] for p in manifest["planned"]] == [0, 1, 2]


def test_an_edited_grid_is_refused_on_resume(sweep_env, tmp_path, monkeypatch):
    conf = tmp_path / "conf" / "sweep"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("# @package _global_\nhydra:\n  sweeper:\n    params:\n      batch: 1,2\n")
    assert main(["--config-dir", str(tmp_path / "conf"), "+sweep=mine", "-m", *QUIET]) == 0
    [sweep] = sweep_env("mine")
    (conf / "mine.yaml").write_text("# @package _global_\nhydra:\n  sweeper:\n    params:\n      batch: 1,4\n")
    before = _snapshot(sweep / "1")
    with pytest.raises(UsageError, match="job 1 is now .*batch=4.*planned .*batch=2"):
        main([f"resume={sweep}"])
    assert _snapshot(sweep / "1") == before


def test_runs_of_and_parse_rerun():
    assert resumes.runs_of([7, 3, 8, 9, 0]) == [(0, 1), (3, 4), (7, 10)]
    assert resumes.parse_rerun("0,2-3", 5) == {0, 2, 3}
    assert resumes.parse_rerun("all", 3) == {0, 1, 2}
    with pytest.raises(UsageError):
        resumes.parse_rerun("x", 3)
