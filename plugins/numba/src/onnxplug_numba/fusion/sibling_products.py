"""Products of one input with several constant weights (a transformer layer's Q, K and V
projections, each MatMul, or MatMul + bias Add), run as one product with the weights side by side.

One BLAS call over the concatenated weights (laid out once) replaces one call per projection, each
of which costs more in dispatch than in arithmetic at short sequences; each projection's columns
are then copied out contiguous, as its own product would have returned them. Members are the
(MatMul, Add) pairs of matmul_bias.py and lone MatMuls whose weight is a 2-D constant, grouped by
their shared first input, element type and K, while the group's weights hold at most
MAX_GROUP_WEIGHTS elements: the side-by-side copy is extra memory, and larger products are bound by
their arithmetic, not by the calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnxplug_sdk import FusedSubgraph, GraphView, Kernel, KernelContext, Node

from onnxplug_numba.fusion.conv_groups import _constant
from onnxplug_numba.fusion.matmul_bias import _bias_of
from onnxplug_numba.ops._base import FLOAT_TYPES, matmul, openblas_serial
from onnxplug_numba.threads import ThreadControl


#: The most weight elements a group concatenates (4 MiB of float32).
MAX_GROUP_WEIGHTS = 1 << 20


def _weight(view: GraphView, product: Node) -> np.ndarray | None:
    """A float MatMul's constant 2-D weight of the product's element type, else None."""
    if product.op_type != "MatMul" or product.domain not in ("", "ai.onnx") or len(product.inputs) != 2:
        return None
    weight = _constant(view, product.inputs[1])
    dtype = view.dtype_of(product.outputs[0])
    a_type = view.type_of(product.inputs[0])
    if weight is None or weight.ndim != 2 or weight.dtype != dtype or dtype not in FLOAT_TYPES \
            or view.dtype_of(product.inputs[0]) != dtype:
        return None
    if a_type is None or a_type.shape is None or len(a_type.shape) < 2:
        return None  # 1-D operands change the product's rank
    return weight


def find_sibling_products(view: GraphView, pairs: list[list[Node]]) -> list[list[Node]]:
    """Groups (two or more members) of products sharing their first input: each member a
    (MatMul, Add) pair from ``pairs`` or a lone MatMul of ``view``, with a constant 2-D weight."""
    in_pairs = {id(p[0]) for p in pairs}
    members: dict[tuple[str, Any, int], list[list[Node]]] = {}
    for member in [*pairs, *([n] for n in view.nodes if n.op_type == "MatMul" and id(n) not in in_pairs)]:
        weight = _weight(view, member[0])
        if weight is not None:
            members.setdefault((member[0].inputs[0], weight.dtype, weight.shape[0]), []).append(member)
    groups = []
    for group in members.values():
        if len(group) > 1 and sum(_constant(view, m[0].inputs[1]).size for m in group) <= MAX_GROUP_WEIGHTS:
            groups.append([n for member in group for n in member])
    return groups


class SiblingProductsKernel(Kernel):
    """The group's products as one (see the module docstring)."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.threads: ThreadControl = getattr(context.provider, "threads", None) or \
            ThreadControl(context.intra_op_num_threads)
        view, nodes = subgraph.view, list(subgraph.nodes)
        weights, biases, results = [], [], []
        while nodes:
            product = nodes.pop(0)
            weight = _weight(view, product)
            add = nodes[0] if nodes and nodes[0].op_type == "Add" and product.outputs[0] in nodes[0].inputs else None
            if weight is None:
                raise ValueError(f"{product.describe()} has no constant 2-D weight")
            bias = None
            if add is not None:
                nodes.pop(0)
                name = _bias_of(view, product, add)
                if name is None:
                    raise ValueError(f"{add.describe()} does not add a constant bias to {product.describe()}")
                bias = np.asarray(_constant(view, name)).reshape(-1)
            weights.append(weight)
            biases.append(np.zeros(weight.shape[1], weight.dtype) if bias is None else bias.astype(weight.dtype))
            results.append((add or product).outputs[0])
        self.a_at = subgraph.inputs.index(subgraph.nodes[0].inputs[0])
        self.weight = np.ascontiguousarray(np.concatenate(weights, axis=1))
        self.bias = np.ascontiguousarray(np.concatenate(biases))
        edges = np.cumsum([0] + [w.shape[1] for w in weights]).tolist()
        columns = dict(zip(results, zip(edges[:-1], edges[1:])))
        self.columns = [columns[name] for name in subgraph.outputs]

    def compute(self, *inputs: Any) -> tuple[np.ndarray, ...]:
        a, w = inputs[self.a_at], self.weight
        k, n = w.shape
        if a.shape[-1] != k:
            raise ValueError(f"{self.node.describe()}: inputs' shapes {list(a.shape)} and {list(w.shape)} "
                             "cannot be multiplied")
        if a.ndim >= 2 and a.flags.c_contiguous and k and openblas_serial(a.size // k, a.size * n, n):
            y = a.reshape(-1, k).dot(w)
            np.add(y, self.bias, out=y)
        else:
            y = matmul(np.ascontiguousarray(a).reshape(-1, k), w, self.threads, bias=self.bias)
        lead = a.shape[:-1]
        return tuple([np.ascontiguousarray(y[:, lo:hi]).reshape(lead + (hi - lo,)) for lo, hi in self.columns])
