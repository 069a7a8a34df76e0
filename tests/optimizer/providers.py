"""Test providers: one that claims only some op types, and one that asks for channels-last Conv."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from onnxplug.ir import Node
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.provider import ExecutionProvider
from onnxplug.providers.numpy import NumpyProvider
from onnxplug.providers.numpy.registry import REGISTRY as NUMPY_REGISTRY


class PickyProvider(ExecutionProvider):
    """Claims only the (domain, op_type) pairs it is given, computing them with numpy's kernels."""

    name: ClassVar[str] = "picky"

    def __init__(self, claims: set[tuple[str, str]]) -> None:
        super().__init__()
        self.kernel_registry = NUMPY_REGISTRY
        self.claims = claims

    def get_capability(self, view):
        return [c for c in super().get_capability(view) if (c.nodes[0].domain, c.nodes[0].op_type) in self.claims]


NHWC_REGISTRY = KernelRegistry("nhwc-test")


class _ChannelsLast(Kernel):
    """Runs the numpy kernel of the standard op on NCHW data, transposing in and out."""

    def __init__(self, node: Node, context) -> None:
        super().__init__(node, context)
        standard = Node(node.op_type, node.inputs, node.outputs, node.name, domain="",
                        attributes=node.attributes, opset=17)
        self.inner = NumpyProvider().create_kernel(standard, context)

    def compute(self, x, *rest):
        rank = x.ndim
        first = np.transpose(x, [0, rank - 1, *range(1, rank - 1)])
        y = self.inner.compute(first, *rest)
        return np.ascontiguousarray(np.transpose(y, [0, *range(2, rank), 1]))


for _op in ("Conv", "MaxPool"):
    NHWC_REGISTRY.register(_op, 1, _ChannelsLast, domain="com.onnxplug.nhwc")
NHWC_REGISTRY.register("Conv", 1, NUMPY_REGISTRY.resolve("", "Conv", 17))


class ChannelsLastProvider(ExecutionProvider):
    """Claims Conv and asks for it channels-last (``preferred_layout``), as a CPU conv library might."""

    name: ClassVar[str] = "nhwc_test"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = NHWC_REGISTRY
        self.asked: list[str] = []

    def preferred_layout(self, node: Node) -> str | None:
        self.asked.append(node.op_type)
        return "NHWC" if node.op_type == "Conv" else None
