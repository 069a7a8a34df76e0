import numpy as np

from onnxplug.providers.numpy.ops._arg_util import ArgReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ArgMin")
class ArgMin(ArgReduceKernel):
    arg = staticmethod(np.argmin)
