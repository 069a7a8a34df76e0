import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._ml_util import ML, as_rows, class_labels, logistic, post_transform
from onnxplug.providers.numpy.ops._tree_util import build_forest, tensor_or_list
from onnxplug.providers.numpy.registry import op


@op("TreeEnsembleClassifier", domain=ML)
class TreeEnsembleClassifier(NumpyKernel):
    """Summed class weights plus base_values; label and scores follow onnxruntime's classifier rules,
    including its binary cases (one scored class, two labels)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._labels, self._strings = class_labels(self)
        ids = np.asarray(self.attr("class_ids"), dtype=np.int64)
        weights = tensor_or_list(self, "class_weights")
        self._forest = build_forest(
            self.attr("nodes_treeids"), self.attr("nodes_nodeids"), self.attr("nodes_featureids"),
            tensor_or_list(self, "nodes_values"), self.attr("nodes_modes"), self.attr("nodes_truenodeids"),
            self.attr("nodes_falsenodeids"), self.attr("nodes_missing_value_tracks_true"),
            self.attr("class_treeids"), self.attr("class_nodeids"), ids, weights, len(self._labels))
        self._base = np.asarray(tensor_or_list(self, "base_values") or [], dtype=np.float64)
        self._binary = len(self._labels) == 2 and np.unique(ids).size == 1
        self._all_positive = bool((np.asarray(weights) >= 0).all())

    def compute(self, x):
        s, has = self._forest.aggregate(as_rows(x), "SUM")
        post = self.attr("post_transform", "NONE")
        if len(self._labels) > 2:
            base = np.zeros(s.shape[1])
            base[:self._base.size] = self._base[:s.shape[1]]
            s = s + base
            has = has.copy()
            has[:, :self._base.size] = True
            best = np.argmax(np.where(has, s, -np.inf), axis=1)
            return self._labels[best], post_transform(s, post)
        return self._binary_case(s, has, post)

    def _binary_case(self, s, has, post):
        """onnxruntime's two-class rules: base values, which score decides, and how Z is filled.

        Scores of classes no leaf scored are written as 0, as onnxruntime's ScoreValue does.
        """
        h0, h1 = has[:, 0], has[:, 1]
        s0, s1 = s[:, 0], s[:, 1]
        extra = -1
        keep_two = h1
        if self._base.size == 2:  # with a class-1 score, base_values[0] is unused
            b0, b1 = self._base
            s0, s1 = np.where(h1, -(b1 + s0), s0 + b0), np.where(h1, b1 + s0, s1 + b1)
            keep_two = np.ones_like(h1)
        elif self._base.size == 1:
            s0 = s0 + self._base[0]
        else:
            extra = 3
        pos = np.where(h1, s1, np.where(h0, s0, 0.0))
        if self._binary:
            win = pos > 0.5 if self._all_positive else pos > 0
            extra = np.where(win, 0, 1) if self._all_positive else np.where(win, 2, 3)
            labels = self._labels[win.astype(np.int64)]
        else:
            win = pos > 0
            labels = self._labels[win.astype(np.int64)] if self._strings else win.astype(np.int64)
        extra = np.broadcast_to(extra, pos.shape)
        v0, v1 = np.where(h0, s0, 0.0), np.where(h1, s1, 0.0)
        two = post_transform(np.stack([v0, v1], axis=1), post)
        if post == "PROBIT":
            single = np.stack([post_transform(v0[:, None], post)[:, 0], np.zeros_like(v0)], axis=1)
        else:
            p = logistic(v0) if post == "LOGISTIC" else v0
            mixed = np.stack([logistic(-v0), p], axis=1) if post == "LOGISTIC" else np.stack([-v0, v0], axis=1)
            single = np.where((extra <= 1)[:, None], np.stack([1 - p, p], axis=1), mixed)
            single = np.where((extra < 0)[:, None], np.stack([v0, np.zeros_like(v0)], axis=1), single)
        z = np.where(keep_two[:, None], two, single)
        return labels, z.astype(np.float32)
