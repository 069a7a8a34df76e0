import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints, normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Tile")
class Tile(NumpyKernel):
    def compute(self, x, repeats, axis=None):
        if self.node.opset < 6:  # opset 1: one repeat count ``tiles`` along one ``axis``
            reps = [1] * x.ndim
            reps[normalize_axis(ints(axis)[0], x.ndim)] = ints(repeats)[0]
            return np.tile(x, reps)
        return np.tile(x, ints(repeats))
