import numpy as np

from onnxplug.providers.numpy.ops._arg_util import ArgReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ArgMax")
class ArgMax(ArgReduceKernel):
    arg = staticmethod(np.argmax)
