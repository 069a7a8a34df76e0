import dataclasses

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import BiasedWeights, ConvAttributes, conv_nd, constant_inputs
from onnxplug.providers.numpy.ops._quant_util import IntegerConvWeights, centered_range, requantize
from onnxplug.providers.numpy.registry import op


def integer_conv(kernel, x: np.ndarray, x_zero_point, w: np.ndarray, w_zero_point, b) -> np.ndarray:
    """The exact integer conv of ``x - x_zero_point`` and ``w - w_zero_point`` (+ bias), as float32 or
    float64 integers, by the tuned float engines (Winograd's transforms are not exact, so off)."""
    w_dt, b_dt = kernel.prepared.get(w, w_zero_point, b, centered_range(x.dtype, x_zero_point))
    xf = x.astype(w_dt.dtype)
    if x_zero_point is not None:
        xf -= np.asarray(x_zero_point).astype(w_dt.dtype)
    strides, dilations, begin, end = kernel.conv_attrs.resolve(x.shape[2:], w.shape[2:])
    weights = kernel.weights32 if w_dt.dtype == np.float32 else kernel.weights64
    return conv_nd(xf, w_dt, b_dt, strides, dilations, begin, end, kernel.conv_attrs.group,
                   weights=weights, tuning=kernel.exact_tuning)


def prepare_integer_conv(kernel, node, context, constant_indices: tuple[int, ...]) -> None:
    """Sets the attributes ``integer_conv`` reads on a QLinearConv or ConvInteger kernel."""
    constant = constant_inputs(node, context, constant_indices)
    kernel.conv_attrs = ConvAttributes(kernel.attr)
    kernel.prepared = IntegerConvWeights(constant)
    kernel.weights32, kernel.weights64 = BiasedWeights(constant), BiasedWeights(constant)
    kernel.exact_tuning = dataclasses.replace(kernel.tuning, winograd=False)


@op("QLinearConv")
class QLinearConv(NumpyKernel):
    """Exact integer conv (+ int32 bias), requantised with x_scale * w_scale / y_scale (per channel)."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        prepare_integer_conv(self, node, context, (3, 5, 8))

    def compute(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point=None, b=None):
        acc = integer_conv(self, x, x_zero_point, w, w_zero_point, b)
        ws = np.asarray(w_scale, dtype=np.float32)
        if ws.size > 1:
            ws = ws.reshape((-1,) + (1,) * (w.ndim - 2))
        mult = np.float32(x_scale) * ws / np.float32(y_scale)
        out_dtype = y_zero_point.dtype if y_zero_point is not None else x.dtype
        return requantize(acc, mult, y_zero_point, out_dtype)
