"""The reader table (readers/table.py) is the one home of the readers: every CLI reader
subcommand is an entry, built with the entry's options (flags, defaults, choices), and every
entry is a `yoloprof.Profile` method with the same option names and defaults, whose result is
what `yoloprof <reader> --json` prints. The CLI side is read from argparse itself and the API
side from `inspect.signature`, independently of the table's own helpers."""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import typing

import pytest
from helpers.paths import trace_path
from helpers.profiles import cpu_train_profile, gpu_train_profile

import yoloprof
from yoloprof import api
from yoloprof.api import resolve
from yoloprof.cli import build_parser, main
from yoloprof.readers import results
from dataclasses import fields, replace
from yoloprof.readers.table import BY_NAME, READERS, Folder, Selection

COMMON = {"help", "profile", "json", "debug", "func"}  # every reader's own, not options


@functools.cache
def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(sub: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in sub._actions if a.dest not in COMMON}


def _fields(cls: type) -> dict[str, object]:
    return {f.name: f.default for f in fields(cls)}


def test_every_cli_reader_subcommand_is_in_the_table():
    # a reader is a subcommand that reads a profile (its positional `profile`), or compare
    subs = _subparsers()
    readers = {name for name, sub in subs.items() if any(a.dest == "profile" for a in sub._actions)}
    assert readers | {"compare"} == set(BY_NAME)
    assert readers >= {"summary", "get", "phases", "kernels", "ops", "modules", "hotspots", "what-if", "report"}


@pytest.mark.parametrize("reader", [r for r in READERS if r.cli_built], ids=lambda r: r.name)
def test_each_subcommand_has_exactly_its_entrys_options(reader):
    sub = _subparsers()[reader.name]
    cli = _options(sub)
    expected = dict(_fields(reader.options))
    if reader.selection:
        expected.update(_fields(Selection))
    if reader.folder:
        expected.update(_fields(Folder))
    assert set(cli) == set(expected)
    for name, default in expected.items():
        assert cli[name].default == default, (reader.name, name)
        if name in ("sort",):
            assert tuple(cli[name].choices) == fields(reader.options)[
                [f.name for f in fields(reader.options)].index(name)].metadata["choices"]
    assert all(callable(resolve(view)) for view in reader.formats.values())


def test_compare_builds_its_own_subcommand_with_the_entrys_options():
    sub = _subparsers()["compare"]
    by_flag = {s: a for a in sub._actions for s in a.option_strings}
    for f in fields(BY_NAME["compare"].options):
        flag = f.metadata["flag"] or "--" + f.name.replace("_", "-")
        assert by_flag[flag].default == f.default, f.name


def test_the_cli_flags_are_spelled_as_before():
    # a few spellings users type (the issue: keep every flag): a rename would break scripts
    subs = _subparsers()
    flags = {name: {s for a in sub._actions for s in a.option_strings} for name, sub in subs.items()}
    assert {"--top", "--category", "--grep", "--tensorcore", "--sort", "--phase", "--by-launch", "--steps",
            "--window"} <= flags["kernels"]
    assert {"--jobs", "--steps", "--window", "--ranks", "--per-step"} <= flags["summary"]
    assert {"-o", "--output"} <= flags["report"]
    assert {"--remove-category", "--remove-launches"} <= flags["what-if"]
    assert {"--depth", "--sort", "--top"} <= flags["modules"]
    assert [a.choices for a in subs["ops"]._actions if a.dest == "sort"] == [("self", "total", "calls", "name")]


def _params(fn) -> dict[str, object]:
    sig = inspect.signature(fn)
    return {n: p.default for n, p in sig.parameters.items() if n != "self"}


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_every_entry_is_a_profile_method_with_the_same_options(reader):
    method = getattr(yoloprof.Profile, reader.method)
    params = _params(method)
    if reader.sides == 2:
        assert next(iter(params)) == "after"  # self is the before side
        params.pop("after")
    assert params == _fields(reader.options)


@pytest.mark.parametrize("reader", [r for r in READERS if r.name != "get"], ids=lambda r: r.name)
def test_every_method_returns_its_entrys_result_types(reader):
    # (get returns the field's value itself, as `yoloprof get P FIELD` prints it)
    hint = typing.get_type_hints(getattr(yoloprof.Profile, reader.method),
                                 globalns={**vars(api), "pd": None})["return"]
    assert set(typing.get_args(hint) or [hint]) == set(reader.results)


def test_the_selection_options_are_loads():
    params = _params(yoloprof.load)
    assert {k: params[k] for k in _fields(Selection)} == _fields(Selection)


# --------------------------------------------------------------------------------------------
# the same result as --json


def _profile_with_sections() -> dict:
    p = gpu_train_profile()
    p["modules"] = {"method": "hooks", "timing": "host", "steps": 2, "backward_unattributed_ms": 0.0,
                    "rows": [{"module": "", "type": "Net", "depth": 0, "forward_ms": 4.0, "backward_ms": 6.0},
                             {"module": "conv", "type": "Conv2d", "depth": 1, "forward_ms": 3.0,
                              "backward_ms": 5.0}]}
    p["hotspots"] = {"method": "cProfile", "steps": 2,
                     "functions": [{"file": "a.py", "function": "f", "self_ms": 2.0, "cum_ms": 5.0,
                                    "calls_per_step": 3.0},
                                   {"file": "b.py", "function": "g", "self_ms": 1.0, "cum_ms": 1.0,
                                    "calls_per_step": 1.0}]}
    return p


def _cli_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _keys_match(result: dict, typed: type) -> None:
    hints = typing.get_type_hints(typed)
    assert typed.__required_keys__ <= set(result) <= set(hints), (typed.__name__, set(result) ^ set(hints))


