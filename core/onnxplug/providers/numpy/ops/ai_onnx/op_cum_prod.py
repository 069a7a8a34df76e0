import numpy as np

from onnxplug.providers.numpy.ops._cumulative_util import CumulativeKernel
from onnxplug.providers.numpy.registry import op


@op("CumProd")
class CumProd(CumulativeKernel):
    ufunc = np.multiply
