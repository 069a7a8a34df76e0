import numpy as np

from onnxplug.geometry import slice_bounds
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints, normalize_axis
from onnxplug.providers.numpy.registry import op


def _parsed(starts, ends, axes, steps):
    """starts, ends, axes and steps as lists of Python ints (defaults filled in)."""
    starts, ends = ints(starts), ints(ends)
    axes = list(range(len(starts))) if axes is None else ints(axes)
    steps = [1] * len(starts) if steps is None else ints(steps)
    return starts, ends, axes, steps


@op("Slice")
class Slice(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        #: (starts, ends, axes, steps) read once when they are attributes or constant inputs
        self.fixed = None
        try:
            if node.opset < 10:  # attributes before opset 10
                self.fixed = _parsed(self.attr("starts"), self.attr("ends"), self.attr("axes"), None)
            else:
                names = list(node.inputs[1:5]) + [""] * (5 - len(node.inputs))
                values = [context.constants.get(name) if name else None for name in names]
                if names[0] and names[1] and all(v is not None for n, v in zip(names, values) if n):
                    self.fixed = _parsed(*values)
        except (TypeError, ValueError):  # malformed: compute raises the same error at run time
            self.fixed = None

    def compute(self, x, starts=None, ends=None, axes=None, steps=None):
        fixed = self.fixed
        if fixed is None:
            if self.node.opset < 10:
                starts, ends, axes = self.attr("starts"), self.attr("ends"), self.attr("axes")
            fixed = _parsed(starts, ends, axes, steps)
        index = [slice(None)] * x.ndim
        shape = x.shape
        for start, end, axis, step in zip(*fixed):
            if step == 0:
                raise ValueError("Slice: steps must not be 0")
            axis = normalize_axis(axis, x.ndim, "Slice axis")
            index[axis] = slice_bounds(start, end, step, shape[axis])
        return x[tuple(index)].copy()
