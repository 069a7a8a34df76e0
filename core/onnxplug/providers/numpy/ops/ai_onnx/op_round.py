import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Round")
class Round(QuietUnaryKernel):
    def op(self, x):
        return np.rint(x)  # halves go to the even neighbour, as ONNX specifies
