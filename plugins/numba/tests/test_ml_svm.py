"""SVMClassifier and SVMRegressor on the numba provider against onnxruntime: scikit-learn SVC/SVR
with every kernel, with and without probabilities, two and more classes, and hand-made nodes for
post-transforms, one-class regressors and linear (support-vector-free) models."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numba_test_helpers import assert_node_on_numba_matches, run_numba, run_onnxruntime
from onnx import TensorProto as T
from onnx import helper

RNG = np.random.default_rng(9)
KERNELS = ["linear", "poly", "rbf", "sigmoid"]
#: Scores are sums over a hundred or more support vectors: onnxruntime's float32 sums are up to 4e-5
#: from the exact (float64) value on these models, the compiled kernel's float64 sums are closer.
SUM_ATOL = 1e-4


def _data(classes: int):
    from sklearn.datasets import make_classification

    x, y = make_classification(200, 6, n_informative=4, n_classes=classes, random_state=1)
    return x.astype(np.float32), y


def _convert(est, x) -> onnx.ModelProto:
    from skl2onnx import to_onnx

    options = {"zipmap": False} if hasattr(est, "classes_") else None
    return to_onnx(est, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("classes", [2, 4])
@pytest.mark.parametrize("probability", [False, True])
def test_sklearn_svc(kernel, classes, probability):
    from sklearn.svm import SVC

    x, y = _data(classes)
    est = SVC(kernel=kernel, degree=2, gamma="scale", coef0=0.5 if kernel in ("poly", "sigmoid") else 0.0,
              probability=probability, random_state=0).fit(x, y)
    assert_node_on_numba_matches(_convert(est, x), {"X": x[:50]}, "SVMClassifier", atol=SUM_ATOL)


def test_sklearn_svc_large_batch_on_two_threads():
    from sklearn.svm import SVC

    x, y = _data(3)
    est = SVC(probability=True, random_state=0).fit(x, y)
    big = np.repeat(x, 20, axis=0) + RNG.standard_normal((4000, 6)).astype(np.float32) * 0.1
    assert_node_on_numba_matches(_convert(est, x), {"X": big}, "SVMClassifier", threads=2, atol=SUM_ATOL)


@pytest.mark.parametrize("kernel", KERNELS)
def test_sklearn_svr(kernel):
    from sklearn.svm import SVR

    x, y = _data(3)
    est = SVR(kernel=kernel, degree=2, coef0=0.5 if kernel in ("poly", "sigmoid") else 0.0).fit(x, y + x[:, 0])
    assert_node_on_numba_matches(_convert(est, x), {"X": x[:50]}, "SVMRegressor", atol=SUM_ATOL)


def _node(op: str, outputs: list, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], [o[0] for o in outputs], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", T.FLOAT, [None, 5])],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
                             ir_version=8)


X = RNG.standard_normal((30, 5)).astype(np.float32)


@pytest.mark.parametrize("classes,per_class", [(3, [2, 1, 2]), (2, [3, 2])])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "PROBIT"])
@pytest.mark.parametrize("proba", [False, True])
def test_classifier_post_transforms(classes, per_class, post, proba):
    pairs = classes * (classes - 1) // 2
    extra = dict(prob_a=RNG.standard_normal(pairs).tolist(), prob_b=RNG.standard_normal(pairs).tolist()) if proba else {}
    model = _node("SVMClassifier", [("y", T.INT64, [None]), ("z", T.FLOAT, [None, None])], kernel_type="RBF",
                  kernel_params=[0.3, 0.0, 3.0], vectors_per_class=per_class,
                  support_vectors=RNG.standard_normal((sum(per_class), 5)).ravel().tolist(),
                  coefficients=RNG.standard_normal((classes - 1) * sum(per_class)).tolist(),
                  rho=RNG.standard_normal(pairs).tolist(), classlabels_ints=list(range(classes)),
                  post_transform=post, **extra)
    x = X if post != "PROBIT" else np.clip(X, -3, 3) * 0.02
    if classes == 2 and post == "PROBIT" and not proba:
        # one pairwise score: onnxruntime writes probit(score) to column 0 and leaves column 1 unwritten
        (labels, z), _ = run_numba(model, {"x": x}, fallback=True)
        want_labels, want_z = run_onnxruntime(model, {"x": x})
        np.testing.assert_array_equal(labels, want_labels)
        assert z.shape == want_z.shape
        np.testing.assert_allclose(z[:, 0], want_z[:, 0], rtol=1e-5, atol=1e-5)
        return
    assert_node_on_numba_matches(model, {"x": x}, "SVMClassifier")


def test_linear_classifier_mode_and_string_labels():
    model = _node("SVMClassifier", [("y", T.STRING, [None]), ("z", T.FLOAT, [None, 3])], kernel_type="LINEAR",
                  kernel_params=[0.1, 0.0, 1.0],
                  coefficients=RNG.standard_normal(15).tolist(), rho=[0.1], classlabels_strings=["a", "b", "c"])
    assert_node_on_numba_matches(model, {"x": X}, "SVMClassifier")


@pytest.mark.parametrize("one_class", [0, 1])
@pytest.mark.parametrize("vectors", [0, 4])
def test_regressor_one_class_and_linear(one_class, vectors):
    attrs = dict(kernel_type="POLY", kernel_params=[0.5, 1.0, 2.0], n_supports=vectors,
                 support_vectors=RNG.standard_normal((vectors, 5)).ravel().tolist()) if vectors else \
        dict(kernel_type="LINEAR", kernel_params=[0.1, 0.0, 1.0])
    model = _node("SVMRegressor", [("y", T.FLOAT, [None, 1])], coefficients=RNG.standard_normal(vectors or 5).tolist(),
                  rho=[0.2], one_class=one_class, **attrs)
    assert_node_on_numba_matches(model, {"x": X}, "SVMRegressor")
