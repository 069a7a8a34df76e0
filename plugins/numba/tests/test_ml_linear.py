"""LinearClassifier, LinearRegressor, Normalizer and Scaler on the numba provider against
onnxruntime: converted scikit-learn models and hand-made nodes for each post-transform, norm and
the one-score-column binary case."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numba_test_helpers import assert_node_on_numba_matches
from onnx import TensorProto as T
from onnx import helper

RNG = np.random.default_rng(3)
X = RNG.standard_normal((25, 5)).astype(np.float32)


def _node(op: str, outputs: list, x_type: int = T.FLOAT, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], [o[0] for o in outputs], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, [None, 5])],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
                             ir_version=8)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
@pytest.mark.parametrize("classes", [1, 2, 4])
def test_linear_classifier(post, classes):
    """classes=1: one score column with two labels ([1 - p, p])."""
    if classes == 1 and post == "PROBIT":
        pytest.skip("onnxruntime writes one probit per row into the [N, 2] output and leaves the rest unwritten")
    labels = [0, 1] if classes == 1 else list(range(10, 10 + classes))
    model = _node("LinearClassifier", [("l", T.INT64, [None]), ("z", T.FLOAT, [None, None])],
                  coefficients=RNG.standard_normal(classes * 5).tolist(), intercepts=RNG.uniform(0.2, 0.8, classes).tolist(),
                  classlabels_ints=labels, post_transform=post)
    x = X if post != "PROBIT" else X * 0.01  # probit needs scores in (0, 1)
    assert_node_on_numba_matches(model, {"x": x}, "LinearClassifier")


def test_linear_classifier_wide_batch_and_string_labels():
    """A product large enough for BLAS, string labels, float64 input."""
    wide = RNG.standard_normal((300, 5))
    model = _node("LinearClassifier", [("l", T.STRING, [None]), ("z", T.FLOAT, [None, 3])], x_type=T.DOUBLE,
                  coefficients=RNG.standard_normal(15).tolist(), intercepts=[0.1, 0.2, 0.3],
                  classlabels_strings=["a", "b", "c"], post_transform="SOFTMAX")
    assert_node_on_numba_matches(model, {"x": wide}, "LinearClassifier")
    assert_node_on_numba_matches(model, {"x": np.repeat(wide, 60, axis=0)}, "LinearClassifier")


@pytest.mark.parametrize("targets,post", [(1, "NONE"), (3, "NONE"), (3, "SOFTMAX")])
def test_linear_regressor(targets, post):
    model = _node("LinearRegressor", [("y", T.FLOAT, [None, targets])], targets=targets, post_transform=post,
                  coefficients=RNG.standard_normal(targets * 5).tolist(), intercepts=RNG.standard_normal(targets).tolist())
    assert_node_on_numba_matches(model, {"x": X}, "LinearRegressor")


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalizer(norm, dtype):
    x = X.astype(dtype)
    x[3] = 0  # a zero row passes through
    x[4] = -np.abs(x[4])  # MAX divides by the largest value, here negative
    model = _node("Normalizer", [("y", T.FLOAT, [None, 5])], x_type=T.FLOAT if dtype == np.float32 else T.DOUBLE,
                  norm=norm)
    assert_node_on_numba_matches(model, {"x": x}, "Normalizer")


@pytest.mark.parametrize("offset,scale", [([0.5], [2.0]), ([0.1, 0.2, 0.3, 0.4, 0.5], [1.0, 2.0, 3.0, 4.0, 5.0])])
def test_scaler(offset, scale):
    assert_node_on_numba_matches(_node("Scaler", [("y", T.FLOAT, [None, 5])], offset=offset, scale=scale), {"x": X}, "Scaler")


@pytest.mark.parametrize("kind", ["logreg-binary", "logreg-multi", "linear-svc", "linear-regression"])
def test_sklearn_linear_models(kind):
    from skl2onnx import to_onnx
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.svm import LinearSVC

    x, y = make_classification(200, 5, n_informative=4, n_redundant=0, n_classes=2 if kind == "logreg-binary" else 3,
                               random_state=2)
    x = x.astype(np.float32)
    est = {"logreg-binary": LogisticRegression(), "logreg-multi": LogisticRegression(), "linear-svc": LinearSVC(),
           # (fitted in float64: some OpenBLAS builds answer scipy's float32 workspace query wrongly)
           "linear-regression": LinearRegression()}[kind].fit(x.astype(np.float64), y)
    options = {"zipmap": False} if hasattr(est, "classes_") and kind != "linear-svc" else None
    model = to_onnx(est, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 1})
    op = "LinearRegressor" if kind == "linear-regression" else "LinearClassifier"
    assert_node_on_numba_matches(model, {"X": x[:60]}, op)


@pytest.mark.parametrize("op", ["LinearClassifier", "Normalizer", "Scaler"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_inputs(op, dtype):
    """Integer X is read as float32, as onnxruntime reads it (which has no integer LinearRegressor)."""
    attrs = {"LinearClassifier": dict(coefficients=RNG.standard_normal(15).tolist(), intercepts=[0.1, 0.2, 0.3],
                                      classlabels_ints=[1, 2, 3], post_transform="SOFTMAX"),
             "Normalizer": dict(norm="L2"), "Scaler": dict(offset=[1.0], scale=[0.5])}[op]
    outputs = {"LinearClassifier": [("l", T.INT64, [None]), ("z", T.FLOAT, [None, 3])]}.get(op, [("y", T.FLOAT, [None, 5])])
    model = _node(op, outputs, x_type=T.INT32 if dtype == np.int32 else T.INT64, **attrs)
    assert_node_on_numba_matches(model, {"x": (X * 10).astype(dtype)}, op)


@pytest.mark.parametrize("kind", ["strings", "int64", "float32", "float64"])
@pytest.mark.parametrize("shape", [(7,), (4, 3)])
def test_one_hot_encoder(kind, shape):
    """Known and unknown values, 1-D and 2-D input (an output axis more)."""
    rng = np.random.default_rng(4)
    if kind == "strings":
        x = np.array(["red", "blue", "green", "pink"], dtype=object)[rng.integers(0, 4, shape)]
        attrs, elem = dict(cats_strings=["blue", "green", "red"]), T.STRING
    else:
        dtype = {"int64": np.int64, "float32": np.float32, "float64": np.float64}[kind]
        x = rng.integers(-2, 6, shape).astype(dtype)
        attrs = dict(cats_int64s=[4, 0, 2, -1])
        elem = {np.int64: T.INT64, np.float32: T.FLOAT, np.float64: T.DOUBLE}[dtype]
    node = helper.make_node("OneHotEncoder", ["x"], ["y"], domain="ai.onnx.ml", zeros=1, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(shape))],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
                              ir_version=8)
    assert_node_on_numba_matches(model, {"x": x}, "OneHotEncoder")


def test_one_hot_encoder_zeros_0_refuses_an_unknown_value():
    from numba_test_helpers import run_numba

    node = helper.make_node("OneHotEncoder", ["x"], ["y"], domain="ai.onnx.ml", zeros=0, cats_int64s=[1, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", T.INT64, [3])],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
                              ir_version=8)
    assert run_numba(model, {"x": np.array([1, 2, 1])}, fallback=True)[0][0].shape == (3, 2)
    with pytest.raises(Exception, match="7"):
        run_numba(model, {"x": np.array([1, 7, 2])}, fallback=True)
