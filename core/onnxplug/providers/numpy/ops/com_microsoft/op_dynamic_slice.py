"""DynamicSlice (onnxruntime, default domain): ai.onnx Slice-10 without steps: data, starts, ends,
optional axes as inputs."""

from onnxplug.geometry import slice_bounds
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints, normalize_axis
from onnxplug.providers.numpy.registry import op


@op("DynamicSlice")
class DynamicSlice(NumpyKernel):
    def compute(self, x, starts, ends, axes=None):
        starts, ends = ints(starts), ints(ends)
        axes = list(range(len(starts))) if axes is None else ints(axes)
        if not len(starts) == len(ends) == len(axes):
            raise ValueError(f"{self.node.describe()}: starts, ends and axes differ in length")
        index = [slice(None)] * x.ndim
        for start, end, axis in zip(starts, ends, axes):
            axis = normalize_axis(axis, x.ndim, "DynamicSlice axis")
            index[axis] = slice_bounds(start, end, 1, x.shape[axis])
        return x[tuple(index)].copy()