CALLS = [  # (CLI arguments after the path, the method and its keyword arguments, result type)
    (("summary",), "summary", {}, results.SummaryResult),
    (("phases",), "phases", {}, results.PhasesResult),
    (("kernels", "--top", "2", "--sort", "count"), "kernels", {"top": 2, "sort": "count"}, results.KernelsResult),
    (("ops", "--sort", "calls"), "ops", {"sort": "calls"}, results.OpsResult),
    (("modules", "--depth", "0"), "modules", {"depth": 0}, results.ModulesResult),
    (("hotspots", "--sort", "self", "--top", "1"), "hotspots", {"sort": "self", "top": 1}, results.HotspotsResult),
    (("what-if", "--remove-launches", "3"), "what_if", {"remove_launches": 3}, results.WhatIfResult),
]


@pytest.mark.parametrize("cli, method, kw, typed", CALLS, ids=[c[1] for c in CALLS])
def test_profile_methods_return_what_the_cli_prints(tmp_path, capsys, cli, method, kw, typed):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_profile_with_sections()), encoding="utf-8")
    got = getattr(yoloprof.load(path), method)(**kw)
    assert got == _cli_json(capsys, cli[0], str(path), *cli[1:])
    assert typed in BY_NAME[cli[0]].results
    _keys_match(got, typed)


def test_get_and_compare_as_the_cli(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(cpu_train_profile(50.0)), encoding="utf-8")
    b.write_text(json.dumps(cpu_train_profile(45.0)), encoding="utf-8")
    p = yoloprof.load(a)
    assert p.get("step_ms") == _cli_json(capsys, "get", str(a), "step_ms")["value"] == 50.0
    assert p.get() == p.fields() == _cli_json(capsys, "get", str(a))["fields"]
    got = p.compare(b, alpha=0.1)
    assert got == _cli_json(capsys, "compare", str(a), str(b), "--alpha", "0.1")
    _keys_match(got, results.CompareResult)


def test_report_writes_the_same_file_and_result(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(cpu_train_profile()), encoding="utf-8")
    got = yoloprof.load(path).report(output=str(tmp_path / "api.html"))
    cli = _cli_json(capsys, "report", str(path), "-o", str(tmp_path / "cli.html"))
    assert got["recommendations"] == cli["recommendations"]
    assert got["report"] == str(tmp_path / "api.html") and cli["report"] == str(tmp_path / "cli.html")
    assert (tmp_path / "api.html").read_text(encoding="utf-8").startswith("<!")
    with pytest.raises(yoloprof.UsageError, match="not loaded from a file"):
        yoloprof.Profile(cpu_train_profile()).report()


def test_a_real_trace_reads_the_same_through_both(capsys, monkeypatch):
    monkeypatch.setenv("YOLOPROF_CACHE", "off")
    trace = trace_path("mi250_minitoy_train_ROCm6_2_kineto.json.gz")  # a real ROCm trace, 2 steps
    p = yoloprof.load(trace)
    for cli, method, kw, typed in CALLS[:4]:
        got = getattr(p, method)(**kw)
        assert got == _cli_json(capsys, cli[0], str(trace), *cli[1:]), method
        _keys_match(got, typed)
    one = yoloprof.load(trace, steps="2")
    assert one.kernels(top=0) == _cli_json(capsys, "kernels", str(trace), "--steps", "2", "--top", "0")
    assert one.summary()["trace"]["steps_analyzed"] == 1 and p.summary()["trace"]["steps_analyzed"] == 2


def _distinct(spec_type: type, default: object) -> object:
    """A value unlike the default, of the option's type."""
    return {bool: not default, int: 7, float: 0.2, str: "x", list: ["m"]}[spec_type]


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_each_method_passes_every_option_through(reader, monkeypatch, tmp_path):
    # a wrapper that dropped or swapped an argument would still have the right signature
    hints = typing.get_type_hints(reader.options)
    kw = {}
    for f in fields(reader.options):
        args = [a for a in typing.get_args(hints[f.name]) if a is not type(None)] or [hints[f.name]]
        kw[f.name] = _distinct(typing.get_origin(args[0]) or args[0], f.default)
    seen: list[object] = []
    profile = yoloprof.Profile(cpu_train_profile(), str(tmp_path / "p.json"))
    if reader.sides == 2:
        spy = replace(reader, compute=lambda b, a, options, floors=None: seen.append(options) or {})
        monkeypatch.setitem(api.BY_NAME, reader.name, spy)
        profile.compare(cpu_train_profile(), **kw)
    else:
        monkeypatch.setattr(api, "read_with", lambda entry, data, source, options: seen.append(options) or
                            {"fields": [], "value": None})
        getattr(profile, reader.method)(**kw)
    assert seen == [reader.options(**kw)]


def test_what_json_cannot_hold_is_returned_as_json_prints_it(tmp_path, capsys, monkeypatch):
    # NaN, infinities, tuples and numpy scalars: the method returns the printed value, not Python's
    import numpy as np

    odd = {"nan": float("nan"), "inf": float("inf"), "pair": (1, 2), "np": np.float64(0.5), "rows": [{1: 2.0}]}
    reader = replace(BY_NAME["phases"], compute=lambda data, source, options: dict(odd))
    monkeypatch.setitem(BY_NAME, "phases", reader)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(cpu_train_profile()), encoding="utf-8")
    got = yoloprof.load(path).phases()
    assert got == {"nan": None, "inf": None, "pair": [1, 2], "np": 0.5, "rows": [{"1": 2.0}]}
    assert got == _cli_json(capsys, "phases", str(path))
