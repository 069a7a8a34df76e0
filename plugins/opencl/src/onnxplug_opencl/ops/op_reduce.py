"""Reduce* ops, ArgMax/ArgMin, GlobalAveragePool and GlobalMaxPool (``kernels/reduce.cl``)."""

from __future__ import annotations

from typing import Any

from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_opencl.engine import movement
from onnxplug_opencl.engine.dtypes import BOOL, FLOATS
from onnxplug_opencl.engine.reduce import REDUCE_OPS, reduce
from onnxplug_opencl.ops._base import ClKernel, dtypes_in, normalize_axis
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry

#: Opset from which the axes of each reduction come from an input instead of an attribute.
_AXES_INPUT_SINCE = {op: (13 if op == "ReduceSum" else 18) for op in REDUCE_OPS if op.startswith("Reduce")}
_FLOAT_ONLY = {"ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}


class Reduce(ClKernel):
    """A reduction over the given axes (all when none), keeping reduced axes when keepdims."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        dtype = view.dtype_of(node.inputs[0])
        if dtype == BOOL:
            return node.op_type in ("ReduceMax", "ReduceMin") or \
                Decline("dtype", f"{node.op_type} of a bool tensor is not computed (only ReduceMax and ReduceMin)")
        return dtypes_in(node, view, FLOATS, node.inputs[:1]) if node.op_type in _FLOAT_ONLY else True

    def compute(self, x: Any, axes: Any = None) -> Any:
        rank = x.ndim
        if self.node.opset >= _AXES_INPUT_SINCE[self.node.op_type]:
            picked = None if axes is None else [int(a) for a in self.host_values(axes, 1).reshape(-1)]
        else:
            attr = self.attr("axes")
            picked = None if attr is None else [int(a) for a in attr]
        if not picked:
            if int(self.attr("noop_with_empty_axes", 0)):
                return x
            picked = list(range(rank))
        picked = sorted({normalize_axis(a, rank, self.node) for a in picked})
        flat = reduce(self.rt, x, picked, self.node.op_type)
        keep = int(self.attr("keepdims", 1))
        shape = [1 if a in picked else int(d) for a, d in enumerate(x.shape)] if keep else \
                [int(d) for a, d in enumerate(x.shape) if a not in picked]
        return movement.alias(self.rt, flat, tuple(shape))


for _op in _AXES_INPUT_SINCE:
    OpenCLProvider.kernel(_op)(Reduce)


class ArgReduce(ClKernel):
    """Index of the max/min along ``axis`` (int64)."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return view.dtype_of(node.inputs[0]) != BOOL or \
            Decline("dtype", f"{node.op_type} of a bool tensor is not computed")

    def compute(self, x: Any) -> Any:
        axis = normalize_axis(self.attr("axis", 0), x.ndim, self.node)
        flat = reduce(self.rt, x, [axis], self.node.op_type, select_last=bool(self.attr("select_last_index", 0)))
        keep = int(self.attr("keepdims", 1))
        shape = [1 if a == axis else int(d) for a, d in enumerate(x.shape)] if keep else \
                [int(d) for a, d in enumerate(x.shape) if a != axis]
        return movement.alias(self.rt, flat, tuple(shape))


OpenCLProvider.kernel("ArgMax")(ArgReduce)
OpenCLProvider.kernel("ArgMin")(ArgReduce)


class GlobalPool(ClKernel):
    """Mean or max over all spatial axes, keeping them as size 1."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return dtypes_in(node, view, FLOATS, node.inputs[:1])

    def compute(self, x: Any) -> Any:
        op = "ReduceMean" if self.node.op_type == "GlobalAveragePool" else "ReduceMax"
        flat = reduce(self.rt, x, list(range(2, x.ndim)), op)
        return movement.alias(self.rt, flat, tuple(x.shape[:2]) + (1,) * (x.ndim - 2))


OpenCLProvider.kernel("GlobalAveragePool")(GlobalPool)
OpenCLProvider.kernel("GlobalMaxPool")(GlobalPool)
