"""Kineto's chatter on file descriptor 2 is dropped around profiler state changes; every other
line still reaches the user."""

from __future__ import annotations

import os

import pytest

from yoloprof.capturing.passes.tracing import _kineto_chatter_filtered


def test_kineto_chatter_is_dropped_and_real_lines_pass(capsys):
    with _kineto_chatter_filtered():
        os.write(2, b"STAGE:2026-11-30 16:43:11 28445:28445 ActivityProfilerController.cpp:314] Completed Stage\n")
        os.write(2, b"ERROR:2026-11-30 16:43:11 28445:28445 DeviceProperties.cpp:56] gpuGetDeviceCount "
                    b"failed with code 35\n")
        os.write(2, b"a warning the user must see\n")
    assert capsys.readouterr().err == "a warning the user must see\n"


def test_torch_cpp_log_lines_are_counted_not_printed_and_python_stderr_stays_live(capfd):
    import sys

    from yoloprof import warn
    from yoloprof.capturing.passes.tracing import _is_chatter

    line = b"[W1201 20:14:40.172707412 CPUAllocator.cpp:245] Memory block of unknown size was allocated\n"
    with warn.native_stderr(drop=_is_chatter) as log:
        os.write(2, line)
        os.write(2, line)
        os.write(2, b"STAGE:2026-11-30 16:43:11 28445:28445 ActivityProfilerController.cpp:314] Completed\n")
        print("progress bar", file=sys.stderr)
        os.write(2, b"a line the user must see\n")
    assert log.notes() == ["torch: Memory block of unknown size was allocated (logged 2 times)"]
    err = capfd.readouterr().err
    assert err.splitlines() == ["progress bar", "a line the user must see"]


def test_library_chatter_is_kept_not_printed_and_ours_printed_once_with_a_count():
    import io
    import warnings

    from yoloprof import warn

    stream = io.StringIO()
    with warn.collecting(stream=stream) as notes:
        warnings.warn("Using `torch.compile(module)` when there are global hooks on modules (e.g., from "
                      "`register_module_forward_hook`); this will cause the hooks to fire an extra time")
        for _ in range(3):
            notes.add("--workers 8 capped at 2")
    assert stream.getvalue() == f"{warn.PREFIX}--workers 8 capped at 2\n"
    assert notes.messages[0].startswith("torch: Using `torch.compile(module)`")
    assert notes.counts["--workers 8 capped at 2"] == 3


@pytest.mark.slow
def test_the_allocator_line_of_a_real_trace_window_goes_to_the_profile(tmp_path):
    """In a fresh process (torch logs the line once per process, then every 1000th time)."""
    import subprocess
    import sys

    script = (
        "import torch\n"
        "from yoloprof import warn\n"
        "from yoloprof.capturing.device.torch_device import resolve_device\n"
        "from yoloprof.capturing.passes.tracing import TraceSchedule, TraceSession\n"
        "x = torch.randn(1 << 16)\n"
        "with warn.collecting() as notes:\n"
        "    s = TraceSession(resolve_device('cpu'), TraceSchedule(wait=0, warmup=0, active=1))\n"
        "    s.start()\n"
        "    del x\n"
        "    s.step()\n"
        "    s.stop()\n"
        "print(notes.messages)\n")
    import os

    # torch's log level as a fresh process has it: Ultralytics, imported by other tests of this
    # worker, sets TORCH_CPP_LOG_LEVEL=ERROR in the environment a subprocess inherits
    env = {k: v for k, v in os.environ.items() if k != "TORCH_CPP_LOG_LEVEL"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Memory block of unknown size" in proc.stdout and "torch: " in proc.stdout
    assert "CPUAllocator" not in proc.stderr and "Memory block" not in proc.stderr
