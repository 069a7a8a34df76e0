import numpy as np

from onnxplug.ml.forest_walk import ForestWalker
from onnxplug.ml.scores import ML, as_rows, post_transform
from onnxplug.ml.tree_rules import ClassifierRules
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("TreeEnsembleClassifier", domain=ML)
class TreeEnsembleClassifier(NumpyKernel):
    """Summed class weights plus base_values; label and scores follow onnxruntime's classifier rules,
    including its binary cases (one scored class, two labels).

    With more than two classes and every class scored for every sample (each class has a tree that
    scores it at all its leaves), the label is the argmax of the scores plus base values directly.
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._rules, forest = ClassifierRules.parse(self)
        self._forest = ForestWalker(forest)
        classes = forest.weights.shape[1]
        self._base = np.zeros(classes)
        given = min(classes, self._rules.base.size)
        self._base[:given] = self._rules.base[:given]
        self._direct = self._rules.multiclass and self._forest.always_has

    def compute(self, x):
        s, has = self._forest.aggregate(as_rows(x), "SUM")
        if self._direct:
            s = s + self._base
            return self._rules.labels[np.argmax(s, axis=1)], post_transform(s, self._rules.post)
        return self._rules.finish(s, has)
