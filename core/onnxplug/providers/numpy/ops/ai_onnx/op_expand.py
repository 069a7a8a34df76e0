import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints
from onnxplug.providers.numpy.registry import op


@op("Expand")
class Expand(NumpyKernel):
    def compute(self, x, shape):
        # Broadcasting goes both ways: a 1 in ``shape`` keeps the input's dimension.
        out_shape = np.broadcast_shapes(x.shape, tuple(ints(shape)))
        return np.array(np.broadcast_to(x, out_shape))
