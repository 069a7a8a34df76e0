"""com.microsoft UnfoldTensor (torch's Tensor.unfold): the windows of ``size`` values every ``step``
along ``dim``; that axis becomes the window count and the window is a new last axis."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("UnfoldTensor", domain=DOMAIN)
class UnfoldTensor(NumpyKernel):
    def compute(self, x):
        dim = norm_axis(int(self.attr("dim", -1)), x.ndim)
        size, step = int(self.attr("size")), int(self.attr("step", 1))
        if size <= 0 or step <= 0 or size > x.shape[dim]:
            raise ValueError(f"{self.node.describe()}: size {size} and step {step} do not fit axis {dim} of "
                             f"length {x.shape[dim]}")
        windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
        index = [slice(None)] * windows.ndim
        index[dim] = slice(None, None, step)
        return np.ascontiguousarray(windows[tuple(index)])
