import numpy as np

from onnxplug.providers.numpy.ops._window_util import WindowKernel
from onnxplug.providers.numpy.registry import op


@op("HannWindow")
class HannWindow(WindowKernel):
    def window(self, phase):
        return 0.5 - 0.5 * np.cos(phase)
