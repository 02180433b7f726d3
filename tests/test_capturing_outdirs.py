"""`yoloprof run`/`infer` keep earlier profiles (train, train2, ... or --exist-ok) and
`compare --last PROJECT` compares the two latest."""

from __future__ import annotations

import json
import os

import pytest

from yoloprof.cli import main
from yoloprof.defs.files import RESULTS_DIR
from yoloprof.profiles.outdirs import last_two, run_dir
from yoloprof.errors import UsageError


def test_each_run_gets_its_own_folder_and_compare_last_takes_the_two_latest(tmp_path, fake_run, capsys):
    args = ["run", "--device", "cpu", "--project", str(tmp_path), "--json"]
    for _ in range(3):
        assert main(args) == 0
    # beside the captures, the project's results store (docs/history.md) is the only other folder
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != RESULTS_DIR) == ["train", "train2", "train3"]
    steps = [json.loads((tmp_path / n / "profile.json").read_text())["metrics"]["step_ms"]["value"]
             for n in ("train", "train2", "train3")]
    assert steps == [50.0, 60.0, 70.0]  # nothing overwritten
    assert main([*args, "--exist-ok"]) == 0  # the old behaviour, asked for
    assert json.loads((tmp_path / "train" / "profile.json").read_text())["metrics"]["step_ms"]["value"] == 80.0
    os.utime(tmp_path / "train" / "profile.json", (1, 1))  # train3 is the latest again
    capsys.readouterr()
    assert main(["compare", "--last", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr()
    assert f"{tmp_path / 'train2' / 'profile.json'} -> {tmp_path / 'train3' / 'profile.json'}" in out.err
    assert json.loads(out.out)  # the comparison itself, as `compare BEFORE AFTER` prints it


def test_run_dir_and_last_two_rules(tmp_path):
    assert run_dir(tmp_path, "train") == tmp_path / "train"
    (tmp_path / "train").mkdir()
    assert run_dir(tmp_path, "train") == tmp_path / "train"  # empty: a refused run left it, reused
    (tmp_path / "train" / "profile.json").write_text("{}")
    (tmp_path / "train2").mkdir()
    (tmp_path / "train2" / "x").write_text("")
    assert run_dir(tmp_path, "train") == tmp_path / "train3"
    assert run_dir(tmp_path, "train", exist_ok=True) == tmp_path / "train"
    with pytest.raises(UsageError, match="only capture"):
        last_two(tmp_path)
    for name in ("train10", "infer", "infer2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile.json").write_text("{}")
    os.utime(tmp_path / "infer2" / "profile.json", (1, 1))
    os.utime(tmp_path / "infer" / "profile.json", (1, 1))
    assert last_two(tmp_path) == (tmp_path / "train" / "profile.json", tmp_path / "train10" / "profile.json")
    assert main(["compare", "a.json", "--last", str(tmp_path)]) == 2
