import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import CompareKernel
from onnxplug.providers.numpy.registry import op


@op("Greater")
class Greater(CompareKernel):
    ufunc = np.greater
