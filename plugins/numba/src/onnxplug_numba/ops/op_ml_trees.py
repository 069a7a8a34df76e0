"""TreeEnsembleClassifier, TreeEnsembleRegressor (ai.onnx.ml 1 and 3) and TreeEnsemble (5): one
compiled walk of every row through every tree.

Attributes are parsed once by ``onnxplug_sdk.ml`` (the numpy provider's parser) and flattened at
session creation; a multiclass classifier's labels and NONE / SOFTMAX / LOGISTIC scores are
computed in the same compiled pass, every other output rule is the shared numpy code.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, Node
from onnxplug_sdk.ml import AGGREGATES, ML, POST_TRANSFORMS, ClassifierRules, Forest, ensemble_forest, \
    ensemble_scores, regressor_base, regressor_forest, regressor_scores

from onnxplug_numba.kernels import forest as kforest
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel
_FUSED_POST = {"NONE": kforest.POST_NONE, "SOFTMAX": kforest.POST_SOFTMAX, "LOGISTIC": kforest.POST_LOGISTIC}
#: A node visit weighs about as much as this many elements of elementwise work (for row_grain).
_VISIT_WEIGHT = 4


class _TreeKernel(NumbaKernel):
    """Holds one Forest as the compiled walk's arrays."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        dtype = view.dtype_of(node.inputs[0]) if node.inputs else None
        if dtype not in FLOAT_TYPES:
            return Decline("dtype", f"input X is {dtype or 'of unknown type'}; the compiled walk reads "
                                    "float32 or float64")
        return True

    def _prepare(self, forest: Forest) -> None:
        weights, has = forest.weights, forest.has_weight
        nodes, leaf_targets = np.nonzero(has)  # row-major: grouped by node, targets in order
        self._leaf_start = np.searchsorted(nodes, np.arange(weights.shape[0] + 1)).astype(np.int64)
        self._leaf_target = leaf_targets.astype(np.int64)
        self._leaf_weight = np.ascontiguousarray(weights[nodes, leaf_targets], dtype=np.float64)
        self._targets = weights.shape[1]
        members = forest.members if forest.members is not None else np.zeros((1, 1))
        member_row = forest.member_row if forest.member_row is not None else np.zeros(forest.mode.size, np.int64)
        self._arrays = (np.ascontiguousarray(forest.feature, dtype=np.int64),
                        np.ascontiguousarray(forest.threshold, dtype=np.float64),
                        np.ascontiguousarray(forest.mode, dtype=np.int8),
                        np.ascontiguousarray(forest.true_next, dtype=np.int64),
                        np.ascontiguousarray(forest.false_next, dtype=np.int64),
                        np.ascontiguousarray(forest.missing_true, dtype=np.bool_),
                        np.ascontiguousarray(forest.roots, dtype=np.int64),
                        self._leaf_start, self._leaf_target, self._leaf_weight,
                        np.ascontiguousarray(members, dtype=np.float64), np.ascontiguousarray(member_row, np.int64),
                        bool(np.isin(forest.mode, (kforest.LEQ, kforest.LEAF)).all()))
        visits = _mean_depth(forest) * max(1, forest.roots.size)
        self._grain = row_grain(_VISIT_WEIGHT * visits)

    def _walk(self, x: np.ndarray, how: int) -> tuple[np.ndarray, np.ndarray]:
        """Aggregated scores (float64) and which targets any reached leaf scored, [rows, targets]."""
        if x.ndim == 1:
            x = x.reshape(1, -1)
        elif x.ndim != 2:
            raise ValueError(f"{self.node.op_type}: expected a 1-D or 2-D input, got shape {list(x.shape)}")
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        n = x.shape[0]
        scores = np.empty((n, self._targets))
        has = np.empty((n, self._targets), dtype=np.bool_)
        arrays = self._arrays
        if n < 2 * self._grain:
            if not kforest.forest_scores(x, *arrays, how, scores, has):
                raise ValueError(f"{self.node.op_type}: a tree has a cycle (no leaf reached)")
            return scores, has
        failed = []

        def rows(lo: int, hi: int) -> None:
            if not kforest.forest_scores(x[lo:hi], *arrays, how, scores[lo:hi], has[lo:hi]):
                failed.append(lo)

        self.threads.run(rows, n, self._grain)
        if failed:
            raise ValueError(f"{self.node.op_type}: a tree has a cycle (no leaf reached)")
        return scores, has


def _mean_depth(forest: Forest) -> float:
    """The mean depth of the trees' nodes (at least 1): the expected visits of one walk, roughly."""
    interior = int((forest.mode != kforest.LEAF).sum())
    return float(np.log2(1 + interior / max(1, forest.roots.size))) + 1.0


@op("TreeEnsembleClassifier", domain=ML)
class TreeEnsembleClassifier(_TreeKernel):
    """Labels and scores as onnxruntime's classifier (the shared rules for its binary cases)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._rules, forest = ClassifierRules.parse(self)
        self._prepare(forest)
        self._base = np.ascontiguousarray(self._rules.base, dtype=np.float64)
        self._fused = self._rules.multiclass and self._rules.post in _FUSED_POST

    def compute(self, x):
        scores, has = self._walk(x, kforest.SUM)
        if not self._fused:
            return self._rules.finish(scores, has)
        best = np.empty(scores.shape[0], dtype=np.int64)
        z = np.empty(scores.shape, dtype=np.float32)
        kforest.classify_rows(scores, has, self._base, _FUSED_POST[self._rules.post], best, z)
        return self._rules.labels[best], z


@op("TreeEnsembleRegressor", domain=ML)
class TreeEnsembleRegressor(_TreeKernel):
    """Sum / average / min / max of the leaf weights per target, then base values and post-transform."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._prepare(regressor_forest(self))
        self._base = regressor_base(self)
        how = self.attr("aggregate_function", "SUM")
        self._how = AGGREGATES.index(how.decode() if isinstance(how, bytes) else how)
        self._post = self.attr("post_transform", "NONE")

    def compute(self, x):
        scores, has = self._walk(x, self._how)
        return regressor_scores(scores, has, self._base, self._post)


@op("TreeEnsemble", 5, domain=ML)
class TreeEnsemble(_TreeKernel):
    """ai.onnx.ml opset 5 trees (set-membership splits included); the output keeps X's type."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._prepare(ensemble_forest(self))
        self._how = int(self.attr("aggregate_function", 1))
        self._post = POST_TRANSFORMS[int(self.attr("post_transform", 0))]

    def compute(self, x):
        scores, _ = self._walk(x, self._how)
        return ensemble_scores(scores, self._post, x.dtype)
