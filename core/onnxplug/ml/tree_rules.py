"""How a tree ensemble's per-target scores become its outputs, as onnxruntime's CPU kernels do it.

``ClassifierRules`` holds what a TreeEnsembleClassifier's attributes say about labels, base values
and the post-transform; ``finish`` turns summed class weights (and which classes any reached leaf
scored) into labels and scores, including onnxruntime's binary cases (one scored class, two labels).
``regressor_scores`` does the same for TreeEnsembleRegressor, ``ensemble_scores`` for TreeEnsemble.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onnxplug.ml.forest import Forest, classifier_forest, tensor_or_list
from onnxplug.ml.scores import class_labels, logistic, post_transform, text_attr, transform_scores

AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


@dataclass
class ClassifierRules:
    """A TreeEnsembleClassifier's labels, base values and post-transform."""

    labels: np.ndarray  # int64, or object (strings)
    strings: bool
    base: np.ndarray  # float64, possibly empty
    binary: bool  # two labels and a single scored class id
    all_positive: bool  # every class weight >= 0
    post: str

    @classmethod
    def parse(cls, kernel) -> tuple[ClassifierRules, Forest]:
        """The rules and the Forest of a TreeEnsembleClassifier kernel's node."""
        labels, strings = class_labels(kernel)
        ids = np.asarray(kernel.attr("class_ids"), dtype=np.int64)
        weights = tensor_or_list(kernel, "class_weights") or []
        rules = cls(labels, strings, np.asarray(tensor_or_list(kernel, "base_values") or [], dtype=np.float64),
                    len(labels) == 2 and np.unique(ids).size == 1, bool((np.asarray(weights) >= 0).all()),
                    text_attr(kernel.attr("post_transform"), "NONE"))
        return rules, classifier_forest(kernel, len(labels))

    @property
    def multiclass(self) -> bool:
        return len(self.labels) > 2

    def finish(self, s: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels and float32 scores from summed weights ``s`` [N, classes] and ``has``."""
        if self.multiclass:
            base = np.zeros(s.shape[1])
            base[:self.base.size] = self.base[:s.shape[1]]
            s = s + base
            has = has.copy()
            has[:, :self.base.size] = True
            best = np.argmax(np.where(has, s, -np.inf), axis=1)
            return self.labels[best], post_transform(s, self.post)
        return self._binary_case(s, has)

    def _binary_case(self, s: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """onnxruntime's two-class rules: base values, which score decides, and how Z is filled.

        Scores of classes no leaf scored are written as 0, as onnxruntime's ScoreValue does.
        """
        post = self.post
        h0, h1 = has[:, 0], has[:, 1]
        s0, s1 = s[:, 0], s[:, 1]
        extra = -1
        keep_two = h1
        if self.base.size == 2:  # with a class-1 score, base_values[0] is unused
            b0, b1 = self.base
            s0, s1 = np.where(h1, -(b1 + s0), s0 + b0), np.where(h1, b1 + s0, s1 + b1)
            keep_two = np.ones_like(h1)
        elif self.base.size == 1:
            s0 = s0 + self.base[0]
        else:
            extra = 3
        pos = np.where(h1, s1, np.where(h0, s0, 0.0))
        if self.binary:
            win = pos > 0.5 if self.all_positive else pos > 0
            extra = np.where(win, 0, 1) if self.all_positive else np.where(win, 2, 3)
            labels = self.labels[win.astype(np.int64)]
        else:
            win = pos > 0
            labels = self.labels[win.astype(np.int64)] if self.strings else win.astype(np.int64)
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


def regressor_base(kernel) -> np.ndarray:
    """A TreeEnsembleRegressor's base_values (float64, possibly empty)."""
    return np.asarray(tensor_or_list(kernel, "base_values") or [], dtype=np.float64)


def regressor_scores(scores: np.ndarray, has: np.ndarray, base: np.ndarray, post: str) -> np.ndarray:
    """A TreeEnsembleRegressor's float32 output from aggregated ``scores`` [N, targets] and ``has``."""
    if scores.shape[1] == 1:
        scores = scores + (base[0] if base.size == 1 else 0.0)
    else:  # as onnxruntime: a target no leaf scored stays 0, base value included
        scores = np.where(has, scores + (base if base.size == scores.shape[1] else 0.0), 0.0)
    return transform_scores(scores.astype(np.float32), post)


def ensemble_scores(scores: np.ndarray, post: str, dtype: np.dtype) -> np.ndarray:
    """A TreeEnsemble's (opset 5) output, in the input's type."""
    return np.asarray(transform_scores(scores, post) if post != "NONE" else scores, dtype=dtype)
