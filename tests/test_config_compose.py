"""The packaged Hydra config: composition, structured-schema validation, job -> CaptureSettings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from helpers.paths import CONF
from yoloprof.config.capture_settings import PRECISIONS, CaptureSettings, mode_defaults
from yoloprof.config.compose import compose_job
from yoloprof.config.translate import (BUILTIN_TARGET, check_target, config_hash, group_hash,
                                       settings_from_cfg)
from yoloprof.errors import UsageError


@pytest.mark.parametrize("mode", ["train", "infer"])
def test_mode_defaults_match_capture_settings(hydra_compose, mode):
    cfg = hydra_compose([f"mode={mode}", "device=cpu"])
    got = settings_from_cfg(cfg)
    assert got == CaptureSettings.for_mode(mode, device="cpu")  # every field, not a chosen few
    assert got.model == "yolo" and cfg.model._target_ == BUILTIN_TARGET
    assert got.batch == mode_defaults(mode)["batch"] == {"train": 16, "infer": 1}[mode]


def test_top_level_axes_reach_the_capture(hydra_compose):
    cfg = hydra_compose(["device=cpu", "batch=4", "imgsz=320", "precision=bfloat16", "threads=1",
                         "size=s", "workers=0", "repeat=3", "trial=2", "capture.steps=7", "seed=5"])
    s = settings_from_cfg(cfg)
    assert (s.batch, s.imgsz, s.precision, s.threads, s.size, s.workers, s.repeat, s.trial, s.steps, s.seed) == \
        (4, 320, "bfloat16", 1, "s", 0, 3, 2, 7, 5)
    assert compose_job([]).hydra.job.chdir is False


@pytest.mark.parametrize("override, words", [
    ("precision=float8", ["precision", *PRECISIONS]),
    ("mode=fast", ["mode", "train", "infer"]),
    ("batch=two", ["batch"]),
    ("bacth=2", ["bacth"]),
])
def test_schema_rejects_bad_values_naming_key_and_choices(override, words):
    with pytest.raises(UsageError) as err:
        compose_job([override])
    message = str(err.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("override, word", [("batch=-3", "batch"), ("device=gpu", "device"),
                                            ("imgsz=100", "imgsz"), ("workers=-1", "workers"),
                                            ("size=x", "size x: the built-in detector's sizes are n, t, s, m, l")])
def test_value_rules_fail_in_translation(override, word):
    with pytest.raises(UsageError, match=word):
        settings_from_cfg(compose_job([override, "device=cpu"] if "device" not in override else [override]))


def test_custom_model_becomes_factory_and_kwargs():
    cfg = compose_job(["model=custom_example", "device=cpu"])
    s = settings_from_cfg(cfg)
    example = yaml.safe_load((CONF / "model" / "custom_example.yaml").read_text())
    assert s.model == example["_target_"]
    assert s.model_kwargs == {k: v for k, v in example.items() if k not in ("_target_", "loss")}
    check_target(s.model)  # the example must really import


def test_target_that_does_not_import_is_named():
    with pytest.raises(UsageError, match="no_such_pkg.Net"):
        check_target("no_such_pkg.Net")


def test_hashes_separate_trials_from_configurations():
    a = CaptureSettings.for_mode("train", device="cpu", batch=2)
    b = CaptureSettings.for_mode("train", device="cpu", batch=2, trial=1, seed=1)
    c = CaptureSettings.for_mode("train", device="cpu", batch=4)
    assert config_hash(a) == config_hash(CaptureSettings.for_mode("train", device="cpu", batch=2))
    assert config_hash(a) != config_hash(b) and group_hash(a) == group_hash(b)
    assert group_hash(a) != group_hash(c)


def test_sweep_dir_layout_and_unique_ids():
    a, b = compose_job(["sweep=demo"]), compose_job(["sweep=demo"])
    parts = Path(a.hydra.sweep.dir).parts
    assert parts[:4] == ("runs", "profile", "sweeps", "demo")
    assert OmegaConf.to_container(a.hydra.sweep)["subdir"] == "${hydra.job.num}"
    assert Path(a.hydra.run.dir).parent == Path(a.hydra.sweep.dir)
    # one process resolves one id (the env var) - the app sets a fresh one per sweep
    assert a.hydra.sweep.dir == b.hydra.sweep.dir


def test_new_sweep_ids_never_collide():
    from yoloprof.config.schema import new_sweep_id

    ids = {new_sweep_id() for _ in range(500)}
    assert len(ids) == 500
