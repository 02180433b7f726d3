"""`yoloprof sweep --cfg job` shows the config a run would use, the sweep name included."""

from __future__ import annotations


def test_cfg_job_shows_the_implied_sweep_name_of_a_user_file(tmp_path, capsys):
    from yoloprof.sweep.app import main

    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "mine.yaml").write_text(
        "# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      batch: 1,2\n")
    assert main(["--cfg", "job", "--config-dir", str(tmp_path), "+sweep=mine"]) == 0
    out = capsys.readouterr().out
    assert "sweep_name: mine" in out.splitlines()
    assert main(["--cfg", "job", "+sweep=demo"]) == 0  # a packaged file names itself
    assert "sweep_name: demo" in capsys.readouterr().out.splitlines()
    assert main(["--cfg", "job", "--config-dir", str(tmp_path), "+sweep=mine", "sweep_name=other"]) == 0
    assert "sweep_name: other" in capsys.readouterr().out.splitlines()


def test_cfg_job_after_overrides_with_an_implied_sweep_name(tmp_path, capsys):
    """`+sweep=mine batch=2 --cfg job`: the implied `sweep_name=mine` joins the overrides, not
    the end of the command line (Hydra's parser took it for an unknown argument)."""
    from yoloprof.sweep.app import main

    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "mine.yaml").write_text("# @package _global_\nhydra:\n  mode: MULTIRUN\n")
    assert main(["--config-dir", str(tmp_path), "+sweep=mine", "batch=2", "--cfg", "job"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "sweep_name: mine" in lines and "batch: 2" in lines


def test_hydra_sweep_subdir_is_refused_with_the_way_out(tmp_path, monkeypatch, capsys):
    """Job folders are named by job number (resume and analysis find them so): renaming them is
    refused in one line that names the key and the folder settings that do work; nothing written."""
    from yoloprof.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "-m", "hydra.sweep.subdir=job_${hydra.job.num}", "device=cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "hydra.sweep.subdir" in err[0] and "hydra.sweep.dir=DIR" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_hydra_sweep_dir_and_run_dir_are_the_sweep_folder(tmp_path, monkeypatch):
    """`hydra.sweep.dir=X` (Hydra's convention, as lightning-hydra-template sets it): the jobs, the
    manifest and results.parquet are in X and nowhere else; `hydra.run.dir=Y` for a single run
    likewise (its one job in Y/0). An existing empty X is taken as it is."""
    import pandas as pd

    import yoloprof.capturing.builtin.capture_entry as capture_api
    from helpers.fake_sweep import fake_capture
    from yoloprof.defs import files
    from yoloprof.sweep.app import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    quiet = ["device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]
    (tmp_path / "X").mkdir()
    assert main(["-m", "batch=1,2", "hydra.sweep.dir=X", *quiet]) == 0
    x = tmp_path / "X"
    assert sorted(p.name for p in x.iterdir() if p.is_dir()) == ["0", "1"]
    assert (x / files.MANIFEST).is_file() and (x / "0" / "row.parquet").is_file()
    assert sorted(pd.read_parquet(x / files.RESULTS)["batch"]) == [1, 2]
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    assert main(["hydra.run.dir=out/Y", *quiet]) == 0
    y = tmp_path / "out" / "Y"
    assert (y / files.MANIFEST).is_file() and (y / "0" / "row.parquet").is_file()
    assert len(pd.read_parquet(y / files.RESULTS)) == 1
    # no sweep folder elsewhere; the project's results store (docs/history.md) keeps the rows too
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "runs") == ["X", "out"]
    assert not (tmp_path / "runs" / "profile" / "sweeps").exists()
