"""A network's outputs as a flat tuple of tensors and back: runtimes run graphs of tensors in,
tensors out, while a family's post-process reads the structure the network returned (a tensor,
tuples, lists and dicts of them). The structure is taken from one eager call on the example."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree


class Flattened(torch.nn.Module):
    """`network` returning the tensor leaves of its output in pytree order; `rebuild(leaves)`
    puts them back into the structure of the example's output (non-tensor leaves, such as a
    detector's level sizes, are the example call's: a runtime is specialised to that shape)."""

    def __init__(self, network: Any, example: torch.Tensor) -> None:
        super().__init__()
        self.network = network
        leaves, self.spec = pytree.tree_flatten(network(example))
        self.is_tensor = [isinstance(leaf, torch.Tensor) for leaf in leaves]
        self.constants = [None if t else leaf for t, leaf in zip(self.is_tensor, leaves)]
        # (shape, dtype) of each tensor output, as the example gave them
        self.outputs = [(tuple(leaf.shape), leaf.dtype) for leaf in leaves if isinstance(leaf, torch.Tensor)]
        if not any(self.is_tensor):
            raise ValueError("the network returns no tensor")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leaves = pytree.tree_leaves(self.network(x))
        return tuple(leaf for leaf in leaves if isinstance(leaf, torch.Tensor))

    def rebuild(self, tensors: Any) -> Any:
        it = iter(tensors)
        leaves = [next(it) if t else c for t, c in zip(self.is_tensor, self.constants)]
        return pytree.tree_unflatten(leaves, self.spec)

    @property
    def count(self) -> int:
        """How many tensors `forward` returns."""
        return sum(self.is_tensor)
