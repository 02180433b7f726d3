"""The op rows of a trace: the op tree, its table (`traces.op_table`) and their grouping by name
and phase (and by input shapes), plus the ops counted per step and phase.

Why one function of the events alone (`op_part`): it is half the analysis of a large trace and
depends on nothing else the engine computes but the steps and the phase timeline. Its costliest
share, the tree's nesting and self times (`op_table.op_nesting`), needs nothing but the events,
so a forked helper computes it while the engine does the rest and the ops' inclusive memory
(`analyze.analyze_events`); the rows are then grouped here from both (`op_rows_of`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yoloprof.traces.grouping import grouped_rows, per_step_label
from yoloprof.traces.op_table import ROW_CATS, ROW_KIND, UNRECORDED, OpTable, op_table, tree_events
from yoloprof.traces.parse import CAT_CODE, Events, cat_mask
from yoloprof.traces.phase_timeline import Timeline
from yoloprof.traces.profiler_steps import STEP_NAME, Steps, step_of

NO_SHAPES = "[]"  # how torch spells the shapes of an op recorded without "Input Dims"


def _op_rows(ev: Events, rows: np.ndarray, table: OpTable, op_phase: np.ndarray, names: list[str],
             by_shape: bool = False) -> list[dict[str, Any]]:
    """Ops and runtime/driver calls grouped as key_averages groups them (by name, and here by
    phase; or by name and input shapes); `rows` are the kept ones (merged duplicates left out),
    `table` is aligned with them; memory columns only when the trace has memory events."""
    sums = {"self": table.self_us, "total": ev.dur[rows]}
    if table.self_alloc is not None and table.self_freed is not None:  # both or neither (traces/op_table.py)
        sums.update(alloc=table.self_alloc, freed=table.self_freed)
    shapes = ev.shape[rows] if by_shape and ev.shape is not None else None
    label, labels = (op_phase, names) if shapes is None else (shapes + 1, [NO_SHAPES] + ev.shape_strings)
    kind_of = {CAT_CODE[c]: k for c, k in ROW_KIND.items()}
    row_names = ev.name[rows]
    name_cat = np.zeros(len(ev.strings), np.int64)
    name_cat[row_names] = ev.cat[rows]  # one category per name (ops vs API calls)
    out = []
    for name, lab, tot, count in grouped_rows(row_names, label, len(labels), sums):
        row = {"name": ev.strings[name], "kind": kind_of.get(int(name_cat[name]), "op"),
               "self_us": tot["self"], "total_us": tot["total"], "count": count}
        row.update({"phase" if shapes is None else "input_shapes": labels[lab]})
        if "alloc" in tot:
            row.update(alloc_bytes=tot["alloc"], freed_bytes=tot["freed"])
        out.append(row)
    return out


def op_part(ev: Events, steps: Steps, tl: Timeline) -> tuple[list[dict[str, Any]], list[dict[str, Any]], np.ndarray]:
    """(op rows by phase, op rows by input shapes, ops per step and phase): the op tree, its table
    and their grouping, from the events alone (module doc). The tree spans every host event of the trace (a step's op
    may have children past its end); rows are the ops and runtime/driver calls that start in the
    analysed steps, merged duplicates left out; ops per phase count every `cpu_op` event that
    starts in a step (tree node or not), ProfilerSteps left out."""
    tree = tree_events(ev)
    return op_rows_of(ev, steps, tl, tree, op_table(ev, tree))


def op_rows_of(ev: Events, steps: Steps, tl: Timeline, tree: np.ndarray, table: OpTable
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], np.ndarray]:
    """`op_part` from the tree's nodes (`tree_events`) and their table (`op_table`): computed
    wherever they were (`analyze.analyze_events` has the table's nesting computed by a helper)."""
    S, P = len(steps), len(tl.names)
    step_name = _step_names(ev)
    tree_ts, tree_cat = ev.ts[tree], ev.cat[tree]
    tree_step = step_of(tree_ts, steps)
    in_rows = (tree_step >= 0) & cat_mask(*ROW_CATS)[tree_cat] & ~step_name[ev.name[tree]]
    placed = np.flatnonzero(in_rows)  # rows and merged duplicates: every op of the tree counted
    phase = tl.phase_at(tree_ts[placed])
    del tree_ts
    op = tree_cat[placed] == CAT_CODE["cpu_op"]
    phase_ops = per_step_label(tree_step[placed[op]], phase[op], S, P)
    del tree_cat, op
    phase_ops += _untreed_ops(ev, steps, tl, step_name)  # integer counts: any order, same sums
    # Shapes are listed when any row has some, merged duplicates included (as always).
    with_shapes = ev.shape is not None and bool((ev.shape[tree][in_rows] >= 0).any())
    row_phase = phase[table.kept[placed]]
    del phase, placed, tree_step
    in_rows &= table.kept
    rows, table = tree[in_rows], table.take(in_rows)
    del tree, in_rows
    op_rows = _op_rows(ev, rows, table, row_phase, tl.names)
    shape_rows = _op_rows(ev, rows, table, row_phase, tl.names, by_shape=True) if with_shapes else []
    return op_rows, shape_rows, phase_ops


def _untreed_ops(ev: Events, steps: Steps, tl: Timeline, step_name: np.ndarray) -> np.ndarray:
    """Ops per step and phase of the `cpu_op` events that are no nodes of the tree (the names
    torch drops before building it, `op_table.UNRECORDED`)."""
    dropped = np.fromiter((s in UNRECORDED for s in ev.strings), bool, len(ev.strings)) & ~step_name
    idx = np.flatnonzero(dropped[ev.name]) if dropped.any() else np.zeros(0, np.int64)
    idx = idx[ev.cat[idx] == CAT_CODE["cpu_op"]]
    step = step_of(ev.ts[idx], steps)
    idx, step = idx[step >= 0], step[step >= 0]
    return per_step_label(step, tl.phase_at(ev.ts[idx]), len(steps), len(tl.names))


def _step_names(ev: Events) -> np.ndarray:
    """Per name code: whether it is a `ProfilerStep#N` (no row, no op of a phase)."""
    return np.fromiter((bool(STEP_NAME.search(s)) for s in ev.strings), bool, len(ev.strings))
