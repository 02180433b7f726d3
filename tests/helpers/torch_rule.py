"""torch's op tree and self CPU time, in plain Python from a trace's raw JSON (an independent
reference for traces/op_table.py: no numpy, no project code).

Follows torch/autograd/profiler_util.py: `_filter_name` (names dropped before the tree),
`EventList._populate_cpu_children` (a stack per thread over the synchronous CPU-side events sorted
by (start, -end); pop while the event starts at/after the top's end or ends after it),
`_remove_dup_nodes` (a child with its parent's name that is the parent's only child is merged
into it, repeated until nothing changes) and `FunctionEvent.self_cpu_time_total` (own duration
minus the durations of the direct children). Times are exact integer nanoseconds (the JSON's
decimals read as Decimal: a float64 holds a 1.7e15 us epoch time only to 0.25 us).
"""

from __future__ import annotations

import gzip
import itertools
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

# JSON categories (lower-cased; 2021 names "Operator", "Runtime") of the CPU-side events.
HOST = {"cpu_op": "cpu_op", "operator": "cpu_op", "user_annotation": "user_annotation",
        "cuda_runtime": "cuda_runtime", "runtime": "cuda_runtime", "cuda_driver": "cuda_driver",
        "python_function": "python_function", "xpu_runtime": "cuda_runtime", "mtia_runtime": "cuda_runtime",
        "privateuse1_runtime": "cuda_runtime", "privateuse1_driver": "cuda_driver"}
FILTERED = {"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
            "profiler::_record_function_enter_new", "profiler::_record_function_exit",
            "aten::is_leaf", "aten::output_nr", "aten::_version"}


class Node:
    __slots__ = ("name", "cat", "thread", "start", "end", "ts", "children", "parent")

    def __init__(self, e: dict):
        self.name, self.cat = e["name"], HOST[str(e["cat"]).lower()]
        self.thread = (str(e.get("pid")), str(e.get("tid")))
        self.ts = float(e["ts"])  # for step membership only
        self.start = int(Decimal(e["ts"]) * 1000)
        self.end = self.start + int(Decimal(e.get("dur", 0)) * 1000)
        self.children: list[Node] = []
        self.parent: Node | None = None

    def self_us(self) -> float:
        return (self.end - self.start - sum(c.end - c.start for c in self.children)) / 1000.0


def raw_events(path: Path) -> list[dict]:
    data = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes(),
                      parse_float=Decimal)
    return data["traceEvents"] if isinstance(data, dict) else data


def build(raw: list[dict]) -> list[Node]:
    nodes = [Node(e) for e in raw if e.get("ph") == "X" and str(e.get("cat", "")).lower() in HOST
             and e.get("name") not in FILTERED]
    for _, group in itertools.groupby(sorted(nodes, key=lambda n: n.thread), key=lambda n: n.thread):
        stack: list[Node] = []
        for ev in sorted(group, key=lambda n: (n.start, -n.end)):
            while stack:
                top = stack[-1]
                if ev.start >= top.end or ev.end > top.end:
                    stack.pop()
                else:
                    top.children.append(ev)
                    ev.parent = top
                    break
            stack.append(ev)
    while True:
        drop = [n for n in nodes if n.parent is not None and n.parent.name == n.name
                and len(n.parent.children) == 1]
        if not drop:
            return nodes
        for n in drop:
            n.parent.children = n.children
            for c in n.children:
                c.parent = n.parent
        gone = set(map(id, drop))
        nodes = [n for n in nodes if id(n) not in gone]


def by_name(nodes: list[Node], keep=lambda n: True) -> dict[str, list[float]]:
    """name -> [calls, self us, total us] over the nodes `keep` accepts."""
    agg: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for n in nodes:
        if keep(n):
            a = agg[n.name]
            a[0] += 1
            a[1] += n.self_us()
            a[2] += (n.end - n.start) / 1000.0
    return dict(agg)
