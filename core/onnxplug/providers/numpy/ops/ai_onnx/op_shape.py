import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Shape")
class Shape(NumpyKernel):
    def compute(self, x):
        # start/end (opset 15) slice the shape like Python slices, clamped to the rank.
        start, end = int(self.attr("start", 0)), self.attr("end")
        return np.array(x.shape[slice(start, None if end is None else int(end))], dtype=np.int64)
