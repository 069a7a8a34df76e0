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
    """``(y, scale, zero_point)``: uint8, 0-d float32, 0-d uint8 (also com.microsoft's dynamic ops)."""
    hi = np.float32(max(0.0, float(x.max(initial=0.0))))
    lo = np.float32(min(0.0, float(x.min(initial=0.0))))
    scale = np.float32(hi - lo) / np.float32(255) if hi != lo else np.float32(1.0)
    zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x.astype(np.float32) / scale) + zp, 0, 255).astype(np.uint8)
    return y, np.asarray(scale, dtype=np.float32), np.asarray(zp, dtype=np.uint8)
