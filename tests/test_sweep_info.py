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
