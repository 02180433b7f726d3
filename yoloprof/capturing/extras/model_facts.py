"""Model and data facts for every profile: parameters (total, trainable), model size, bytes per batch.

These are counted, not measured, so they are exact: a parameter shared by two modules counts once
(`nn.Module.parameters()` deduplicates), the model size is the bytes of its parameters and buffers
(what `state_dict` would hold), and a batch's bytes are the sum of `nbytes` over every tensor in
it, however it is nested (tuples, lists, dicts), as PyG's `get_data_size` does.
"""

from __future__ import annotations

from typing import Any

from yoloprof.defs.metrics import BYTES_PER_MIB


def model_facts(model: Any) -> dict[str, Any]:
    """{params_total, params_trainable, model_mb} of an nn.Module (None entries when not a module)."""
    params = list(model.parameters()) if hasattr(model, "parameters") else []
    buffers = list(model.buffers()) if hasattr(model, "buffers") else []
    nbytes = sum(t.numel() * t.element_size() for t in [*params, *buffers])
    return {
        "params_total": int(sum(p.numel() for p in params)),
        "params_trainable": int(sum(p.numel() for p in params if p.requires_grad)),
        "model_mb": nbytes / BYTES_PER_MIB,
    }


def batch_bytes(batch: Any) -> int | None:
    """Bytes of every tensor in `batch` (nested sequences and dicts walked); None when it holds none."""
    seen: set[int] = set()
    total, found = 0, False
    stack = [batch]
    while stack:
        item = stack.pop()
        if hasattr(item, "element_size") and hasattr(item, "numel"):
            if id(item) not in seen:
                seen.add(id(item))
                total += int(item.numel()) * int(item.element_size())
                found = True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total if found else None


def facts_section(model: Any, batch: Any) -> dict[str, Any]:
    """The profile's `model` section: model facts plus `batch_bytes` of one input batch."""
    facts: dict[str, Any] = model_facts(model) if model is not None else {
        "params_total": None, "params_trainable": None, "model_mb": None}
    facts["batch_bytes"] = batch_bytes(batch) if batch is not None else None
    return facts
