import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import ExtremumKernel, highest
from onnxplug.providers.numpy.registry import op


@op("ReduceMin")
class ReduceMin(ExtremumKernel):
    ufunc = np.minimum
    empty_identity = staticmethod(highest)  # +inf on an empty set
