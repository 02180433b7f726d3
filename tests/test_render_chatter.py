"""Libraries' progress notes stay off the terminal: matplotlib's `generated new fontManager`
(printed as `[HYDRA] ...` under a sweep) and "waits for another timed capture" once per sweep."""

from __future__ import annotations

import fcntl
import logging
import threading


def test_matplotlib_info_notes_are_not_logged_but_its_warnings_are():
    from yoloprof.render.plots import _plt

    _plt()
    assert not logging.getLogger("matplotlib.font_manager").isEnabledFor(logging.INFO)
    assert logging.getLogger("matplotlib").isEnabledFor(logging.WARNING)


def test_waiting_for_another_capture_is_said_once_then_counted(tmp_path, monkeypatch, capsys):
    from yoloprof.sweep import machine

    monkeypatch.setattr(machine, "WAITS", [])
    holder = open(tmp_path / "lock", "a+")
    for num in range(3):
        fcntl.flock(holder, fcntl.LOCK_EX)
        threading.Timer(0.05, fcntl.flock, (holder, fcntl.LOCK_UN)).start()
        with open(tmp_path / "lock", "a+") as mine:
            machine._acquire([(mine, fcntl.LOCK_EX)], "wait", f"job {num}")
            fcntl.flock(mine, fcntl.LOCK_UN)
    err = capsys.readouterr().err
    assert err.count("waits for another timed capture") == 1 and "job 0 waits" in err
    assert machine.wait_summary() == "3 jobs waited for another timed capture (machine_wait_s in their rows)"
