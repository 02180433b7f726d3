"""Every configuration of a grid is checked before the first job: data path, images, labels,
enough images for warm-up + steps at the batch, model keywords; the messages name Hydra keys
(and, for `yoloprof run`, the flags); exit 2 with nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from yoloprof.cli import main as cli_main
from yoloprof.errors import UsageError
from yoloprof.sweep.app import main

QUIET = ["device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]


def _dataset(root: Path, images: int, labels: bool = True) -> Path:
    from PIL import Image

    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for i in range(images):
        Image.new("RGB", (40, 40), (i * 30, 90, 20)).save(root / "images" / f"{i}.jpg")
        if labels:
            (root / "labels" / f"{i}.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    return root


def _refused(args: list[str], tmp_path: Path) -> str:
    with pytest.raises(UsageError) as err:
        main([*args, *QUIET])
    assert not list(tmp_path.glob("runs/profile/sweeps/*/*")), "a job ran or a sweep dir was left"
    message = str(err.value)
    assert "\n" not in message and "--" not in message  # Hydra keys, never the CLI flags
    return message


def test_data_problems_are_found_before_the_first_job(sweep_env, tmp_path):
    small = _dataset(tmp_path / "small", 5)
    bare = _dataset(tmp_path / "bare", 8, labels=False)
    (tmp_path / "empty").mkdir()
    msg = _refused(["-m", "batch=1,2", "data=yolo", "data.path=nope"], tmp_path)
    assert "data.path='nope' does not exist" in msg and "job 0" in msg
    assert "no images" in _refused(["data=yolo", f"data.path={tmp_path / 'empty'}"], tmp_path)
    msg = _refused(["-m", "batch=1,2", "data=yolo", f"data.path={small}", "capture.warmup=1",
                    "capture.steps=2"], tmp_path)  # batch 1 fits (5 >= 3), batch 2 does not (2 batches)
    assert "job 1" in msg and "5 images = 2 full batches of batch=2" in msg
    assert "capture.warmup=1 + capture.steps=2 need 3" in msg and "smaller batch (at most 1)" in msg
    assert "not one label file" in _refused(["data=yolo", f"data.path={bare}", "capture.steps=2",
                                             "capture.warmup=0", "batch=1"], tmp_path)


def test_model_keywords_are_checked_against_the_factory(sweep_env, tmp_path):
    (tmp_path / "mymodels.py").write_text("import torch\ndef Net(width=4, depth=1):\n"
                                          "    return torch.nn.Conv2d(3, width, 3)\n")
    msg = _refused(["-m", "batch=1,2", "model._target_=mymodels.Net", "+model.widht=8"], tmp_path)
    assert "model.widht" in msg and "did you mean 'model.width'" in msg and "width, depth" in msg
    msg = _refused(["+model.widht=8"], tmp_path)  # the built-in detector takes none
    assert "model.widht" in msg and "built-in" in msg


def test_run_names_the_flags(tmp_path, capsys):
    small = _dataset(tmp_path / "small", 3)
    code = cli_main(["run", str(small), "--device", "cpu", "--batch", "2", "--steps", "2", "--warmup", "1",
                     "--imgsz", "64", "--project", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3 and "--warmup 1 + --steps 2 need 3" in err and "--batch 2" in err
    assert cli_main(["run", str(tmp_path / "nope"), "--device", "cpu", "--project", str(tmp_path / "out")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, line, key, hint", [
    ("capture:\n  warmup: 1\n  stesp: 3\n", 4, "capture.stesp", "capture.steps"),
    ("bacth: 3\n", 2, "bacth", "batch"),
])
def test_a_typo_in_a_users_yaml_names_file_line_key_and_the_closest(sweep_env, tmp_path, text, line, key, hint):
    conf = tmp_path / "conf" / "sweep"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("# @package _global_\n" + text)
    msg = _refused(["--config-dir", str(tmp_path / "conf"), "+sweep=mine"], tmp_path)
    assert msg == (f"{conf / 'mine.yaml'}, line {line}: unknown key {key!r} (did you mean {hint!r}?)")


def test_a_dataset_changed_since_is_listed_again(tmp_path):
    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.workloads.inputcheck import CLI, check_data

    data = tmp_path / "ds"
    (data / "images").mkdir(parents=True)
    settings = CaptureSettings.for_mode("train", data=str(data), batch=1, warmup=0, steps=2)
    with pytest.raises(UsageError, match="no images"):
        check_data(settings, CLI)
    _dataset(tmp_path / "more", 2)
    for sub in ("images", "labels"):
        (data / sub).mkdir(exist_ok=True)
        for f in (tmp_path / "more" / sub).iterdir():
            f.rename(data / sub / f.name)
    check_data(settings, CLI)  # the images added since are seen
