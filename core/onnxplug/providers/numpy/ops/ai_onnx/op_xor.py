import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import CompareKernel
from onnxplug.providers.numpy.registry import op


@op("Xor")
class Xor(CompareKernel):
    ufunc = np.logical_xor
