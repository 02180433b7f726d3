"""The HTML report: self-contained, holds every comparison, and renders to a non-blank page in
headless Chromium (that part skipped only when no chromium binary is installed).

One test reads one report: building it (30 jobs' analysis and four matplotlib figures as SVG) costs
about 5 s of CPU, and the `report` fixture was built once for each of two tests, on each xdist
worker that ran one."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.slow
def test_report_is_self_contained_complete_and_renders_in_headless_chromium(report, tmp_path: Path) -> None:
    path, res = report
    html = path.read_text()
    # nothing fetched: no scripts, no external stylesheets, images, fonts or URLs
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html) and "@import" not in html
    assert html.count("<svg") >= 4  # metric plots, phases, categories, Pareto
    text = unescape(re.sub(r"<[^>]+>", " ", html))
    for r in res.comparisons.itertuples():
        assert re.search(re.escape(r.config) + r"\s+" + re.escape(r.metric), text), (r.config, r.metric)
    for verdict in set(res.comparisons["verdict"]):
        assert f">{verdict}</span>" in unescape(html)
    # the same report, rendered
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        pytest.skip("no chromium binary installed (the report's self-contained checks above passed)")
    from PIL import Image

    png = tmp_path / "shot.png"
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={png}", "--window-size=1280,2000", path.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert png.is_file(), "chromium wrote no screenshot"
    img = Image.open(png).convert("RGB")
    assert img.size == (1280, 2000)
    small = img.resize((320, 500))
    colours = small.getcolors(maxcolors=1 << 16) or []
    assert len(colours) > 50
    non_white = sum(n for n, c in colours if sum(c) < 720)
    assert non_white > 0.05 * 320 * 500
