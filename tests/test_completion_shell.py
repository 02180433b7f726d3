"""Shell completion: candidates for every subcommand, flag, choice and Hydra override, and the
bash function itself run as bash runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from yoloprof.cli import build_parser

from yoloprof.completion import _subparsers, complete, script

PARSER = build_parser()


def test_every_subcommand_is_offered_and_completes_its_own_flags():
    subs = _subparsers(build_parser())
    assert {c.strip() for c in complete("yoloprof ", parser=PARSER)} >= set(subs)
    for name, parser in subs.items():
        if name in ("sweep", "completion"):  # Hydra's words; a shell name
            continue
        flags = {opt for a in parser._actions for opt in a.option_strings}
        assert {c.strip() for c in complete(f"yoloprof {name} x --", parser=PARSER)} == {f for f in flags if f.startswith("--")}


def test_choices_and_file_positions():
    assert complete("yoloprof kernels p.json --sort ", parser=PARSER) == ["count ", "name ", "time "]
    assert complete("yoloprof ker", parser=PARSER) == ["kernels "]
    assert complete("yoloprof summary ", parser=PARSER) == []  # a file name: the shell's default completion takes over
    assert complete("yoloprof kernels p.json --top ", parser=PARSER) == []  # a free value


def test_hydra_overrides_after_sweep():
    assert "batch=" in complete("yoloprof sweep ba", parser=PARSER)
    assert {"mode=train ", "mode=infer "} <= set(complete("yoloprof sweep mode=", parser=PARSER))
    assert "+sweep=demo " in complete("yoloprof sweep +sweep=", parser=PARSER)
    assert "resume=" in complete("yoloprof sweep re", parser=PARSER)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_function_completes_as_bash_calls_it(tmp_path):
    """Source the script the user installs and call the completion function with the variables
    bash sets; `yoloprof` on PATH is this interpreter's module, as an installed script would be."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "yoloprof"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m yoloprof "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "completion.bash").write_text(script("bash"))
    probe = ('source completion.bash\n'
             'for line in "yoloprof ker" "yoloprof sweep mode=" "yoloprof kernels p.json --sort n"; do\n'
             '  COMP_LINE="$line"; COMP_POINT=${#line}; read -ra COMP_WORDS <<< "$line"\n'
             '  _yoloprof_complete; printf "%s|" "${COMPREPLY[@]}"; echo\n'
             'done\n')
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    lines = out.stdout.splitlines()
    assert lines[0] == "kernels |", out
    assert set(lines[1].strip("|").split("|")) == {"mode=infer ", "mode=train "}, out
    assert lines[2] == "name |", out


def test_hydra_shell_completion_flag_prints_the_same_script(capsys):
    from yoloprof.cli import main

    assert main(["sweep", "--shell-completion", "install=bash"]) == 0
    assert capsys.readouterr().out == script("bash")
