from onnxplug.ml.forest import ensemble_forest
from onnxplug.ml.forest_walk import ForestWalker
from onnxplug.ml.scores import ML
from onnxplug.ml.tree_rules import AGGREGATES, POST_TRANSFORMS, ensemble_scores
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("TreeEnsemble", 5, domain=ML)
class TreeEnsemble(NumpyKernel):
    """ai.onnx.ml opset 5 trees: interior nodes and leaves in separate lists, set-membership splits.

    The output keeps X's type.
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._forest = ForestWalker(ensemble_forest(self))
        self._how = AGGREGATES[self.attr("aggregate_function", 1)]
        self._post = POST_TRANSFORMS[self.attr("post_transform", 0)]

    def compute(self, x):
        scores, _ = self._forest.aggregate(x, self._how)
        return ensemble_scores(scores, self._post, x.dtype)
