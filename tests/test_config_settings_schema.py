"""The one settings schema and the one device parser, checked through every entry point a user has:
`yoloprof run`, `yoloprof infer` and a sweep job must accept, refuse and default exactly alike."""

from __future__ import annotations

import argparse

import pytest
import yaml

from helpers.paths import CONF, SWEEPS
from yoloprof.cli import build_parser, main
from yoloprof.config.cli_args import settings_from_args
from yoloprof.config.compose import compose_job
from yoloprof.config.device_spec import DeviceSpec, parse_device
from yoloprof.config.schema import known_keys
from yoloprof.config.capture_settings import (FIELDS, CaptureSettings, effective_precision, effective_threads,
                                      spec_of)
from yoloprof.config.translate import settings_from_cfg
from yoloprof.errors import UsageError

COMMANDS = {"train": "run", "infer": "infer"}

# (spelling, canonical device or None when refused): the table every entry point must follow.
DEVICE_TABLE = [
    ("cpu", "cpu"), ("CPU", "cpu"), (" cpu ", "cpu"), ("0", "cuda:0"), ("3", "cuda:3"),
    ("cuda", "cuda:0"), ("cuda:1", "cuda:1"), ("CUDA:0", "cuda:0"), ("Cuda:12", "cuda:12"),
    ("cuda0", None), ("gpu", None), ("cuda:", None), ("cuda:-1", None), ("-1", None), ("0,1", None),
    ("", None), ("cpu:0", None), ("mps", None), ("1.0", None), ("cuda:0:1", None), ("cuda 0", None),
]


def command_line(mode: str):
    parser = build_parser()
    return lambda device: settings_from_args(parser.parse_args([COMMANDS[mode], "--device", device]), mode)


@pytest.mark.parametrize("entry", ["run", "infer", "sweep"])
def test_device_table_is_the_same_through_every_entry_point(entry):
    if entry == "sweep":
        cfg = compose_job([])  # composed once; each spelling set as a job's `device=` would set it

        def through(device: str) -> CaptureSettings:
            cfg.device = device  # the schema's typed str field, as Hydra assigns an override
            return settings_from_cfg(cfg)
    else:
        through = command_line({"run": "train", "infer": "infer"}[entry])
    for spelling, canonical in DEVICE_TABLE:
        if canonical is None:
            with pytest.raises(UsageError, match="cpu, N .*cuda or cuda:N"):
                through(spelling)
        else:
            assert through(spelling).resolved().device == canonical, (entry, spelling)


def test_sweep_overrides_reach_the_same_parser():
    """Through Hydra's own override parsing too (a quoted and an upper-case spelling, a refused one)."""
    assert settings_from_cfg(compose_job(["device=CPU"])).resolved().device == "cpu"
    with pytest.raises(UsageError, match="invalid device 'cuda0'"):
        settings_from_cfg(compose_job(["device=cuda0"]))


def test_device_parser_types():
    assert parse_device("cuda:2") == DeviceSpec("cuda", 2) and parse_device(1) == DeviceSpec("cuda", 1)
    assert parse_device("cpu") == DeviceSpec("cpu", None) and not parse_device("cpu").is_cuda
    for bad in (True, 1.0, None):
        with pytest.raises(UsageError):
            parse_device(bad)


def test_sweep_hydra_int_device_is_a_cuda_index():
    """`device=1` reaches the schema as the int 1 (Hydra types it); it must mean what `--device 1` does."""
    assert settings_from_cfg(compose_job(["device=1"])).resolved().device == "cuda:1"


@pytest.mark.parametrize("mode", ["train", "infer"])
def test_command_line_and_sweep_defaults_are_identical(mode):
    """Two generated paths (argparse, Hydra schema) give the same settings, field by field."""
    cli = settings_from_args(build_parser().parse_args([COMMANDS[mode]]), mode)
    sweep = settings_from_cfg(compose_job([f"mode={mode}"]))
    assert cli == sweep


def test_documented_defaults_of_the_libreyolo_spec_differences():
    """Hand-written expectations (DESIGN.md section 2), not read back from the schema."""
    train = settings_from_args(build_parser().parse_args(["run"]), "train")
    infer = settings_from_args(build_parser().parse_args(["infer"]), "infer")
    assert (train.size, train.weights, train.batch, train.warmup, train.steps, train.workers) == \
        ("n", "none", 16, 5, 20, 8)
    assert (infer.batch, infer.warmup, infer.runs, infer.conf, infer.iou, infer.max_det, infer.data) == \
        (1, 20, 100, None, None, None, None)  # None = the family's own (config/postprocess_defaults.py)
    resolved = infer.resolved()  # the built-in detector's own: yoloprof's pipeline
    assert (resolved.conf, resolved.iou, resolved.max_det) == (0.25, 0.45, 300)
    assert (train.trace_wait, train.trace_warmup, train.trace_active) == (1, 1, 3)


