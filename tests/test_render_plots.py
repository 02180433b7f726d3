"""The sweep report's metric figure with one swept axis of user models (issue 27, item 10): the
figure is as wide as the page (its panel no longer 40% of it), the title is whole, and the ticks
name models as the tables do (short names), slanted when long so that none is cut."""

from __future__ import annotations

import re

import numpy as np

from helpers.sweeps import lognormal, make_sweep
from yoloprof.analysis.collect import collect
from yoloprof.analysis.configs import Configs
from yoloprof.analysis.run import analyze_collected
from yoloprof.render import plots

MODELS = ("usermodels_v2.TinyNetWithALongName", "usermodels_v2.SmallNetWithALongName",
          "usermodels_v2.MediumNetWithALongName")


def _truth(c: dict, rng: np.random.Generator) -> dict:
    s = lognormal(rng, 10.0 * (1 + MODELS.index(c["model"])), 0.02, 3)
    return {"step_ms": s, "img_per_s": [16000 / x for x in s]}


def test_one_axis_figure_is_page_wide_titled_and_uses_short_names(tmp_path):
    sweep = make_sweep(tmp_path, [{"model": m} for m in MODELS], _truth, trials=3, repeat_samples=True)
    res = analyze_collected(collect(sweep))
    assert res.varying == ["model"]
    cfg = Configs(res.configs.set_index("group_hash", drop=False), [], res.varying)  # as render.html builds it
    svg = plots.metrics_vs_axes(res.gmeans, cfg, [("step_ms", "ms")])
    width_pt = float(re.search(r'max-width:([\d.]+)pt', svg).group(1))
    assert width_pt >= 790  # 11 inches: the width of the report's column, not a 4-inch panel
    texts = re.findall(r"<text[^>]*>([^<]*)</text>|<!-- (.*?) -->", svg)
    shown = " ".join(a or b for a, b in texts)
    assert "95% CI)" in shown  # the whole title
    for m in MODELS:
        short = m.rsplit(".", 1)[1]
        assert short in shown and m not in shown  # as the tables name them
    assert "rotate(-25" in svg  # long labels slanted instead of overlapping
    assert all(m.rsplit(".", 1)[1] in " ".join(res.configs["config"]) for m in MODELS)  # the tables' names
