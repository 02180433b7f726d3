"""Inputs refused before the first job, in the same words as the command line:
`data=yolo` without `data.path` (it would measure the default data while labelled yolo), and a
misspelled class in `model._target_` ("module 'usermodels' has no attribute 'TinyResNett'"; the
sweep once said "No module named 'usermodels.TinyResNett'; 'usermodels' is not a package")."""

from __future__ import annotations

import re
import sys

import pytest

import yoloprof.capturing.builtin.capture_entry as capture_api
from helpers.fake_sweep import fake_capture
from helpers.paths import run_main
from yoloprof.config.translate import check_target
from yoloprof.errors import UsageError
from yoloprof.sweep.app import main
from yoloprof.workloads.models import import_target

QUIET = ["device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]
USERMODELS = "import torch\n\ndef TinyResNet(width=4):\n    return torch.nn.Conv2d(3, width, 3)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    monkeypatch.setattr("sys.path", list(sys.path))
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    (tmp_path / "usermodels.py").write_text(USERMODELS)
    yield tmp_path
    sys.modules.pop("usermodels", None)


def _refused(args, project):
    with pytest.raises(UsageError) as err:
        main([*args, *QUIET])
    assert not list(project.glob("runs/profile/sweeps/*/*"))  # nothing ran
    return str(err.value)


def test_yolo_data_without_path_fails_before_any_job(project):
    message = _refused(["-m", "batch=1,2", "data=yolo"], project)
    assert "data.path" in message and "\n" not in message


def test_yolo_data_key_on_the_command_line_is_refused_at_once(project):
    out = run_main("run", "data=yolo", "--steps", "1", cwd=project)
    assert out.returncode == 2 and "data=yolo" in out.stderr and "positional" in out.stderr


def test_misspelled_class_reads_like_the_cli(project):
    expected = "module 'usermodels' has no attribute 'TinyResNett' (did you mean 'TinyResNet'?)"
    message = _refused(["-m", "batch=1,2", "model._target_=usermodels.TinyResNett"], project)
    assert expected in message and "not a package" not in message
    with pytest.raises(UsageError, match=re.escape(expected)):
        import_target("usermodels.TinyResNett")  # the CLI's path, same words


@pytest.mark.parametrize("target, words", [
    ("no_such_pkg.Net", "No module named 'no_such_pkg'"),
    ("usermodels.TinyResNet.nope", "'usermodels.TinyResNet' has no attribute 'nope'"),
])
def test_other_import_failures_name_what_is_missing(project, target, words):
    with pytest.raises(UsageError, match=words):
        check_target(target)
