import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._fft_util import from_complex, to_complex, transform
from onnxplug.providers.numpy.registry import op


@op("DFT")
class DFT(NumpyKernel):
    """DFT along ``axis`` (an attribute before opset 20, an input from 20) of a real or complex signal.

    The inverse of a one-sided spectrum is real: its last axis holds 1 value, as onnx.reference.
    """

    def compute(self, x, dft_length=None, axis=None):
        if self.node.opset < 20:
            ax = self.attr("axis", 1)
        else:
            ax = -2 if axis is None or axis.size == 0 else int(axis.reshape(-1)[0])
        ax = ax % x.ndim
        if ax == x.ndim - 1:
            raise ValueError("DFT: the axis cannot be the last (real/imaginary) axis")
        inverse, onesided = bool(self.attr("inverse", 0)), bool(self.attr("onesided", 0))
        if dft_length is not None and dft_length.size:
            length = int(dft_length.reshape(-1)[0])
        else:
            length = 2 * (x.shape[ax] - 1) if inverse and onesided else x.shape[ax]
        out = transform(to_complex(x), length, ax, inverse, onesided)
        if np.isrealobj(out):
            return out[..., None].astype(x.dtype)
        return from_complex(out, x.dtype)
