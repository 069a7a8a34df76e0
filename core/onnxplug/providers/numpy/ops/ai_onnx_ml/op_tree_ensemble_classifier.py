from onnxplug.ml.scores import ML, as_rows
from onnxplug.ml.tree_rules import ClassifierRules
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("TreeEnsembleClassifier", domain=ML)
class TreeEnsembleClassifier(NumpyKernel):
    """Summed class weights plus base_values; label and scores follow onnxruntime's classifier rules,
    including its binary cases (one scored class, two labels)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._rules, self._forest = ClassifierRules.parse(self)

    def compute(self, x):
        s, has = self._forest.aggregate(as_rows(x), "SUM")
        return self._rules.finish(s, has)
