from onnxplug.ml.forest import regressor_forest
from onnxplug.ml.forest_walk import ForestWalker
from onnxplug.ml.scores import ML, as_rows
from onnxplug.ml.tree_rules import regressor_base, regressor_scores
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("TreeEnsembleRegressor", domain=ML)
class TreeEnsembleRegressor(NumpyKernel):
    """Sum / average / min / max of the leaf weights per target, plus base_values (onnxruntime's rules)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._forest = ForestWalker(regressor_forest(self))
        self._base = regressor_base(self)
        self._how = self.attr("aggregate_function", "SUM")
        self._post = self.attr("post_transform", "NONE")

    def compute(self, x):
        scores, has = self._forest.aggregate(as_rows(x), self._how)
        return regressor_scores(scores, has, self._base, self._post)
