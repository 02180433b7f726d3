"""Other processes' CPU while a capture runs (capturing/device/cpu_contention.py): the figure against
a hand-worked /proc, and against real busy processes measured independently (psutil)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from yoloprof.capturing.device import cpu_contention as cc

HOG = [sys.executable, "-c", "while True: pass"]

# the rule at its own threshold (tests/conftest.py turns it off for the rest of the suite)
pytestmark = pytest.mark.usefixtures("contention_rule")


def _proc(root: Path, stat_cpu: str, pids: dict[int, tuple[list[int], list[int]]]) -> None:
    """A fake /proc: the `cpu` line and two cpuN lines; per pid its (utime, stime, cutime, cstime)
    and children (in one thread's children file)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text(f"cpu  {stat_cpu}\ncpu0 0 0 0 0\ncpu1 0 0 0 0\nintr 1 2 3\n")
    for pid, (times, kids) in pids.items():
        fields = ["S", "1"] + ["0"] * 9 + [str(t) for t in times] + ["20", "0"]  # state ppid ... utime stime cutime cstime
        (root / str(pid)).mkdir(exist_ok=True)
        (root / str(pid) / "stat").write_text(f"{pid} (py thon) " + " ".join(fields) + "\n")
        task = root / str(pid) / "task" / str(pid)
        task.mkdir(parents=True, exist_ok=True)
        (task / "children").write_text(" ".join(map(str, kids)) + (" " if kids else ""))


def test_a_hand_worked_window(tmp_path):
    """cpu line: user nice system idle iowait irq softirq steal guest guest_nice.
    start: busy = 100+0+50+0+0+0 = 150, total = 150 + 800 + 50 = 1000 (2 cores)
    end:   busy = 400+10+120+5+5+10 = 550, total = 550 + 1400 + 50 = 2000
    own ticks: start 10+5 (self) + 20 (child 11) = 35; end 90+30+0+0 (self) + 40+0+60+0 (child 11,
    with a reaped grandchild's 60 in its cutime) + 30 (grandchild 12, alive) = 250.
    window: 1000 ticks over 2 cores = 500 core-ticks; other = (400 - 215) / 500 = 0.37; own = 0.43."""
    start, end = tmp_path / "a", tmp_path / "b"
    _proc(start, "100 0 50 800 50 0 0 0 0 0", {7: ([10, 5, 0, 0], [11]), 11: ([20, 0, 0, 0], [])})
    _proc(end, "400 10 120 1400 50 5 5 10 3 0", {7: ([90, 30, 0, 0], [11]), 11: ([40, 0, 60, 0], [12]),
                                                12: ([30, 0, 0, 0], [])})
    a, b = cc.read(start, pid=7), cc.read(end, pid=7)
    assert (a.busy, a.total, a.own, a.cores) == (150, 1000, 35, 2)
    assert (b.busy, b.total, b.own) == (550, 2000, 250)
    got = cc.window(a, b)
    assert got["other_cores"] == pytest.approx(0.37) and got["own_cores"] == pytest.approx(0.43)
    assert got["seconds"] == pytest.approx(500 / cc.os.sysconf("SC_CLK_TCK"))


def test_no_proc_stat_is_na_with_the_reason(tmp_path):
    assert cc.read(tmp_path / "nowhere") is None
    import jsonschema

    from helpers.fixtures_capture import SCHEMA

    sampler = cc.Sampler(tmp_path / "nowhere")
    sampler.begin_trial()
    sampler.end_trial()
    section = sampler.section()
    assert section["other_cores"] is None and section["cores"] is None and "not Linux" in section["why"]
    assert section["trials"] == [None]
    jsonschema.validate(section, SCHEMA["properties"]["contention"])
    from yoloprof.metrics.contention import capture_warning, contended

    assert not contended(section["other_cores"]) and capture_warning(None, None) == []


def _cpu_s(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_a_busy_process_outside_the_tree_reads_as_other_and_a_child_as_own():
    """A hog that is not ours (started through a shell that exits, so it is re-parented): its CPU,
    measured by psutil over the same window, is within the other processes' figure. A hog that is
    our child: inside our own figure, and not in the others'. On a shared machine other
    processes add to 'other', so only the hog's share is a lower bound there."""
    out = subprocess.run(["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True)
    stranger = int(out.stdout.strip())
    child = subprocess.Popen(HOG)
    try:
        time.sleep(0.2)
        s0, c0, t0 = _cpu_s(stranger), _cpu_s(child.pid), time.monotonic()
        start = cc.read()
        time.sleep(1.5)
        end = cc.read()
        s1, c1, t1 = _cpu_s(stranger), _cpu_s(child.pid), time.monotonic()
    finally:
        subprocess.run(["kill", str(stranger)], check=False)
        child.kill()
        child.wait()
    got = cc.window(start, end)
    wall = t1 - t0
    stranger_cores, child_cores = (s1 - s0) / wall, (c1 - c0) / wall
    assert stranger_cores > 0.02 and child_cores > 0.02  # both ran (on a crowded machine, a share of a core)
    # ticks are 10 ms: over 1.5 s on N cores the figures are good to a few hundredths of a core
    assert got["own_cores"] == pytest.approx(child_cores, abs=0.05)  # this test itself sleeps
    assert got["other_cores"] >= stranger_cores - 0.05
    assert got["seconds"] == pytest.approx(wall, abs=0.1)


def test_a_capture_records_its_window_and_each_trial(tmp_path):
    """A real tiny capture: the profile's `contention` block (schema-valid), one window per trial,
    readable with `yoloprof get`, and the row's columns."""
    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.profiles.rows import row_from_profile
    from yoloprof.profiles.validate import validate_profile
    from yoloprof.readers.get import compute_get

    settings = CaptureSettings(mode="infer", size="n", imgsz=32, warmup=1, runs=2, repeat=2, trace=False,
                               modules=False, device="cpu", warmup_max=1)
    profile = capture(settings, tmp_path / "p", echo_warnings=False)
    block = profile["contention"]
    import jsonschema

    from helpers.fixtures_capture import SCHEMA

    written = json.loads((tmp_path / "p" / "profile.json").read_text())
    validate_profile(written, "profile.json")
    jsonschema.validate(written, SCHEMA)
    assert block["cores"] >= 1 and block["other_cores"] >= 0 and block["own_cores"] > 0 and block["seconds"] > 0
    assert len(block["trials"]) == len(block["trial_seconds"]) == 2
    assert sum(block["trial_seconds"]) <= block["seconds"] + 0.05
    assert compute_get(profile, "contention.other_cores")["value"] == block["other_cores"]
    row = row_from_profile(profile, {})
    assert (row["other_cpu_cores"], row["cpu_cores"]) == (block["other_cores"], block["cores"])


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_the_user_loop_records_it_and_counts_its_own_children(tmp_path):
    """`yoloprof.profile`: the same block, its timed window one; a busy child the loop starts (as
    a DataLoader worker would be) is the loop's own CPU, not other processes'."""
    import torch

    import yoloprof

    model = torch.nn.Linear(4, 1)
    child = None
    with yoloprof.profile(tmp_path, model=model, warmup=0, steps=3, trace_steps=0, flops=False,
                          modules=False) as prof:
        while not prof.done:
            if child is None:
                child = subprocess.Popen(HOG)
            time.sleep(0.3)
            model(torch.randn(2, 4)).sum().backward()
            prof.step()
    used = _cpu_s(child.pid)  # all of it ran inside the loop's window (which also holds the loop's own)
    child.kill()
    child.wait()
    block = prof.result["contention"]
    assert len(block["trials"]) == 1 and block["seconds"] > 0.5 and used > 0.02
    assert block["own_cores"] * block["seconds"] >= used - 0.05
