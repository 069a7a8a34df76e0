"""LinearClassifier and LinearRegressor attributes as float32 arrays, and onnxruntime's rules for
their labels and scores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onnxplug.ml.scores import class_labels, post_transform, text_attr, transform_scores


@dataclass
class LinearModel:
    """Scores X @ coef + bias; ``coef`` is [features, score columns] (float32)."""

    coef: np.ndarray
    bias: np.ndarray
    post: str
    labels: np.ndarray | None = None  # classifiers only
    two_labels: bool = False  # a classifier given exactly two labels

    @classmethod
    def classifier(cls, kernel) -> LinearModel:
        """A LinearClassifier: with one score column and no two labels, the labels are 0/1 ("0"/"1")."""
        labels, strings = class_labels(kernel)
        given = len(kernel.attr("classlabels_strings") or kernel.attr("classlabels_ints") or [])
        bias = np.asarray(kernel.attr("intercepts") or [], dtype=np.float32)
        coef = np.asarray(kernel.attr("coefficients"), dtype=np.float32).reshape(max(bias.size, 1), -1).T
        if coef.shape[1] == 1 and len(labels) != 2:
            labels = np.array(["0", "1"] if strings else [0, 1], dtype=labels.dtype)
        return cls(np.ascontiguousarray(coef), bias if bias.size else np.zeros(coef.shape[1], np.float32),
                   text_attr(kernel.attr("post_transform"), "NONE"), labels, given == 2)

    @classmethod
    def regressor(cls, kernel) -> LinearModel:
        targets = kernel.attr("targets", 1)
        coef = np.asarray(kernel.attr("coefficients"), dtype=np.float32).reshape(targets, -1).T
        return cls(np.ascontiguousarray(coef), np.asarray(kernel.attr("intercepts") or [0.0] * targets, dtype=np.float32),
                   text_attr(kernel.attr("post_transform"), "NONE"))

    @property
    def binary(self) -> bool:
        return self.coef.shape[1] == 1

    def classify(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels and scores from float32 ``scores``: with one score column, s > 0 picks labels[1] and
        Z is [1 - p, p] (two labels given) or p, p being s after a LOGISTIC or PROBIT transform."""
        if self.binary:
            labels = self.labels[(scores[:, 0] > 0).astype(np.int64)]
            p = post_transform(scores, self.post) if self.post in ("LOGISTIC", "PROBIT") else scores
            return labels, (np.concatenate([1 - p, p], axis=1) if self.two_labels else p)
        return self.labels[np.argmax(scores, axis=1)], transform_scores(scores, self.post)
