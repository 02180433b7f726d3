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


def test_hydra_output_dir_overrides_are_refused_with_the_way_out(tmp_path, monkeypatch, capsys):
    """Hydra writes a single run to hydra.run.dir exactly; yoloprof used to write to <parent>/0
    instead. Now it refuses, names the key and says how to choose the folder, and writes nothing."""
    from yoloprof.cli import main

    monkeypatch.chdir(tmp_path)
    for key in ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir"):
        assert main(["sweep", f"{key}=X/one", "device=cpu"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and key in err[0] and "project=DIR" in err[0]
    assert list(tmp_path.iterdir()) == []
