"""Providers built on the SDK for the tests, plus small model builders and an oracle runner."""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterator, Mapping

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

from onnxplug_sdk import (
    CompilingProvider,
    Device,
    FusedSubgraph,
    GraphView,
    Kernel,
    KernelContext,
    KernelRegistryProvider,
    Node,
    NullDevice,
)

#: Independent numpy definitions of a few elementwise ops (the oracle for interpreted chains).
NUMPY_ELEMENTWISE: dict[str, Callable[..., np.ndarray]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Relu": lambda x: np.maximum(x, 0),
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "Tanh": np.tanh,
    "Abs": np.abs,
    "Neg": np.negative,
    # Not fusable by CompilingProvider's default rule; here for groups a test provider claims itself.
    "Softmax": lambda x: np.exp(x - x.max(axis=-1, keepdims=True))
    / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True),
}


class SecondDeviceProvider(KernelRegistryProvider):
    """Relu and Add on a NullDevice: values really live in the device's buffers, not the host's."""

    name: ClassVar[str] = "sdk_second_device"
    version: ClassVar[str] = "0.0.1"

    def __init__(self, options: Mapping[str, Any] | None = None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.memory = NullDevice(Device("null", 1))
        self.device = self.memory.device
        self.allocator = self.memory
        self.data_transfer = self.memory


def _float32_only(node: Node, view: GraphView) -> bool:
    return all(view.dtype_of(name) == np.dtype(np.float32) for name in node.inputs)


@SecondDeviceProvider.kernel("Relu", 6, 13, 14)
class NullRelu(Kernel):
    """Relu computed in NullDevice memory."""

    supports = classmethod(lambda cls, node, view: _float32_only(node, view))  # type: ignore[assignment]

    def compute(self, x: Any) -> Any:
        memory: NullDevice = self.context.provider.memory  # type: ignore[attr-defined]
        out = memory.alloc(x.shape, x.dtype)
        np.maximum(memory.view(x), np.float32(0), out=memory.view(out))
        return out


@SecondDeviceProvider.kernel("Add", 7, 13, 14)
class NullAdd(Kernel):
    """Add with broadcasting, computed in NullDevice memory."""

    supports = classmethod(lambda cls, node, view: _float32_only(node, view))  # type: ignore[assignment]

    def compute(self, a: Any, b: Any) -> Any:
        memory: NullDevice = self.context.provider.memory  # type: ignore[attr-defined]
        out = memory.alloc(np.broadcast_shapes(a.shape, b.shape), a.dtype)
        np.add(memory.view(a), memory.view(b), out=memory.view(out))
        return out


class InterpretedChain(Kernel):
    """A 'compiled' fused subgraph: runs the member nodes with NUMPY_ELEMENTWISE, in order."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.subgraph = subgraph

    def compute(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        env = dict(zip(self.subgraph.inputs, inputs))
        for node in self.subgraph.nodes:
            args = [env[name] for name in node.inputs]
            env[node.outputs[0]] = np.asarray(NUMPY_ELEMENTWISE[node.op_type](*args), dtype=args[0].dtype)
        return tuple(env[name] for name in self.subgraph.outputs)


class FusingProvider(CompilingProvider):
    """Fuses chains of the NUMPY_ELEMENTWISE ops; single nodes: only Relu (to test the fallback path)."""

    name: ClassVar[str] = "sdk_fusing"
    compiled: ClassVar[list[FusedSubgraph]] = []

    def fusable(self, node: Node, view: GraphView) -> bool:
        return node.op_type in NUMPY_ELEMENTWISE and super().fusable(node, view)

    def compile(self, subgraph: FusedSubgraph, context: KernelContext) -> Kernel:
        type(self).compiled.append(subgraph)
        return InterpretedChain(subgraph, context)


@FusingProvider.kernel("Relu", 6, 13, 14)
class HostRelu(Kernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, x.dtype.type(0))


# --- models and oracles ---------------------------------------------------------------------------

def make_model(nodes: list[onnx.NodeProto], inputs: dict[str, list[Any]], outputs: dict[str, list[Any]],
               opset: int = 17, elem_type: int = TensorProto.FLOAT,
               initializers: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    """A model with inputs/outputs of ``elem_type`` and the given shapes (use symbols for unknown sizes:
    the onnx checker wants a shape on every output)."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, elem_type, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, elem_type, s) for n, s in outputs.items()],
        initializer=initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8  # onnxruntime 1.31 reads up to 13; onnx 1.23 writes 14 by default
    return model


def run_onnxruntime(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The oracle: onnxruntime with its graph optimizations off."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 2
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def reachable(start: Iterator[int], edges: Mapping[int, set[int]]) -> set[int]:
    """Every vertex reachable from ``start`` (not including start unless on a cycle)."""
    seen: set[int] = set()
    stack = [v for s in start for v in edges.get(s, ())]
    while stack:
        v = stack.pop()
        if v not in seen:
            seen.add(v)
            stack.extend(edges.get(v, ()))
    return seen


def plain_session(model: onnx.ModelProto, providers: list[str]) -> Any:
    """An onnxplug session with graph optimizations off, so the graph partitioned is the model's own."""
    import onnxplug

    options = onnxplug.SessionOptions()
    options.graph_optimization_level = onnxplug.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxplug.InferenceSession(model.SerializeToString(), options, providers=providers)
