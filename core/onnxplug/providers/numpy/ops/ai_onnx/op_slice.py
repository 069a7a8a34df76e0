import numpy as np

from onnxplug.geometry import slice_bounds
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints, normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Slice")
class Slice(NumpyKernel):
    def compute(self, x, starts=None, ends=None, axes=None, steps=None):
        if self.node.opset < 10:  # attributes before opset 10
            starts, ends, axes = self.attr("starts"), self.attr("ends"), self.attr("axes")
        starts, ends = ints(starts), ints(ends)
        axes = list(range(len(starts))) if axes is None else ints(axes)
        steps = [1] * len(starts) if steps is None else ints(steps)
        index = [slice(None)] * x.ndim
        for start, end, axis, step in zip(starts, ends, axes, steps):
            if step == 0:
                raise ValueError("Slice: steps must not be 0")
            axis = normalize_axis(axis, x.ndim, "Slice axis")
            index[axis] = slice_bounds(start, end, step, x.shape[axis])
        return x[tuple(index)].copy()
