"""The ai.onnx.ml operators' attribute parsing and output rules, shared with the core's kernels.

Parse a node once (``classifier_forest``, ``ClassifierRules.parse``, ``svm_model``...) and compute
with the arrays; what is left (labels, post-transforms, onnxruntime's binary cases) is the same
numpy code the numpy provider runs, so providers agree on every attribute rule.
"""

from __future__ import annotations

from onnxplug.ml import ML
from onnxplug.ml.forest import LEAF, MEMBER, MODE_NAMES, Forest, classifier_forest, ensemble_forest, \
    regressor_forest, tensor_or_list
from onnxplug.ml.linear import LinearModel
from onnxplug.ml.scores import as_rows, class_labels, float_rows, logistic, post_transform, text_attr, \
    transform_scores
from onnxplug.ml.svm import SvmClassifierModel, SvmRegressorModel, multiclass_probability, svm_kernel
from onnxplug.ml.tree_rules import AGGREGATES, POST_TRANSFORMS, ClassifierRules, ensemble_scores, regressor_base, \
    regressor_scores

__all__ = ["AGGREGATES", "LEAF", "MEMBER", "ML", "MODE_NAMES", "POST_TRANSFORMS", "ClassifierRules", "Forest",
           "as_rows", "class_labels", "classifier_forest", "ensemble_forest", "ensemble_scores", "float_rows",
           "logistic", "multiclass_probability", "post_transform", "regressor_base", "regressor_forest",
           "regressor_scores", "svm_kernel", "tensor_or_list", "text_attr", "transform_scores",
           "LinearModel", "SvmClassifierModel", "SvmRegressorModel"]
