import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Dropout")
class Dropout(NumpyKernel):
    """Identity with an all-true mask unless training_mode (opset 12+) is true and ratio > 0.

    In training the mask keeps each element with probability 1 - ratio (seeded by ``seed`` when
    given, drawing as onnx's test generator does) and kept values are scaled by 1 / (1 - ratio).
    """

    def compute(self, x, ratio=None, training_mode=None):
        if self.node.opset >= 12:
            r = 0.5 if ratio is None else float(np.asarray(ratio))
            training = training_mode is not None and bool(np.asarray(training_mode))
        else:
            r = float(self.attr("ratio", 0.5))
            training = False
        mask_dtype = np.bool_ if self.node.opset >= 10 else x.dtype
        if not training or r == 0.0:
            return x, np.ones(x.shape, dtype=mask_dtype)
        if r >= 1.0:
            return np.zeros_like(x), np.zeros(x.shape, dtype=mask_dtype)
        seed = self.attr("seed", None)
        # A seeded mask draws like onnx's backend-test generator (legacy RandomState uniforms).
        rng = np.random.default_rng() if seed is None else np.random.RandomState(int(seed))
        keep = rng.uniform(0.0, 1.0, x.shape) >= r
        y = np.where(keep, x * x.dtype.type(1.0 / (1.0 - r)), x.dtype.type(0))
        return y.astype(x.dtype, copy=False), keep.astype(mask_dtype, copy=False)
