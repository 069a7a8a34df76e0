import numpy as np

from onnxplug.providers.numpy.ops._window_util import WindowKernel
from onnxplug.providers.numpy.registry import op


@op("BlackmanWindow")
class BlackmanWindow(WindowKernel):
    def window(self, phase):
        return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
