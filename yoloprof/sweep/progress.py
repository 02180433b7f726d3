"""Live sweep progress (rich, on stderr) and the end-of-sweep job table.

With the basic launcher every job runs in the launching process, so the task function reports to
the `ACTIVE` display directly; under submitit the jobs run elsewhere and the display stays quiet
(the table at the end still lists every job). The table is computed (`summary_records`) apart from
printing (`print_summary`).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from yoloprof.defs import metrics as registry

ACTIVE: "SweepProgress | None" = None
# Headline metric per mode, for the one-number column of the table (the metric registry's).
HEADLINE = {mode: (name, f"{registry.unit(name)} ({registry.label(name)})")
            for mode, name in registry.MODE_HEADLINE.items()}


class SweepProgress:
    """Which job runs, how many are done, failed and left."""

    def __init__(self, total: int | None, enabled: bool = True) -> None:
        self.total, self.enabled = total, enabled
        self.done = self.failed = self.kept = 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> "SweepProgress":
        global ACTIVE
        ACTIVE = self
        return self

    def _start(self) -> None:
        """Shown from the first job on: a sweep refused in validation prints only its error."""
        if self.enabled and self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=False)
            self._progress.start()
            self._task = self._progress.add_task("sweep", total=self.total, counts=self._counts())

    def __exit__(self, *exc: object) -> None:
        global ACTIVE
        ACTIVE = None
        if self._progress is not None:
            self._progress.stop()

    def _counts(self) -> str:
        left = "?" if self.total is None else str(max(0, self.total - self.done))
        return f"done {self.done}  failed {self.failed}  kept {self.kept}  left {left}"

    def job_started(self, num: int, overrides: list[str]) -> None:
        self._start()
        if self._progress is not None:
            text = " ".join(overrides) or "(defaults)"
            self._progress.update(self._task, description=f"job {num}: {text}", counts=self._counts())

    def job_done(self, num: int, status: str) -> None:
        self.done += 1
        self.failed += status == "failed"
        self.kept += status == "kept"
        if self._progress is not None:
            self._progress.update(self._task, advance=1, counts=self._counts())


def set_total(total: int) -> None:
    """The sweeper knows the grid size once it has expanded it."""
    if ACTIVE is not None:
        ACTIVE.total = total
        if ACTIVE._progress is not None:
            ACTIVE._progress.update(ACTIVE._task, total=total, counts=ACTIVE._counts())


def notify_start(num: int, overrides: list[str]) -> None:
    if ACTIVE is not None:
        ACTIVE.job_started(num, overrides)


def notify_done(num: int, status: str) -> None:
    if ACTIVE is not None:
        ACTIVE.job_done(num, status)


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA: what an absent value looks like after a trip through pandas."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _fmt(value: Any) -> str:
    """Numbers as every renderer prints them (render/fmt.py); job numbers as they are."""
    from yoloprof.render.fmt import fmt_num

    return fmt_num(None if _missing(value) else value)


def _job_overrides(values: list[Any]) -> list[list[str]]:
    import json

    out = []
    for value in values:
        try:
            out.append([str(v) for v in json.loads(value or "[]")])
        except (TypeError, ValueError):
            out.append([str(value)])
    return out


def summary_records(df: Any) -> list[dict[str, str]]:
    """One display record per job: number, status, the overrides that set it apart (those shared
    by every job, like `sweep=demo device=cpu`, are left out), the mode's headline metric."""
    per_job = _job_overrides(list(df["overrides"])) if len(df) else []
    shared = set.intersection(*(set(o) for o in per_job)) if len(per_job) > 1 else set()
    records = []
    for raw, job_overrides in zip(df.to_dict("records"), per_job):
        row = {key: None if _missing(value) else value for key, value in raw.items()
               if not key.endswith("_samples")}
        metric, label = HEADLINE.get(row.get("mode") or "train", HEADLINE["train"])
        overrides = " ".join(o for o in job_overrides if o not in shared)
        records.append({"job": _fmt(row.get("job_num")), "status": str(row.get("status")),
                        "overrides": overrides, "step ms": _fmt(row.get("step_ms")),
                        "headline": f"{_fmt(row.get(metric))} {label}" if row.get(metric) is not None else _fmt(None),
                        "headline_value": _fmt(row.get(metric)), "headline_label": f"{registry.label(metric)} {registry.unit(metric)}",
                        "error": row.get("error") or "",  # whole: the table wraps it
                        "cluster job": row.get("cluster_job_id") or ""})
    return records


COLUMNS = ("job", "status", "overrides", "step ms", "headline", "error")


def print_summary(df: Any, sweep_dir: str, file: Any = None) -> None:
    """The end-of-sweep table (stdout by default: it is the sweep's result, not its chatter).
    Fitted to the terminal (piped: $COLUMNS, else 100 columns) without splitting a value
    (render.fit: overrides abbreviated keeping what tells jobs apart); the error column is prose
    and wraps at words."""
    from rich.console import Console
    from rich.table import Table

    from yoloprof.render.fit import fit_rows, table_width

    records = summary_records(df)
    # the scheduler's job ids, when a cluster launcher ran the jobs (to find them in sacct)
    columns = COLUMNS[:1] + (("cluster job",) if any(r["cluster job"] for r in records) else ()) + COLUMNS[1:]
    console = Console(file=file or sys.stdout)
    width = console.width if console.is_terminal else table_width()
    values = [c for c in columns if c != "error"]
    right = tuple(i for i, c in enumerate(values) if c in ("job", "step ms"))
    errors = max([0] + [len(r["error"]) for r in records])
    # one headline metric for every job (one mode): its name in the header, not in every cell
    labels = {r["headline_label"] for r in records}
    one = len(labels) == 1
    headers = [next(iter(labels)) if one and c == "headline" else c for c in values]
    right += tuple(i for i, c in enumerate(values) if one and c == "headline")
    heads, cells = fit_rows(headers, [[r["headline_value" if one and c == "headline" else c] for c in values]
                                      for r in records],
                            width - (min(errors, 30) + 3 if errors else 0), right=right, sep=3, margin=4)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    table = Table(title=f"sweep {sweep_dir}", title_justify="left")
    for i, column in enumerate(heads):
        table.add_column(column, justify="right" if i in right else "left", no_wrap=True, min_width=widths[i])
    if errors:
        table.add_column("error", overflow="fold", min_width=min(errors, 30))
    styles = {"ok": "green", "failed": "red", "skipped": "yellow"}
    for rec, row in zip(records, cells):
        table.add_row(*row, *([rec["error"]] if errors else []), style=styles.get(rec["status"]))
    need = sum(w + 3 for w in widths) + 4 + (min(errors, 30) + 3 if errors else 0)
    console.print(table, width=max(width, need), crop=False)
