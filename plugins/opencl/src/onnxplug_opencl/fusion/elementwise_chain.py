"""Fused elementwise chains: several elementwise nodes generated into one OpenCL kernel.

Every intermediate stays in registers; only the chain's inputs are read and its exported values
written. The kernel is built at session creation for the layout the static shapes predict. When
an exported value turns out smaller than the whole iteration space (broadcasting inside the
chain), the chain runs node by node instead, still on the device.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from onnxplug_sdk import FusedSubgraph, Kernel, KernelContext, Node

from onnxplug_opencl.engine.dtypes import BOOL, FLOATS, c_type
from onnxplug_opencl.engine.elementwise import Body, ElementwiseProgram, View, vector_width
from onnxplug_opencl.engine.expressions import expression, operand_inputs
from onnxplug_opencl.engine.mlas_math import CALL_PREFIX
from onnxplug_opencl.errors import OpenCLError


class UnsupportedChainError(OpenCLError, ValueError):
    """A node of a chain has no expression for its element types."""


#: A C-style cast of a value (not of a literal), which vector types do not allow.
_SCALAR_CAST = re.compile(r"\((?:float|double|half)\)\s*[(xv]")


def chain_body(nodes: Sequence[Node], inputs: Sequence[str], outputs: Sequence[str],
               dtype_of: Callable[[str], np.dtype]) -> Body:
    """The per-element statements of ``nodes`` (in order) from ``inputs`` to ``outputs``."""
    var: dict[str, str] = {name: f"x{i}" for i, name in enumerate(inputs)}
    lines, vector = [], []
    for k, node in enumerate(nodes):
        operands = operand_inputs(node)
        present = [var[n] for n in operands]
        in_types = [dtype_of(n) for n in operands]
        out_type = dtype_of(node.outputs[0])
        expr = expression(node, present, in_types, out_type)
        if expr is None:
            raise UnsupportedChainError(f"{node.describe()} has no OpenCL expression for element types "
                                        f"{[str(t) for t in in_types]} -> {out_type}")
        ctype = c_type(out_type)
        if out_type == BOOL:
            expr = f"(({expr}) ? 1 : 0)"
        lines.append(f"const {ctype} v{k} = ({ctype})({expr});")
        vector.append(f"const {ctype}{vector_width(out_type)} v{k} = {expr};")
        var[node.outputs[0]] = f"v{k}"
    for j, name in enumerate(outputs):
        lines.append(f"const {c_type(dtype_of(name))} y{j} = {var[name]};")
        vector.append(f"const {c_type(dtype_of(name))}{vector_width(dtype_of(name))} y{j} = {var[name]};")
    # Vector statements need every value in one float type: no casts, no boolean results.
    types = {np.dtype(dtype_of(n)) for n in [*inputs, *outputs, *(node.outputs[0] for node in nodes)]}
    vectorizable = len(types) == 1 and types <= FLOATS and all(n.op_type != "Cast" for n in nodes) \
        and not any(_SCALAR_CAST.search(line) or CALL_PREFIX in line for line in vector)
    return Body(tuple(np.dtype(dtype_of(n)) for n in inputs), tuple(np.dtype(dtype_of(n)) for n in outputs),
                tuple(lines), tuple(vector) if vectorizable else None)


def value_shapes(nodes: Sequence[Node], inputs: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Shapes of every value of the chain, by broadcasting each node's input shapes."""
    shapes = dict(inputs)
    for node in nodes:
        shapes[node.outputs[0]] = tuple(np.broadcast_shapes(*(shapes[n] for n in operand_inputs(node))))
    return shapes


def common_space(nodes: Sequence[Node], inputs: Sequence[str], outputs: Sequence[str],
                 shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The iteration space of the fused kernel: the broadcast of all input shapes, provided every
    exported value has exactly that shape (else None: the chain must run node by node)."""
    try:
        known = value_shapes(nodes, dict(zip(inputs, shapes)))
        full = tuple(np.broadcast_shapes(*shapes))
    except ValueError:  # siblings of different shapes grouped through a shared producer
        return None
    return full if all(known[o] == full for o in outputs) else None


class ChainRunner:
    """Runs ``nodes`` as one generated kernel (or node by node when an export is smaller)."""

    def __init__(self, runtime: Any, name: str, nodes: Sequence[Node], inputs: Sequence[str],
                 outputs: Sequence[str], dtype_of: Callable[[str], np.dtype]) -> None:
        self.runtime = runtime
        self.nodes = list(nodes)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.dtype_of = dtype_of
        self.program = ElementwiseProgram(runtime, _c_name(name), chain_body(nodes, inputs, outputs, dtype_of))
        self._singles: list[ChainRunner] | None = None

    def run(self, values: Sequence[Any]) -> list[Any]:
        """The exported values, from device arrays ``values`` of the chain's inputs."""
        full = common_space(self.nodes, self.inputs, self.outputs, [tuple(v.shape) for v in values])
        if full is None:
            return self._run_nodes(values)
        outs = [self.runtime.empty(full, self.program.body.outputs[j]) for j in range(len(self.outputs))]
        self.program.run(full, [View.of(v) for v in values], [View.of(o) for o in outs])
        return outs

    def _run_nodes(self, values: Sequence[Any]) -> list[Any]:
        if self._singles is None:
            self._singles = [ChainRunner(self.runtime, f"{self.program.name}_{k}", [n],
                                         operand_inputs(n), [n.outputs[0]], self.dtype_of)
                             for k, n in enumerate(self.nodes)]
        env = dict(zip(self.inputs, values))
        for node, single in zip(self.nodes, self._singles):
            env[node.outputs[0]] = single.run([env[i] for i in operand_inputs(node)])[0]
        return [env[o] for o in self.outputs]


def _c_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name)
    return f"k_{cleaned}"[:60]


class FusedElementwiseKernel(Kernel):
    """The kernel of a fused elementwise chain claimed by the OpenCL provider."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.subgraph = subgraph
        view = subgraph.view
        self.runner = ChainRunner(context.provider.runtime, subgraph.name, subgraph.nodes,
                                  subgraph.inputs, subgraph.outputs, view.dtype_of)
        shapes = [view.type_of(n).shape if view.type_of(n) is not None else None for n in subgraph.inputs]
        if all(s is not None and all(isinstance(d, int) for d in s) for s in shapes):
            static = [tuple(s) for s in shapes]  # type: ignore[union-attr]
            if common_space(subgraph.nodes, subgraph.inputs, subgraph.outputs, static) is not None:
                self.runner.program.prepare(static)
        else:  # symbolic dims: build the all-dense layout of the highest rank
            rank = max((len(s) for s in shapes if s is not None), default=1)
            self.runner.program.prepare([(2,) * rank for _ in shapes])

    def compute(self, *inputs: Any) -> tuple[Any, ...]:
        """The chain's exported values."""
        return tuple(self.runner.run(inputs))
