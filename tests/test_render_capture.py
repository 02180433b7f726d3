"""`yoloprof report`: the one-capture HTML file is self-contained, holds every view (or its n/a
with the reason), and renders in headless Chromium, for a GPU fixture trace and a CPU capture
(a real torch.profiler CPU trace with memory events, read through a profile.json beside it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.paths import run_main, trace_path
from yoloprof.defs import files
from yoloprof.render.capture_html import SECTIONS

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _report(src: Path, out: Path) -> str:
    res = run_main("report", src, "-o", out)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"wrote {out}"
    return out.read_text()


def _check_static(html: str) -> str:
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html) and "@import" not in html
    for section in SECTIONS:
        assert f'<section id="{section}">' in html, section
    return html


def _render(html_path: Path, tmp: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        pytest.skip("no chromium binary installed")
    from PIL import Image

    png = tmp / f"{html_path.stem}.png"
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'chrome'}", f"--screenshot={png}",
                    "--window-size=1280,6000", html_path.as_uri()], capture_output=True, timeout=120, check=False)
    assert png.is_file(), "chromium wrote no screenshot"
    img = Image.open(png).convert("RGB").resize((160, 750))  # 8 px of the page per row
    ink = [y for y in range(750) if any(sum(img.getpixel((x, y))) < 600 for x in range(160))]
    # text and figures down a page of every section (> 2,000 px), not a blank or an error page
    assert ink and ink[-1] > 250 and len(ink) > 0.15 * ink[-1]
    assert len(img.getcolors(maxcolors=1 << 16) or []) > 30


@pytest.mark.slow
def test_gpu_trace_report(tmp_path):
    src = trace_path("nccl_data.json.gz")
    html = _check_static(_report(src, tmp_path / "gpu.html"))
    assert html.count("<svg") >= 1  # the utilisation timeline
    assert "est. SM efficiency" in html and "16.9%" in html  # the plugin: 16.87%
    assert "ncclKernel_AllReduce" in html and "record_param_comms" in html  # kernels, by launch
    assert "no [memory] events" in html  # this trace was recorded without profile_memory
    assert "low_utilization" in html  # GPU 0 at 23%: the plugin's advice too
    _render(tmp_path / "gpu.html", tmp_path)


@pytest.mark.slow
def test_cpu_capture_report(cpu_capture, tmp_path):
    out = tmp_path / "cpu.html"
    html = _check_static(_report(cpu_capture, out))
    assert "no GPU kernels in the trace" in html  # the utilisation view says why it is empty
    assert html.count("<svg") >= 1  # the memory timeline from the CPU allocator's events
    assert "aten::" in html  # ops
    _render(out, tmp_path)
    assert run_main("report", cpu_capture.parent / "absent.json").returncode == 2
    res = run_main("report", cpu_capture, "-o", tmp_path)  # a folder: a one-line usage error
    assert res.returncode == 2 and "-o" in res.stderr and "Traceback" not in res.stderr


def test_profile_without_its_trace_reports_modules_and_says_why_the_trace_views_are_missing(tmp_path):
    from helpers.profiles import gpu_train_profile

    profile = gpu_train_profile()
    profile["modules"] = {"rows": [{"module": "model", "type": "Net", "depth": 0, "forward_ms": 30.0,
                                    "backward_ms": 50.0},
                                   {"module": "model.head", "type": "Conv2d", "depth": 1, "forward_ms": 7.5,
                                    "backward_ms": 12.0}]}
    src = tmp_path / files.PROFILE
    src.write_text(json.dumps(profile))
    html = _check_static(_report(src, tmp_path / "p.html"))
    section = lambda name: html.split(f'<section id="{name}">')[1].split("</section>")[0]  # noqa: E731
    assert "model.head" in section("modules") and "Conv2d" in section("modules")
    for name in ("utilisation", "breakdown", "launches", "memory"):
        assert "trace file is not beside the profile" in section(name), name
    assert "ampere_sgemm_128x64_nn" in section("kernels") and "aten::mkldnn_convolution" in section("ops")
    assert "launches" in section("recommendations")  # the profile's host-bound verdict
