import numpy as np

from onnxplug.providers.numpy.ops._window_util import WindowKernel
from onnxplug.providers.numpy.registry import op


@op("HammingWindow")
class HammingWindow(WindowKernel):
    def window(self, phase):
        alpha = 25 / 46
        return alpha - (1 - alpha) * np.cos(phase)
