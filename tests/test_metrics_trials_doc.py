"""The docs say what the code does about trials per side: the minimum that gets a test and the
count below which a result is labelled low power (docs/analysis.md once said 3 where the code and
docs/readers.md say 2)."""

from __future__ import annotations

import re

from helpers.paths import REPO
from yoloprof.metrics.stats import FULL_POWER_TRIALS, MIN_TRIALS, NEEDS_TRIALS


def test_analysis_and_readers_docs_state_the_code_minimum():
    for doc in ("analysis.md", "readers.md"):
        text = (REPO / "docs" / doc).read_text()
        assert NEEDS_TRIALS in text, doc
        stated = {int(n) for n in re.findall(r"needs at least (\d+) trials per side", text)}
        assert stated == {MIN_TRIALS}, doc
    analysis = (REPO / "docs" / "analysis.md").read_text()
    assert f"Fewer than {MIN_TRIALS} trials on either side" in analysis
    assert f"`FULL_POWER_TRIALS` = {FULL_POWER_TRIALS}" in analysis
