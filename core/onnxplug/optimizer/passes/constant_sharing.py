"""Constant sharing: initializers with equal type, shape and bytes become one."""

from __future__ import annotations

import hashlib

import numpy as np

from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


class ConstantSharing(GraphRewritePass):
    """Point readers of duplicate initializers at one copy (lets CSE merge more nodes)."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "duplicate initializers shared"
    order = 20

    def __init__(self) -> None:
        self._digests: dict[int, tuple[np.ndarray, str]] = {}  # id(array) -> (array, digest)

    def _digest(self, value: np.ndarray) -> str:
        cached = self._digests.get(id(value))
        if cached is None or cached[0] is not value:
            cached = (value, hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest())
            self._digests[id(value)] = cached
        return cached[1]

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        graph = index.graph
        groups: dict[tuple, list[str]] = {}
        for name, value in graph.initializers.items():
            if name in index.graph_inputs or index.is_graph_output(name) or value.dtype == object:
                continue
            groups.setdefault((value.dtype.str, value.shape), []).append(name)
        shared = 0
        for same_shape in groups.values():
            if len(same_shape) < 2:  # hash only constants that have a same-shaped twin
                continue
            for names in self._by_sample(graph.initializers, same_shape):
                shared += self._share(index, names)
        return {"shared": shared}

    @staticmethod
    def _by_sample(initializers: dict[str, np.ndarray], names: list[str]) -> list[list[str]]:
        """``names`` split by a few hundred sampled elements: equal constants always share a
        group, and most unequal ones are told apart without hashing all their bytes."""
        found: dict[bytes, list[str]] = {}
        for name in names:
            flat = np.ascontiguousarray(initializers[name]).reshape(-1)
            sample = flat[::max(1, flat.size // 256)].tobytes()
            found.setdefault(sample, []).append(name)
        return [group for group in found.values() if len(group) > 1]

    def _share(self, index: GraphIndex, names: list[str]) -> int:
        """Point readers of byte-equal constants among ``names`` at the first of them."""
        graph = index.graph
        shared = 0
        first: dict[str, str] = {}
        for name in names:
            keep = first.setdefault(self._digest(graph.initializers[name]), name)
            if keep != name:
                index.replace_uses(name, keep)
                del graph.initializers[name]
                shared += 1
        return shared


PASSES = [ConstantSharing]
