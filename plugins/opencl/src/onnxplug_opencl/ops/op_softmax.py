"""Softmax, LogSoftmax and Hardmax (``kernels/softmax.cl``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import GraphView, Node

from onnxplug_opencl.engine.dtypes import FLOATS
from onnxplug_opencl.engine.reduce import softmax
from onnxplug_opencl.ops._base import ClKernel, dtypes_in, normalize_axis
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry

_MODES = {"Softmax": 0, "LogSoftmax": 1, "Hardmax": 2}


class SoftmaxKernel(ClKernel):
    """Along ``axis`` (opset >= 13), or over the 2-D coercion at ``axis`` (older opsets)."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return dtypes_in(node, view, FLOATS, node.inputs[:1])

    def compute(self, x: Any) -> Any:
        rank = x.ndim
        shape = [int(d) for d in x.shape]
        if self.node.opset >= 13:
            axis = normalize_axis(self.attr("axis", -1), rank, self.node)
            outer, r, inner = int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))
        else:
            axis = normalize_axis(self.attr("axis", 1), rank, self.node)
            outer, r, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis:])), 1
        return softmax(self.rt, x, outer, r, inner, _MODES[self.node.op_type])


for _op in _MODES:
    OpenCLProvider.kernel(_op)(SoftmaxKernel)
