import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("Mod")
class Mod(QuietBinaryKernel):
    def op(self, a, b):
        # fmod=1: C fmod, the sign of the dividend; fmod=0: the sign of the divisor (Python's %)
        return np.fmod(a, b) if self.attr("fmod", 0) else np.mod(a, b)