@pytest.mark.parametrize("command", ["run", "infer"])
def test_help_shows_every_default(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    for action in sub._actions:
        if action.dest in FIELDS and action.option_strings and action.const is None:
            assert action.help and "(default: " in action.help, action.dest
    for shown in ("--size SIZE model size: the built-in detector's (n t s m l) or a family's",
                  "--model-arg KEY=VALUE keyword arguments of the model's factory or builder",
                  "--weights WEIGHTS 'none' (seeded random init), a state-dict file, or a checkpoint",
                  "--trace-active TRACE_ACTIVE"):
        assert shown in text


def test_every_packaged_yaml_key_is_in_the_schema_and_no_default_is_restated():
    """conf/ restates no setting's default (the schema is their one home), and every key that a conf
    or sweep file sets exists in the schema (model.* is open: factory kwargs)."""
    known = set(known_keys())
    leaves = []

    def walk(node, prefix=""):
        for key, value in node.items():
            if key in ("defaults", "hydra") or prefix.startswith("model."):
                continue
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                leaves.append((prefix + key, value))
    for path in [*CONF.rglob("*.yaml"), *SWEEPS.glob("*.yaml")]:
        leaves.clear()
        doc = yaml.safe_load(path.read_text()) or {}
        group = path.parent.name if path.parent != CONF and path.parent != SWEEPS else None
        walk({group: doc} if group in ("data",) else doc if group != "model" else {})
        for key, value in leaves:
            assert key in known, (path.name, key)
            if path.parent != SWEEPS and key in FIELDS:
                assert isinstance(value, str) and value.startswith("${"), (path.name, key, value)


def test_precision_is_one_honest_axis():
    cuda, cpu = DeviceSpec("cuda", 0), DeviceSpec("cpu")
    assert [effective_precision(p, cuda) for p in ("auto", "float32", "float16", "bfloat16")] == \
        ["float16", "float32", "float16", "bfloat16"]
    assert effective_precision("auto", cpu) == "float32"
    spec = yaml.safe_load((SWEEPS / "amp_dtypes.yaml").read_text())
    points = spec["hydra"]["sweeper"]["params"]
    assert set(points) == {"precision"}  # no second key that could contradict it
    assert sorted(points["precision"].split(",")) == ["bfloat16", "float16", "float32"]
    for old in ("amp", "amp_dtype"):
        assert old not in FIELDS and old not in known_keys()


def test_threads_auto_rule_hand_worked():
    assert [effective_threads(0, lambda n=n: n) for n in (1, 2, 3, 4, 16, None)] == [1, 1, 1, 2, 8, 1]
    assert effective_threads(3, lambda: 2) == 3  # an explicit count is kept, even above the CPUs
    assert spec_of("threads").minimum == 0
    with pytest.raises(UsageError, match="--threads must be >= 0"):
        CaptureSettings.for_mode("train", threads=-1).validate()


@pytest.mark.parametrize("override, hint", [
    ("+bacth=4", "did you mean 'batch'"), ("+capture.stesp=4", "did you mean 'capture.steps'"),
    ("+imgsize=320", "did you mean 'imgsz'"), ("+amp_dtype=bfloat16", "replaced by 'precision'"),
    ("bacth=4", "did you mean 'batch'"),
])
def test_unknown_keys_are_refused_with_the_closest_known_key(override, hint):
    with pytest.raises(UsageError, match=hint):
        settings_from_cfg(compose_job([override, "device=cpu"]))


def test_extra_model_kwargs_stay_allowed():
    cfg = compose_job(["model=custom_example", "+model.bias=false", "device=cpu"])
    assert settings_from_cfg(cfg).model_kwargs["bias"] is False


@pytest.mark.parametrize("argv, hint", [
    (["run", "weights=X.pt"], "did you mean --weights X.pt?"),
    (["run", "data.yaml", "batch=4"], "did you mean --batch 4?"),
    (["infer", "max_det=10"], "did you mean --max-det 10?"),
    (["run", "trace=false"], "did you mean --no-trace?"),
    (["run", "amp=true"], "did you mean --precision"),
    (["infer", "--amp-dtype", "bfloat16"], "replaced by --precision"),
])
def test_key_value_to_a_flag_only_command_gets_the_flag(argv, hint, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert hint in err and err.count("\n") == 1


def test_an_option_value_with_an_equals_sign_is_not_a_key():
    from yoloprof.config.cli_args import key_value_hint

    key_value_hint(["--weights", "batch=4.pt", "--project", "runs/seed=1"], "train")  # no error
    with pytest.raises(UsageError, match="did you mean --seed 1"):
        key_value_hint(["--weights", "w.pt", "seed=1"], "train")


def test_precision_shorthands_cannot_contradict():
    parse = build_parser().parse_args
    assert parse(["run", "--amp"]).precision == "float16"
    assert parse(["infer", "--no-half"]).precision == "float32"
    assert main(["run", "--amp", "--precision", "bfloat16"]) == 2


def test_docs_table_is_the_generated_one():
    from helpers.paths import REPO
    from yoloprof.config.reference import BEGIN, END, settings_table

    text = (REPO / "docs" / "sweeps.md").read_text()
    assert BEGIN in text and END in text
    assert text[text.index(BEGIN):text.index(END) + len(END)] == settings_table()
