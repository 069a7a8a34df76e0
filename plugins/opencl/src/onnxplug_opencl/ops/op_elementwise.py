"""Single elementwise nodes: one generated kernel per node (see ``engine/expressions.py``).

Shape arithmetic on small mirrored integer tensors (Shape -> Gather -> Mul -> Concat) runs on
the host with numpy and uploads its tiny result, so Reshape never waits for a device read.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_opencl.engine.dtypes import BOOL, FLOATS
from onnxplug_opencl.engine.expressions import ELEMENTWISE_OPS, expression, operand_inputs
from onnxplug_opencl.fusion.elementwise_chain import ChainRunner
from onnxplug_opencl.ops._base import ClKernel, mirrored
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)
        return (np.sign(a) * np.sign(b) * q).astype(a.dtype)
    return a / b


#: numpy versions of the ops shape arithmetic uses, for inputs that are all host-mirrored.
_HOST: dict[str, Callable[..., np.ndarray]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _int_div, "Neg": np.negative,
    "Abs": np.abs, "Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal, "Not": np.logical_not, "And": np.logical_and, "Or": np.logical_or,
    "Where": np.where, "Identity": lambda x: x, "Sign": np.sign,
    "Max": lambda *xs: np.maximum.reduce(np.broadcast_arrays(*xs)),
    "Min": lambda *xs: np.minimum.reduce(np.broadcast_arrays(*xs)),
}


class ElementwiseKernel(ClKernel):
    """One elementwise node as a generated kernel, specialised per element types and layout."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        if node.op_type == "Dropout":  # inference only: no mask output, training_mode absent or false
            if len(node.outputs) > 1 and node.outputs[1]:
                return Decline("attribute", "its mask output is not computed (inference only)")
            if len(node.inputs) > 2 and node.inputs[2]:
                mode = view.constant(node.inputs[2])
                if mode is None or bool(mode):
                    return Decline("attribute", "training_mode is not a constant false (inference only)")
            return True
        if len(node.outputs) != 1:
            return Decline("attribute", f"{len(node.outputs)} outputs (one only)")
        present = operand_inputs(node)
        in_types = [view.dtype_of(n) for n in present]
        out_type = view.dtype_of(node.outputs[0])
        if node.op_type == "Pow" and not entry.fp64 and any(t not in FLOATS for t in in_types):
            return Decline("device", f"an integer Pow needs cl_khr_fp64, which device {entry.name!r} lacks")
        args = [f"x{i}" for i in range(len(present))]
        if expression(node, args, in_types, out_type) is None:
            types = ", ".join(str(t) for t in in_types)
            return Decline("dtype", f"no OpenCL C expression for {node.op_type} on ({types}) giving {out_type}")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.present = operand_inputs(node)
        self._runners: dict[tuple[np.dtype, ...], ChainRunner] = {}
        if self.view is not None and all(self.static_dtype(n) is not None for n in self.present):
            self._runner(tuple(self.static_dtype(n) for n in self.present))  # type: ignore[misc]

    def _out_dtype(self, in_types: tuple[np.dtype, ...]) -> np.dtype:
        static = self.output_dtype(0)
        if static is not None:
            return static
        op = self.node.op_type
        if op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not",
                  "IsNaN", "IsInf"):
            return BOOL
        if op == "Cast":
            from onnxplug_sdk import numpy_dtype

            return numpy_dtype(int(self.attr("to")))
        if op == "CastLike":
            like = self.static_dtype(self.node.inputs[1])
            if like is None:
                raise ValueError(f"{self.node.describe()}: the element type of input 'target_type' is unknown")
            return like
        if op == "Where":
            return in_types[1]
        return in_types[0]

    def _runner(self, in_types: tuple[np.dtype, ...]) -> ChainRunner:
        runner = self._runners.get(in_types)
        if runner is None:
            types = dict(zip(self.present, in_types))
            out_type = self._out_dtype(in_types)
            node = self.node
            if node.op_type == "Dropout":
                node = Node("Identity", node.inputs[:1], node.outputs[:1], node.name, opset=node.opset)
            runner = ChainRunner(self.rt, f"{node.op_type}_{node.name}", [node], self.present,
                                 [node.outputs[0]], lambda n: types.get(n, out_type))
            self._runners[in_types] = runner
        return runner

    def compute(self, *inputs: Any) -> Any:
        """The node's output (host-computed for small mirrored shape tensors)."""
        by_name = dict(zip(self.node.inputs, inputs))
        values = [by_name[n] for n in self.present]
        host = mirrored(values) if self.node.op_type in _HOST else None
        if host is not None:
            out_type = self._out_dtype(tuple(v.dtype for v in host))
            return self.upload(np.asarray(_HOST[self.node.op_type](*host)).astype(out_type))
        return self._runner(tuple(np.dtype(v.dtype) for v in values)).run(values)[0]


for _op in sorted(ELEMENTWISE_OPS - {"Identity"}):  # Identity is an alias (op_shape)
    OpenCLProvider.kernel(_op)(ElementwiseKernel)
