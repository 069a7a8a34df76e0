"""Constant folding: a node whose inputs are all constants is computed once, here, with the kernels
of the catalog's default provider, and its outputs become initializers. Constant nodes become initializers too.

Runs in If/Loop/Scan bodies too, where outer-scope initializers no feed can override count as
constants and results become body initializers. Not folded: nodes with subgraphs, random ops,
nodes producing a graph output (the output would turn into an initializer), results that are not
tensors, and results that would grow the model (more than ``MAX_GROWTH_BYTES`` and bigger than the
inputs, as Expand or ConstantOfShape make; a Constant node's value is already in the model).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug.ir import Node
from onnxplug.kernel import KernelContext
from onnxplug.logs import get_logger
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel

logger = get_logger("onnxplug.optimizer")

#: Ops whose result changes from run to run.
RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                        "Multinomial", "Bernoulli", "Dropout"})
#: A folded output above this size is kept only when it is no bigger than the inputs together.
MAX_GROWTH_BYTES = 64 * 1024


class ConstantFolding(GraphRewritePass):
    """Compute nodes with constant inputs at optimization time."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "nodes whose inputs are constants become initializers (Constant nodes too)"
    order = 0

    def __init__(self) -> None:
        from onnxplug.plugins import get_catalog

        self._provider = get_catalog().default_provider()()

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"folded": 0, "constants": 0}
        for node in list(index.graph.nodes):
            if not self._foldable(index, node):
                continue
            values = self._compute(index, node)
            if values is None:
                continue
            index.remove(node)
            for name, value in zip(node.outputs, values):
                if name:
                    index.graph.initializers[name] = value
                    index.graph.value_info.pop(name, None)
            counts["constants" if node.op_type == "Constant" and node.domain == "" else "folded"] += 1
        return counts

    def _foldable(self, index: GraphIndex, node: Node) -> bool:
        if node.subgraphs or (node.domain == "" and node.op_type in RANDOM_OPS):
            return False
        if any(index.is_graph_output(o) for o in node.outputs if o):
            return False
        return all(not name or index.constant(name) is not None for name in node.inputs)

    def _compute(self, index: GraphIndex, node: Node) -> list[np.ndarray | None] | None:
        kernel_class = self._provider.resolve_kernel(node)
        if kernel_class is None:
            return None
        inputs = [index.constant(name) if name else None for name in node.inputs]
        try:
            kernel = kernel_class(node, KernelContext(self._provider))
            with np.errstate(all="ignore"):
                results: Any = kernel.compute(*inputs)
        except Exception as e:  # left for the run to report, with the run's error handling
            logger.debug("constant folding skipped %s: %s", node.describe(), e)
            return None
        if not isinstance(results, tuple):
            results = (results,)
        values: list[np.ndarray | None] = []
        input_bytes = sum(v.nbytes for v in inputs if v is not None)
        if node.op_type == "Constant" and node.domain == "":
            input_bytes = sum(np.asarray(v).nbytes for v in results if v is not None)
        for name, value in zip(node.outputs, results):
            if not name:
                values.append(None)
                continue
            if isinstance(value, np.generic):
                value = np.asarray(value)
            if not isinstance(value, np.ndarray):
                return None  # sequences, maps and optionals stay computed at run time
            if value.nbytes > MAX_GROWTH_BYTES and value.nbytes > input_bytes:
                return None
            if any(v is not None and np.shares_memory(value, v) for v in inputs):
                value = value.copy()  # an initializer of its own, not a view of another one
            values.append(value)
        if len(values) < len(node.outputs):
            return None
        return values


PASSES = [ConstantFolding]
