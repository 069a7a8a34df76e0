"""The ai.onnx.ml operators' data and rules, shared by every provider's kernels for them.

``scores``: 2-D views of inputs, class labels and onnxruntime's score post-transforms.
``forest``: tree ensembles parsed into flat node arrays (and a vectorised numpy walker).
``forest_walk``: a Forest walker for few samples (every split at once, one gather per level).
``tree_rules``: how summed leaf weights become a classifier's labels and scores, or a regressor's.
``svm``: SVM attributes, kernels and libsvm's pairwise-coupling probabilities.
``linear``: LinearClassifier / LinearRegressor coefficients and label rules.

A provider parses a node's attributes here once, at session creation, and computes with the
arrays; the numpy provider's kernels and compiled ones thus agree on every attribute rule.
"""

ML = "ai.onnx.ml"
