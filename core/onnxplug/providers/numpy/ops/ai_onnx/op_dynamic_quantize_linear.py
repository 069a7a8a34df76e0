import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("DynamicQuantizeLinear")
class DynamicQuantizeLinear(NumpyKernel):
    """uint8 quantization over [min(0, x), max(0, x)]: returns y, scale and zero point.

    An all-zero input gets scale 1 (as onnxruntime; onnx.reference gives 1/255).
    """

    def compute(self, x):
        return dynamic_quantize(x)


def dynamic_quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, scale, zero_point)``: uint8, 0-d float32, 0-d uint8 (also com.microsoft's dynamic ops).

    Called once per step by the recurrent quantized ops, so it makes few numpy calls: the range and
    zero point as scalars, the quantization in place on the quotient."""
    hi = _F32(max(0.0, float(x.max(initial=0.0))))
    lo = _F32(min(0.0, float(x.min(initial=0.0))))
    scale = (hi - lo) / _F32(255) if hi != lo else _F32(1.0)
    zp = np.rint(np.minimum(np.maximum(_F32(0) - lo / scale, _F32(0)), _F32(255)))
    q = np.asarray(np.divide(x, scale, dtype=np.float32))
    np.rint(q, out=q)
    q += zp
    np.maximum(q, _F32(0), out=q)
    np.minimum(q, _F32(255), out=q)
    return q.astype(np.uint8), np.asarray(scale, dtype=np.float32), np.asarray(zp, dtype=np.uint8)


_F32 = np.float32
