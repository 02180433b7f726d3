"""docs/migrating.md names only commands and flags that exist: each `yoloprof ...` it quotes is
checked against the real parser (subcommand, every --flag, choices of flags that have them)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from yoloprof.cli import build_parser
from yoloprof.completion import _subparsers

DOC = Path(__file__).resolve().parents[1] / "docs" / "migrating.md"


def _quoted_commands() -> list[list[str]]:
    out = []
    for span in re.findall(r"`(yoloprof [^`]+)`", DOC.read_text()):
        words = shlex.split(span)
        if words[1] not in ("sweep", "..."):  # sweep takes Hydra overrides, checked by its own tests
            out.append(words[1:])
    return out


def test_every_quoted_command_and_flag_exists():
    subs = _subparsers(build_parser())
    commands = _quoted_commands()
    assert len(commands) >= 30
    for words in commands:
        name, args = words[0], words[1:]
        assert name in subs, words
        actions = {opt: a for a in subs[name]._actions for opt in a.option_strings}
        for i, word in enumerate(args):
            if word.startswith("--"):
                assert word in actions, (words, word)
                choices = actions[word].choices
                if choices and i + 1 < len(args):
                    assert args[i + 1] in choices, (words, args[i + 1])


def test_every_get_field_quoted_has_a_value_in_a_real_profile(tmp_path):
    """The fields the doc sends PyG users to (`model.params_total` ...) have values in a profile
    that a real (tiny) capture writes, read through `get`'s own code."""
    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.readers.get import compute_get

    fields = {w[2] for w in _quoted_commands() if w[0] == "get" and len(w) > 2}
    assert {"model.params_total", "model.model_mb", "model.batch_bytes", "peak_mem_mb"} <= fields
    settings = CaptureSettings.for_mode("infer", device="cpu", imgsz=32, warmup=0, runs=1, threads=1,
                                        trace=False, modules=False)
    profile = capture(settings, tmp_path, echo_warnings=False)
    for name in sorted(fields):
        assert compute_get(profile, name).get("value") is not None, name
