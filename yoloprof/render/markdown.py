"""`analysis/comparison.md`: the comparison table and the beyond-pairwise views as GitHub
Markdown, for pasting into a pull request or an issue."""

from __future__ import annotations

from typing import Any

import pandas as pd

from yoloprof.render.fmt import NA, COMPARISON_HEADERS, RATIO_NOTE, comparison_cells, fmt_in, fmt_num, fmt_p, fmt_ratio


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _best_rows(best: pd.DataFrame) -> list[list[str]]:
    out = []
    for _, b in best.iterrows():
        sig = {True: "yes", False: "no"}.get(b.get("significant"), NA)
        value = fmt_in(b["value"], b.get("unit"))
        out.append([b["metric"], str(b["best"]), value, str(b["runner_up"] or NA),
                    fmt_ratio(b["margin"], b["ci_low"], b["ci_high"]), fmt_p(b["p"]), sig])
    return out


def front_matter(result: Any) -> list[str]:
    """YAML front matter: the analysis' name, settings and reproducing command (values in JSON,
    which YAML reads as is). No date, so an identical rerun gives an identical file."""
    import json

    items = {"analysis": result.name, "command": result.command, **result.settings}
    return ["---", *(f"{k}: {json.dumps(v)}" for k, v in items.items()), "---", ""]


def comparison_markdown(result: Any) -> str:
    """The whole Markdown document for an AnalysisResult."""
    s = result.settings
    parts = front_matter(result) + [f"# Sweep analysis: {result.title}", "",
             f"- reproduce with: `{result.command}`" if result.command else "- reproduce with: -",
             f"- {result.baseline}",
             f"- swept axes: {', '.join(result.varying) or 'none'}",
             "- jobs: " + ", ".join(f"{k} {v}" for k, v in result.jobs.items()),
             f"- alpha {s['alpha']}, noise threshold {s['noise']:.0%}, correction {s['correction']}; "
             "ratio > 1 means better (lower-is-better metrics use baseline/value)", ""]
    parts += ["## Comparisons", "", f"{RATIO_NOTE[0].upper()}{RATIO_NOTE[1:]}.", ""]
    cmp = result.comparisons
    if cmp.empty:
        parts.append("No comparisons (one configuration only, or no baseline pairs).")
    else:
        parts.append(md_table(COMPARISON_HEADERS, [comparison_cells(r) for r in cmp.to_dict("records")]))
        from yoloprof.render.knob_lines import knob_lines

        extra = knob_lines(cmp)  # outputs and payback_calls (docs/knobs.md)
        parts += ["", *(f"- {line}" for line in extra)] if extra else []
    if not result.best.empty:
        parts += ["", "## Best configuration per metric", "",
                  md_table(["metric", "best", "value", "runner-up", "margin [CI]", "p", "significant"],
                           _best_rows(result.best))]
    front = result.pareto[result.pareto["pareto"]] if "pareto" in result.pareto else result.pareto.iloc[0:0]
    if not front.empty:
        axes = result.pareto.attrs.get("axes") or [c for c in front.columns if c not in ("group_hash", "config", "pareto", "complete")]
        parts += ["", f"## Pareto set ({', '.join(axes)})", "",
                  md_table(["config"] + axes, [[r["config"]] + [fmt_num(r[a]) for a in axes] for _, r in front.iterrows()])]
    if not result.scaling.empty:
        parts += ["", "## Scaling", ""] + [f"- {r['axis']} ({r['series']}): {r['note']}" for _, r in result.scaling.iterrows()]
    warned = cmp[cmp["warnings"].fillna("") != ""] if not cmp.empty else cmp
    if result.warnings or result.notes or not warned.empty:
        parts += ["", "## Warnings and notes", ""]
        parts += [f"- **warning:** {w}" for w in result.warnings] + [f"- {n}" for n in result.notes]
        parts += [f"- {r['config']} / {r['metric']}: {r['warnings']}" for r in warned.to_dict("records")]
    return "\n".join(parts) + "\n"
