"""A reader's start-up: what it imports and how it runs the cyclic garbage collector (issue 30:
the fixed cost of every `summary`, `get`, `kernels`, `ops` process).

- `get` of a profile.json needs neither numpy nor msgspec, pyarrow or Hydra, nor datetime;
  `summary` of a trace
  needs numpy and msgspec but none of the capture, sweep or analysis layers, nor tempfile or
  statistics (a subprocess each, as a user runs them).
- The collector is paused while a reader of the table runs (cli._only_reads), kept for every other
  command, and the caller's setting is back when `main` returns. Why pausing is safe: a reader's
  run leaves the same few objects in reference cycles whatever the trace's size (counted here).
"""

from __future__ import annotations

import contextlib
import gc
from dataclasses import replace
import io
import subprocess
import sys

import pytest
from helpers.kineto_synth import step_trace
from helpers.profiles import gpu_train_profile

import yoloprof.completion
from yoloprof.cli import main
from yoloprof.profiles.io import write_profile
from yoloprof.readers.table import BY_NAME

# what a reader must not import (module name prefixes), each on top of the previous
NEVER = ("torch", "pandas", "hydra", "omegaconf", "pyarrow", "scipy", "rich", "tempfile", "statistics",
         "yoloprof.config.capture_settings", "yoloprof.capturing", "yoloprof.sweep", "yoloprof.analysis")
NOT_FOR_A_PROFILE = ("numpy", "msgspec", "yoloprof.traces", "datetime")

IMPORTS = """
import sys
from yoloprof.cli import main
rc = main([sys.argv[1], sys.argv[2], *sys.argv[3:]])
print("MODULES", rc, " ".join(sorted(sys.modules)))
"""


def _imported(*args: str) -> tuple[int, set[str]]:
    res = subprocess.run([sys.executable, "-c", IMPORTS, *args], capture_output=True, text=True, timeout=120)
    line = res.stdout.strip().splitlines()[-1]
    assert line.startswith("MODULES"), (res.stdout, res.stderr)
    _, rc, *mods = line.split()
    return int(rc), set(mods)


def _heavy(mods: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("args", [("get", "step_ms"), ("get", "img_per_s"), ("get", "env.captured_at"),
                                  ("get", "dataload_frac"), ("summary", "--json")])
def test_a_reader_of_a_profile_imports_no_engine_and_no_heavy_library(tmp_path, args):
    """`get` (its libreyolo names and capture time included) and `summary` (its advice included)."""
    path = str(write_profile(tmp_path / "p.json", gpu_train_profile()))
    rc, mods = _imported(args[0], path, *args[1:])
    assert rc == 0 and _heavy(mods, NEVER + NOT_FOR_A_PROFILE) == []


def test_summary_of_a_trace_imports_the_engine_but_no_other_layer(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_bytes(step_trace([100.0, 110.0, 120.0]))
    rc, mods = _imported("summary", str(trace), "--json")
    assert rc == 0 and {"numpy", "msgspec", "yoloprof.traces.analyze"} <= mods
    assert _heavy(mods, NEVER) == []


def _quiet(*args: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(list(args))


def test_the_collector_is_paused_for_a_reader_only_and_restored(monkeypatch, tmp_path):
    seen: dict[str, bool] = {}
    reader = BY_NAME["phases"]
    monkeypatch.setitem(BY_NAME, "phases", replace(reader, compute=lambda data, source, o: seen.update(
        reader=gc.isenabled()) or {}))
    monkeypatch.setattr(yoloprof.completion, "script", lambda shell: seen.update(other=gc.isenabled()) or "")
    profile = str(write_profile(tmp_path / "p.json", gpu_train_profile()))
    assert gc.isenabled()
    assert _quiet("phases", profile, "--json") == 0 and gc.isenabled()
    assert _quiet("completion", "bash") == 0 and gc.isenabled()
    assert seen == {"reader": False, "other": True}
    gc.disable()
    try:  # a caller that turned it off keeps it off
        assert _quiet("completion", "bash") == 0 and not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("reader", ["summary", "kernels", "ops"])
def test_a_readers_cyclic_garbage_does_not_grow_with_the_trace(tmp_path, reader):
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_bytes(step_trace([100.0] * 5))
    large.write_bytes(step_trace([100.0 + s % 7 for s in range(600)]))  # 120x the events
    _quiet(reader, str(small), "--json")  # the imports' own garbage, once
    gc.collect()
    gc.disable()
    try:
        garbage = []
        for path in (small, large):
            assert _quiet(reader, str(path), "--json") == 0
            garbage.append(gc.collect())
    finally:
        gc.enable()
    assert garbage[1] <= garbage[0] + 20 and garbage[1] < 1000, garbage
