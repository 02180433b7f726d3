"""The analysis settings have one home (config/analysis_settings.py): the options of every command
that takes them and the sweep's `analysis.*` keys are what its fields say, a field added to it
appears in both, and a bad value fails alike from the command line and from a Hydra override.

The parser and the composed config are read back here (argparse actions, OmegaConf values), not
rebuilt with the generators, and the spellings users type are pinned as literals."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys

import pytest
from helpers.paths import REPO
from omegaconf import OmegaConf

from yoloprof.cli import build_parser, main
from yoloprof.config import analysis_settings as schema
from yoloprof.config.analysis_settings import AnalysisSettings, check_analysis
from yoloprof.config.compose import compose_job
from yoloprof.config.translate import job_values

# What users' scripts type today: these spellings must keep working.
FLAGS = {"analyze": {"--baseline", "--vary", "--metric", "--alpha", "--noise", "--correction", "--output-tol", "--html"},
         "compare": {"--metric", "--alpha", "--noise"},
         "gate": {"--metric", "--alpha", "--noise"}}
HYDRA_KEYS = ["baseline", "vary", "metrics", "alpha", "noise", "correction", "output_tol", "enabled", "html"]


def _fields() -> list[tuple[type, dataclasses.Field, schema.AnalysisSpec]]:
    return [(cls, f, f.metadata["spec"]) for cls in schema.SCHEMA for f in dataclasses.fields(cls)]


def _flag(f: dataclasses.Field, spec: schema.AnalysisSpec) -> str:
    return spec.flag or "--" + f.name.replace("_", "-")


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


def _options(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {opt: action for action in sub._actions for opt in action.option_strings}


def _schema_flags(command: str) -> dict[str, tuple[dataclasses.Field, schema.AnalysisSpec, type]]:
    return {_flag(f, spec): (f, spec, cls) for cls, f, spec in _fields()
            if spec.flag is not None and command in spec.modes}


# --------------------------------------------------------------------------------------- (a) CLI


@pytest.mark.parametrize("command", schema.COMMANDS)
def test_each_command_has_exactly_the_schema_options(command: str) -> None:
    options = _options(command)
    expected = _schema_flags(command)
    every_flag = {_flag(f, spec) for _, f, spec in _fields() if spec.flag is not None}
    assert set(expected) == FLAGS[command]  # the schema keeps the users' spellings
    assert set(options) & every_flag == set(expected)
    recorded = command == "analyze"  # unset = the sweep's recorded value
    for flag, (f, spec, cls) in expected.items():
        action, default = options[flag], _default(f)
        assert action.help.replace("%%", "%").startswith(spec.help), flag
        assert action.choices == spec.choices, flag
        if isinstance(default, bool):
            assert isinstance(action, argparse.BooleanOptionalAction) and action.default is default
            assert f"--no-{flag[2:]}" in options
        elif isinstance(default, tuple):  # a list: repeated flags or several values, nothing = ()
            assert action.default is None
            assert (isinstance(action, argparse._AppendAction) if spec.repeat else action.nargs == "+"), flag
        else:
            assert action.default == (None if recorded and cls is AnalysisSettings else default), flag
            shown = "none" if default is None else str(default)
            assert f"default: the sweep's, else {shown})" in action.help if recorded \
                else f"(default: {shown})" in action.help


def test_no_other_command_takes_the_statistics_settings() -> None:
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    # --metric and --html also name history's single series metric and its HTML file: other things
    own = {_flag(f, spec) for _, f, spec in _fields() if spec.flag is not None} - {"--metric", "--html"}
    takers = {name for name, sub in subs.items() if own & {o for a in sub._actions for o in a.option_strings}}
    assert takers == {"analyze", "compare", "gate"} == set(schema.COMMANDS)


def test_parsed_values_reach_the_settings() -> None:
    parser = build_parser()
    args = parser.parse_args(["analyze", "S", "--baseline", "batch=1", "mode=train", "--metric", "step_ms",
                              "--metric", "p50_ms", "--alpha", "0.01", "--noise", "0.05", "--correction", "bh"])
    from yoloprof.config.cli_args import analysis_given

    given = analysis_given(args, "analyze")
    assert AnalysisSettings().with_given(**given) == AnalysisSettings(
        baseline=("batch=1", "mode=train"), metrics=("step_ms", "p50_ms"), alpha=0.01, noise=0.05, correction="bh")
    assert analysis_given(parser.parse_args(["analyze", "S"]), "analyze") == dict.fromkeys(given)
    args = parser.parse_args(["compare", "a", "b", "--metric", "step_ms", "--alpha", "0.2"])
    assert (args.metric, args.alpha, args.noise) == (["step_ms"], 0.2, schema.NOISE)


# ------------------------------------------------------------------------------------- (b) Hydra


def test_composed_analysis_node_is_the_schema() -> None:
    node = OmegaConf.to_container(compose_job([]).analysis, enum_to_str=True)
    expected = {f.name: list(_default(f)) if isinstance(_default(f), tuple) else _default(f)
                for _, f, spec in _fields() if spec.hydra == "analysis"}
    assert list(node) == list(expected) and sorted(node) == sorted(HYDRA_KEYS)
    assert node == expected
    # every key accepts an override, and the sweep's values become the same settings
    cfg = compose_job(["analysis.vary=batch", "analysis.metrics=[step_ms,p50_ms]", "analysis.alpha=0.01",
                       "analysis.noise=0.05", "analysis.correction=bh", "analysis.html=false",
                       "analysis.enabled=false"])
    values = job_values(cfg)["analysis"]
    assert values["html"] is False and values["enabled"] is False
    assert check_analysis(values) == AnalysisSettings(vary="batch", metrics=("step_ms", "p50_ms"), alpha=0.01,
                                                      noise=0.05, correction="bh")
    assert AnalysisSettings.from_mapping(check_analysis(values).to_dict()) == check_analysis(values)


# ------------------------------------------------------------------- (c) a field added in a test

ADDED = r'''
import dataclasses, io, json, sys, contextlib
from yoloprof.config import analysis_settings as a

@dataclasses.dataclass(frozen=True)
class Wider(a.AnalysisSettings):
    spread: int = a.analysis_setting(7, "a made-up setting", minimum=1, modes=a.COMMANDS)
    scope: str = a.analysis_setting("all", "which pairs are compared", choices=("all", "adjacent"))

a.SCHEMA = (Wider, a.AnalysisOutputs)   # nothing else is edited
from yoloprof.cli import build_parser, main

subs = next(x for x in build_parser()._actions if hasattr(x, "choices") and isinstance(x.choices, dict)).choices
out = {"options": {c: {o: [x.default, list(x.choices) if x.choices else None] for x in subs[c]._actions
                       for o in x.option_strings if o in ("--spread", "--scope")} for c in a.COMMANDS}}
def run(argv):
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = main(argv)
    return [rc, buf.getvalue(), err.getvalue()]
out["cfg"] = run(["sweep", "--cfg", "job", "analysis.spread=3", "analysis.scope=adjacent"])
out["hydra_bad"] = run(["sweep", "-m", "batch=1,2", "analysis.spread=0", "project=" + sys.argv[1]])
out["hydra_choice"] = run(["sweep", "-m", "batch=1,2", "analysis.scope=some", "project=" + sys.argv[1]])
out["cli_bad"] = run(["compare", "a", "b", "--spread", "0"])
print(json.dumps(out))
'''


def test_a_field_added_to_the_schema_appears_in_both(tmp_path) -> None:
    env = {"PYTHONPATH": str(REPO), "NO_COLOR": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", ADDED, str(tmp_path / "p")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["options"]["compare"] == out["options"]["gate"] == {"--spread": [7, None]}
    assert out["options"]["analyze"] == {"--spread": [None, None], "--scope": [None, ["all", "adjacent"]]}
    rc, stdout, _ = out["cfg"]
    analysis = OmegaConf.create(stdout).analysis
    assert rc == 0 and analysis.spread == 3 and analysis.scope == "adjacent" and analysis.alpha == schema.ALPHA
    for key, words in (("hydra_bad", "analysis.spread must be >= 1"), ("hydra_choice", "analysis.scope"),
                       ("cli_bad", "argument --spread: must be >= 1")):
        rc, _, err = out[key]
        assert rc == 2 and err.startswith("yoloprof: error:") and words in err and err.count("\n") == 1, (key, err)
    assert not (tmp_path / "p").exists()  # refused before any job or folder


# ------------------------------------------------------------------------ (d) bad values, alike


@pytest.mark.parametrize("flag, value, words", [
    ("--alpha", "2", "must be in (0, 1), not 2.0"),
    ("--alpha", "0", "must be in (0, 1), not 0.0"),
    ("--alpha", "nan", "must be a finite number, not nan"),
    ("--noise", "1", "must be in [0, 1), not 1.0"),
    ("--noise", "-0.01", "must be in [0, 1), not -0.01"),
    ("--correction", "bonf", "invalid choice: 'bonf'"),
    ("--alpha", "x", "invalid float value: 'x'"),
])
def test_bad_value_from_the_command_line(flag: str, value: str, words: str, capsys) -> None:
    for command in schema.COMMANDS:
        if flag not in FLAGS[command]:
            continue
        positional = {"analyze": ["S"], "compare": ["a", "b"], "gate": ["P", "new.json"]}[command]
        assert main([command, *positional, flag, value]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"yoloprof: error: argument {flag}: ") and words in err, err
        assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("overrides, words", [
    (["analysis.alpha=2"], "analysis.alpha must be in (0, 1), not 2.0"),
    (["analysis.noise=1"], "analysis.noise must be in [0, 1), not 1.0"),
    (["analysis.alpha=nan"], "analysis.alpha must be a finite number, not nan"),
    (["analysis.correction=bonf"], "analysis.correction: Invalid value 'bonf', expected one of [holm, bh, none]"),
    (["analysis.alpha=x"], "analysis.alpha"),
    (["analysis.vary=batch", "analysis.baseline=['batch=1']"],
     "give either analysis.baseline or analysis.vary, not both"),
])
def test_bad_value_from_a_hydra_override(overrides: list[str], words: str, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "-m", "batch=1,2", "device=cpu", *overrides]) == 2
    err = capsys.readouterr().err
    assert err.startswith("yoloprof: error:") and words in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []  # before the first job: no sweep folder


def test_python_api_names_the_flag_and_the_sweep_the_key() -> None:
    with pytest.raises(Exception, match=r"^--alpha must be in \(0, 1\), not 2"):
        AnalysisSettings(alpha=2.0).validate()
    with pytest.raises(Exception, match=r"^analysis\.correction must be one of holm, bh, none, not 'x'"):
        check_analysis({"correction": "x"})


def test_docs_table_is_the_generated_one() -> None:
    from yoloprof.config.reference import ANALYSIS_BEGIN, ANALYSIS_END, analysis_table

    text = (REPO / "docs" / "analysis.md").read_text(encoding="utf-8")
    assert text[text.index(ANALYSIS_BEGIN):text.index(ANALYSIS_END) + len(ANALYSIS_END)] == analysis_table()


def test_options_are_there_after_a_top_level_flag() -> None:
    """`yoloprof --debug compare ... --alpha X`: the command is found after the top-level flag, so
    its generated options exist (they are generated only for the command being run); --debug
    lets the error through as itself."""
    from yoloprof.errors import UsageError

    with pytest.raises(UsageError, match=r"^argument --alpha: must be in \(0, 1\)"):
        main(["--debug", "compare", "a", "b", "--alpha", "2"])
