import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._ml_util import ML, as_rows, transform_scores
from onnxplug.providers.numpy.ops._tree_util import build_forest, tensor_or_list
from onnxplug.providers.numpy.registry import op


@op("TreeEnsembleRegressor", domain=ML)
class TreeEnsembleRegressor(NumpyKernel):
    """Sum / average / min / max of the leaf weights per target, plus base_values (onnxruntime's rules)."""


    def __init__(self, node, context):
        super().__init__(node, context)
        self._targets = self.attr("n_targets", 1)
        self._forest = build_forest(
            self.attr("nodes_treeids"), self.attr("nodes_nodeids"), self.attr("nodes_featureids"),
            tensor_or_list(self, "nodes_values"), self.attr("nodes_modes"), self.attr("nodes_truenodeids"),
            self.attr("nodes_falsenodeids"), self.attr("nodes_missing_value_tracks_true"),
            self.attr("target_treeids"), self.attr("target_nodeids"), self.attr("target_ids"),
            tensor_or_list(self, "target_weights"), self._targets)
        self._base = np.asarray(tensor_or_list(self, "base_values") or [], dtype=np.float64)

    def compute(self, x):
        how = self.attr("aggregate_function", "SUM")
        scores, has = self._forest.aggregate(as_rows(x), how)
        if self._targets == 1:
            scores = scores + (self._base[0] if self._base.size == 1 else 0.0)
        else:  # as onnxruntime: a target no leaf scored stays 0, base value included
            scores = np.where(has, scores + (self._base if self._base.size == self._targets else 0.0), 0.0)
        return transform_scores(scores.astype(np.float32), self.attr("post_transform", "NONE"))
