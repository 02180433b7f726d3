"""Kineto's chatter on file descriptor 2 is dropped around profiler state changes; every other
line still reaches the user."""

from __future__ import annotations

import os

from yoloprof.capture.tracing import _kineto_chatter_filtered


def test_kineto_chatter_is_dropped_and_real_lines_pass(capsys):
    with _kineto_chatter_filtered():
        os.write(2, b"STAGE:2026-11-30 16:43:11 28445:28445 ActivityProfilerController.cpp:314] Completed Stage\n")
        os.write(2, b"ERROR:2026-11-30 16:43:11 28445:28445 DeviceProperties.cpp:56] gpuGetDeviceCount "
                    b"failed with code 35\n")
        os.write(2, b"a warning the user must see\n")
    assert capsys.readouterr().err == "a warning the user must see\n"
