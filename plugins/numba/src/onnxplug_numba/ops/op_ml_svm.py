"""SVMClassifier and SVMRegressor (ai.onnx.ml): kernel values, one-vs-one votes and libsvm's
pairwise-coupling probabilities compiled per row.

Attributes are parsed once by ``onnxplug_sdk.ml`` (the numpy provider's parser); labels, the
post-transform and onnxruntime's two-class write-outs are that shared numpy code. Linear models
(no support vectors) are one small matrix product, left to numpy as well.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, Node
from onnxplug_sdk.ml import ML, SvmClassifierModel, SvmRegressorModel, as_rows

from onnxplug_numba.kernels import svm as ksvm
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel


class _SvmKernel(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        dtype = view.dtype_of(node.inputs[0]) if node.inputs else None
        if dtype not in FLOAT_TYPES:
            return Decline("dtype", f"input X is {dtype or 'of unknown type'}; the compiled kernel reads "
                                    "float32 or float64")
        kind = node.attr("kernel_type", "LINEAR")
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind not in ksvm.KERNELS:
            return Decline("attribute", f"kernel_type {kind!r} is not one of {', '.join(ksvm.KERNELS)}")
        return True

    def _kernel_args(self, model) -> tuple:
        gamma, coef0, degree = model.params
        self._grain = row_grain(max(1, model.vectors.size) if model.vectors is not None else 1)
        return (np.ascontiguousarray(model.vectors), ksvm.KERNELS[model.kernel], np.float32(gamma),
                np.float32(coef0), int(degree))

    def _rows(self, x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(as_rows(x), dtype=np.float32)

    def _split(self, work, n: int) -> None:
        if n < 2 * self._grain:
            work(0, n)
        else:
            self.threads.run(work, n, self._grain)


@op("SVMClassifier", domain=ML)
class SVMClassifier(_SvmKernel):
    """One-vs-one SVC with votes and optional Platt probabilities, or a linear SVM."""

    def __init__(self, node, context):
        super().__init__(node, context)
        m = self._model = SvmClassifierModel.parse(self)
        if m.svc:
            pairs = len(m.pairs())
            if m.rho.size < pairs or (m.proba and min(m.prob_a.size, m.prob_b.size) < pairs):
                raise ValueError(f"SVMClassifier: {pairs} class pairs need as many rho, prob_a and prob_b values")
            self._args = self._kernel_args(m) + (np.ascontiguousarray(m.coef), m.starts, m.rho[:pairs],
                                                 m.prob_a[:pairs], m.prob_b[:pairs])
            self._pairs = pairs

    def compute(self, x):
        m, rows = self._model, self._rows(x)
        if not m.svc:
            return m.outputs(rows, None, None, None)
        n, c = rows.shape[0], len(m.labels)
        scores = np.empty((n, self._pairs), dtype=np.float32)
        best = np.empty(n, dtype=np.int64)
        probs = np.empty((n, c) if m.proba else (0, c), dtype=np.float32)
        args = self._args

        def work(lo: int, hi: int) -> None:
            ksvm.svc_rows(rows[lo:hi], *args, scores[lo:hi], best[lo:hi], probs[lo:hi] if m.proba else probs)

        self._split(work, n)
        return m.outputs(rows, scores, best, probs if m.proba else None)


@op("SVMRegressor", domain=ML)
class SVMRegressor(_SvmKernel):
    """sum_i coef_i K(x, sv_i) + rho (linear in x without support vectors); one_class gives +-1."""

    def __init__(self, node, context):
        super().__init__(node, context)
        m = self._model = SvmRegressorModel.parse(self)
        if m.vectors is not None:
            self._args = self._kernel_args(m) + (np.ascontiguousarray(m.coef), np.float32(m.rho))

    def compute(self, x):
        m, rows = self._model, self._rows(x)
        if m.vectors is None:
            return m.finish((rows @ m.coef.reshape(-1, 1) + m.rho).astype(np.float32))
        out = np.empty(rows.shape[0], dtype=np.float32)
        args = self._args
        self._split(lambda lo, hi: ksvm.svr_rows(rows[lo:hi], *args, out[lo:hi]), rows.shape[0])
        return m.finish(out.reshape(-1, 1))
