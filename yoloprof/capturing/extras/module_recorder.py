"""Per-module breakdown: forward and backward time per `nn.Module` (inclusive and self), calls and
memory, recorded by hooks in a window of steps of its own (never in the timed steps).

How (docs/userloop.md has the measurements behind the choice):
- Forward: a pre- and a post-forward hook on every module mark the clock (perf_counter on CPU,
  CUDA events on a GPU, where a host clock would only time the launches). Inclusive = post - pre;
  self = inclusive minus the inclusive time of the calls made inside it.
- Backward: `register_full_backward_hook` would do, but it wraps outputs in a custom autograd
  Function and breaks any model with an in-place op after a module (ReLU(inplace=True)): an error,
  not a figure. Instead each module call records the autograd sequence numbers issued while it ran
  (a probe node at its start and end); after the outermost forward, every node of the graph that
  hangs off the output gets a pre-hook and a hook, which mark the clock around the node's own work
  in the backward pass. A node belongs to the innermost call whose sequence range holds it;
  AccumulateGrad nodes to the module that owns the parameter. Backward self = the time of its own
  nodes; inclusive adds its descendants'. Autograd engine time between nodes is in no module.
- Memory (CUDA only): the change of `torch.cuda.memory_allocated()` across a forward call, what
  the call leaves allocated (its outputs and saved activations). None on CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.defs.metrics import BYTES_PER_MIB

MODULES_METHOD = "hooks"  # said in the profile's modules section


@dataclass
class _Call:
    name: str
    start: Any
    lo: int | None  # autograd sequence number issued just before the call
    parent: int | None  # index of the enclosing call in this step
    end: Any = None
    hi: int | None = None
    mem: float | None = None


@dataclass
class _Totals:
    calls: int = 0
    fwd: float = 0.0
    fwd_self: float = 0.0
    bwd_self: float = 0.0
    mem: float = 0.0


class _Clock:
    """Marks: perf_counter_ns on CPU, recorded CUDA events on a GPU (resolved after the sync)."""

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self.cuda = device.is_cuda

    def mark(self) -> Any:
        if self.cuda:
            event = self.device.new_event()
            event.record(self.device.stream())  # the chosen device's stream, not the current device's
            return event
        return time.perf_counter_ns()

    def ms(self, a: Any, b: Any) -> float:
        return float(a.elapsed_time(b)) if self.cuda else (b - a) / 1e6


def _probe_seq() -> int | None:
    """The autograd sequence number the next node will get (None when autograd is off)."""
    import torch

    if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
        return None
    node = (torch.empty(0, requires_grad=True) * 1).grad_fn
    return int(node._sequence_nr()) if node is not None else None


def _tensors(obj: Any) -> list[Any]:
    import torch

    out, stack = [], [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


@dataclass
class ModuleRecorder:
    """Attach to a model, then `begin_step()` / `end_step()` (after the device sync) per step."""

    model: Any
    device: DeviceInfo
    steps: int = 0
    _handles: list[Any] = field(default_factory=list)
    _calls: list[_Call] = field(default_factory=list)
    _stack: list[int] = field(default_factory=list)
    _nodes: list[tuple[Any, Any, Any, str | None]] = field(default_factory=list)
    _totals: dict[str, _Totals] = field(default_factory=dict)
    _unattributed: float = 0.0
    _active: bool = False

    def __post_init__(self) -> None:
        self._clock = _Clock(self.device)
        self._names = {id(m): n for n, m in self.model.named_modules()}
        self._owner = {id(p): n for n, m in self.model.named_modules() for p in m.parameters(recurse=False)}

    def attach(self) -> "ModuleRecorder":
        for _name, module in self.model.named_modules():
            self._handles.append(module.register_forward_pre_hook(self._pre))
            self._handles.append(module.register_forward_hook(self._post, always_call=True))
        return self

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._active = False

    def begin_step(self) -> None:
        self._calls.clear()
        self._stack.clear()
        self._nodes.clear()
        self._active = True

    # ---- forward hooks -------------------------------------------------------------------
    def _memory(self) -> float | None:
        if not self.device.is_cuda:
            return None
        return self.device.cuda.memory_allocated(self.device.torch_device) / BYTES_PER_MIB

    def _pre(self, module: Any, args: Any) -> None:
        if not self._active:
            return
        parent = self._stack[-1] if self._stack else None
        call = _Call(self._names.get(id(module), type(module).__name__), None, _probe_seq(), parent,
                     mem=self._memory())
        self._stack.append(len(self._calls))
        self._calls.append(call)
        call.start = self._clock.mark()

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if not self._active or not self._stack:
            return
        call = self._calls[self._stack.pop()]
        call.end = self._clock.mark()
        call.hi = _probe_seq()
        if call.mem is not None:
            call.mem = (self._memory() or 0.0) - call.mem
        if not self._stack:  # the outermost call: hook the graph hanging off its output
            self._hook_graph(output)

    # ---- backward: hooks on the autograd nodes -------------------------------------------
    def _hook_graph(self, output: Any) -> None:
        seen: set[Any] = set()
        stack = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            stack.extend(nxt for nxt, _ in node.next_functions)
            owner = None
            variable = getattr(node, "variable", None)
            if variable is not None:
                owner = self._owner.get(id(variable), "")
            slot = [node, None, None, owner]
            self._nodes.append(slot)  # type: ignore[arg-type]
            node.register_prehook(lambda grads, s=slot: self._node_mark(s, 1))
            node.register_hook(lambda gin, gout, s=slot: self._node_mark(s, 2))

    def _node_mark(self, slot: list[Any], index: int) -> None:
        if self._active:
            slot[index] = self._clock.mark()

    def _attribute(self, node: Any, owner: str | None) -> str | None:
        """The innermost call whose sequence range holds this node (parameters: their owner)."""
        if owner is not None:
            return owner
        seq = int(node._sequence_nr())
        best, width = None, None
        for call in self._calls:
            if call.lo is not None and call.hi is not None and call.lo < seq < call.hi:
                if width is None or call.hi - call.lo < width:
                    best, width = call.name, call.hi - call.lo
        return best

    def end_step(self) -> None:
        """Resolve this step's marks into totals; call after the device is synchronised."""
        if not self._active:
            return
        self._active = False
        ms = [self._clock.ms(c.start, c.end) if c.end is not None else 0.0 for c in self._calls]
        child = [0.0] * len(self._calls)
        for i, call in enumerate(self._calls):
            if call.parent is not None:
                child[call.parent] += ms[i]
        for i, call in enumerate(self._calls):
            tot = self._totals.setdefault(call.name, _Totals())
            tot.calls += 1
            tot.fwd += ms[i]
            tot.fwd_self += max(ms[i] - child[i], 0.0)
            tot.mem += call.mem or 0.0
        for node, start, end, owner in self._nodes:
            if start is None or end is None:
                continue  # the node did not run in this step's backward
            took = self._clock.ms(start, end)
            name = self._attribute(node, owner)
            if name is None:
                self._unattributed += took
            else:
                self._totals.setdefault(name, _Totals()).bwd_self += took
        self._nodes.clear()
        self.steps += 1

    # ---- the profile section -------------------------------------------------------------
    def section(self) -> dict[str, Any] | None:
        """The profile's `modules` section, per step; None when no step was recorded."""
        if not self.steps:
            return None
        n = self.steps
        rows = []
        names = [name for name, _ in self.model.named_modules()]
        types = {name: type(m).__name__ for name, m in self.model.named_modules()}
        params = {name: sum(p.numel() for p in m.parameters()) for name, m in self.model.named_modules()}
        for name in names:
            tot = self._totals.get(name, _Totals())
            inside = [t for other, t in self._totals.items() if _within(other, name)]
            rows.append({
                "module": name, "type": types[name], "depth": 0 if not name else name.count(".") + 1,
                "calls_per_step": tot.calls / n,
                "forward_ms": tot.fwd / n, "forward_self_ms": tot.fwd_self / n,
                "backward_ms": sum(t.bwd_self for t in inside) / n, "backward_self_ms": tot.bwd_self / n,
                "mem_mb": tot.mem / n if self.device.is_cuda else None, "params": int(params[name]),
            })
        return {"method": MODULES_METHOD, "timing": "cuda_events" if self.device.is_cuda else "perf_counter",
                "steps": n, "backward_unattributed_ms": self._unattributed / n, "rows": rows}


def _within(name: str, ancestor: str) -> bool:
    """`name` is `ancestor` or one of its descendants (the root "" holds every module)."""
    return not ancestor or name == ancestor or name.startswith(ancestor + ".")
