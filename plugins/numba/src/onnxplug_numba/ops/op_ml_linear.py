"""LinearClassifier, LinearRegressor, Normalizer and Scaler (ai.onnx.ml) as compiled row loops.

Attributes are parsed by ``onnxplug_sdk.ml`` (the numpy provider's parser); a LinearClassifier with
several score columns and a NONE / SOFTMAX / LOGISTIC post-transform picks its labels and
transforms its scores in the compiled pass, one score column takes the shared numpy rules.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, Node
from onnxplug_sdk.ml import ML, LinearModel, as_rows, transform_scores

from onnxplug_numba.kernels import forest as kforest
from onnxplug_numba.kernels import linear as klinear
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel
_INPUT_TYPES = FLOAT_TYPES | {np.dtype(np.int32), np.dtype(np.int64)}
_FUSED_POST = {"NONE": kforest.POST_NONE, "SOFTMAX": kforest.POST_SOFTMAX, "LOGISTIC": kforest.POST_LOGISTIC}
_NORMS = {"MAX": klinear.MAX, "L1": klinear.L1, "L2": klinear.L2}
#: Products of at least this many multiply-adds go to BLAS instead of the row loop.
BLAS_MIN_MACS = 65536


class _RowKernel(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        """Every input type the ops allow (float32, float64, int32, int64: the rows read each as float32,
        as onnxruntime does); an input of no inferred type (after a custom-domain op) is one of them."""
        dtype = view.dtype_of(node.inputs[0]) if node.inputs else None
        if dtype is not None and dtype not in _INPUT_TYPES:
            return Decline("dtype", f"input X is {dtype}, not float32, float64, int32 or int64")
        return True

    @staticmethod
    def _rows(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(as_rows(x))

    def _scores(self, x: np.ndarray) -> np.ndarray:
        m = self._model
        rows = self._rows(x)
        if rows.size * m.coef.shape[1] >= BLAS_MIN_MACS:
            self.threads.blas()
            return rows.astype(np.float32) @ m.coef + m.bias
        out = np.empty((rows.shape[0], m.coef.shape[1]), dtype=np.float32)
        klinear.affine_rows(rows, m.coef, m.bias, out)
        return out


@op("LinearClassifier", domain=ML)
class LinearClassifier(_RowKernel):
    """Scores X @ coefficients.T + intercepts; the label is the best class (onnxruntime's rules)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = LinearModel.classifier(self)
        self._fused = not self._model.binary and self._model.post in _FUSED_POST

    def compute(self, x):
        z = self._scores(x)
        if not self._fused:
            return self._model.classify(z)
        best = np.empty(z.shape[0], dtype=np.int64)
        klinear.classify_scores(z, _FUSED_POST[self._model.post], best)
        return self._model.labels[best], z


@op("LinearRegressor", domain=ML)
class LinearRegressor(_RowKernel):
    """[N, targets] = X @ coefficients.T + intercepts, then the post-transform."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = LinearModel.regressor(self)

    def compute(self, x):
        return transform_scores(self._scores(x), self._model.post)


@op("Normalizer", domain=ML)
class Normalizer(_RowKernel):
    """Each row divided by its max (MAX), sum of |x| (L1) or L2 norm; rows whose divisor is 0 pass through."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        norm = node.attr("norm", "MAX")
        norm = norm.decode() if isinstance(norm, bytes) else norm
        if norm not in _NORMS:
            return Decline("attribute", f"norm {norm!r} is not one of MAX, L1, L2")
        return super().supports(node, view)

    def compute(self, x):
        norm = self.attr("norm", "MAX")
        rows = self._rows(x)
        out = np.empty(rows.shape, dtype=np.float32)
        klinear.normalize_rows(rows, _NORMS[norm.decode() if isinstance(norm, bytes) else norm], out)
        return out.reshape(x.shape)


@op("Scaler", domain=ML)
class Scaler(_RowKernel):
    """(x - offset) * scale per feature (or one value for all), in float32."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._offset = np.asarray(self.attr("offset") or [0.0], dtype=np.float32)
        self._scale = np.asarray(self.attr("scale") or [1.0], dtype=np.float32)

    def compute(self, x):
        rows = self._rows(x)
        for name, v in (("offset", self._offset), ("scale", self._scale)):
            if v.size not in (1, rows.shape[1]):
                raise ValueError(f"Scaler: {v.size} {name} values for {rows.shape[1]} features")
        out = np.empty(rows.shape, dtype=np.float32)
        klinear.scale_rows(rows, self._offset, self._scale, out)
        return out.reshape(x.shape)
