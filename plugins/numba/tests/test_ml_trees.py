"""Tree ensembles on the numba provider against onnxruntime: converted scikit-learn, LightGBM and
XGBoost models, and hand-made nodes for every split mode, NaN with and without missing-value
tracks, each aggregate function and post-transform, base values and the binary cases."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxplug as ort
import pytest
from numba_test_helpers import assert_node_on_numba_matches, run_numba, run_onnxruntime
from onnx import TensorProto as T
from onnx import helper

RNG = np.random.default_rng(5)
MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")


def ml_model(op: str, x_type: int, outputs: list, ml_opset: int = 3, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], [o[0] for o in outputs], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, [None, 5])],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", ml_opset)], ir_version=8)


def random_trees(n_trees: int, depth: int, leaf, modes=("BRANCH_LEQ",)):
    """Node lists of random trees over 5 features; ``leaf()`` gives [(target, weight), ...] per leaf.
    Thresholds are drawn from the feature values so that EQ / NEQ splits are taken both ways."""
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                         "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true")}
    leaves = {"treeids": [], "nodeids": [], "ids": [], "weights": []}
    for t in range(n_trees):
        counter = [0]

        def grow(d: int) -> int:
            me = counter[0]
            counter[0] += 1
            i = len(a["nodes_modes"])
            for k, v in (("nodes_treeids", t), ("nodes_nodeids", me), ("nodes_truenodeids", 0),
                         ("nodes_falsenodeids", 0), ("nodes_missing_value_tracks_true", int(RNG.integers(2)))):
                a[k].append(v)
            if d == 0 or RNG.random() < 0.1:
                a["nodes_featureids"].append(0)
                a["nodes_values"].append(0.0)
                a["nodes_modes"].append("LEAF")
                for target, w in leaf():
                    for k, v in (("treeids", t), ("nodeids", me), ("ids", target), ("weights", w)):
                        leaves[k].append(v)
                return me
            a["nodes_featureids"].append(int(RNG.integers(5)))
            a["nodes_values"].append(float(GRID[int(RNG.integers(GRID.size))]))
            a["nodes_modes"].append(str(RNG.choice(modes)))
            a["nodes_truenodeids"][i] = grow(d - 1)
            a["nodes_falsenodeids"][i] = grow(d - 1)
            return me

        grow(depth)
    return a, leaves


GRID = np.float32([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0])
X = RNG.choice(GRID, (40, 5)).astype(np.float32) + RNG.choice([0, 0.1], (40, 5)).astype(np.float32)
X[3, 1] = X[7, 3] = X[11, 0] = X[20, 2] = np.nan


def f32(v) -> float:
    return float(np.float32(v))


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("targets,post", [(1, "NONE"), (3, "NONE"), (3, "SOFTMAX"), (1, "PROBIT")])
def test_regressor_modes_nan_aggregates(aggregate, targets, post):
    a, leaves = random_trees(7, 5, lambda: [(int(RNG.integers(targets)), f32(RNG.standard_normal()))], MODES)
    base = [0.5] * targets if post != "PROBIT" else []
    model = ml_model("TreeEnsembleRegressor", T.FLOAT, [("y", T.FLOAT, [None, targets])], n_targets=targets,
                     aggregate_function=aggregate, post_transform=post, target_treeids=leaves["treeids"],
                     target_nodeids=leaves["nodeids"], target_ids=leaves["ids"], target_weights=leaves["weights"],
                     **({"base_values": base} if base else {}), **a)
    x = np.clip(X, -0.9, 0.9) * 0.5 + 0.5 if post == "PROBIT" else X
    assert_node_on_numba_matches(model, {"x": x}, "TreeEnsembleRegressor")


def test_regressor_as_tensor_double():
    """ml opset 3: thresholds and weights as double tensors, a float64 input."""
    a, leaves = random_trees(4, 4, lambda: [(0, float(RNG.standard_normal()))], MODES)
    values = a.pop("nodes_values")
    model = ml_model("TreeEnsembleRegressor", T.DOUBLE, [("y", T.FLOAT, [None, 1])], n_targets=1,
                     nodes_values_as_tensor=helper.make_tensor("v", T.DOUBLE, [len(values)], values),
                     target_weights_as_tensor=helper.make_tensor("w", T.DOUBLE, [len(leaves["weights"])],
                                                                 leaves["weights"]),
                     base_values_as_tensor=helper.make_tensor("b", T.DOUBLE, [1], [0.25]),
                     target_treeids=leaves["treeids"], target_nodeids=leaves["nodeids"], target_ids=leaves["ids"],
                     **a)
    assert_node_on_numba_matches(model, {"x": X.astype(np.float64)}, "TreeEnsembleRegressor")


@pytest.mark.parametrize("labels,single_class", [([3, 5, 7, 9], False), ([0, 1], False), ([0, 1], True)])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("base", [False, True])
def test_classifier_rules(labels, single_class, post, base):
    n = len(labels)

    def leaf():
        if single_class:
            return [(0, f32(RNG.standard_normal()))]
        return [(c, f32(RNG.random())) for c in range(n) if RNG.random() < 0.6]

    a, leaves = random_trees(6, 4, leaf, MODES)
    extra = {"base_values": [0.25 * (i + 1) for i in range(n)]} if base else {}
    model = ml_model("TreeEnsembleClassifier", T.FLOAT, [("l", T.INT64, [None]), ("z", T.FLOAT, [None, n])],
                     classlabels_int64s=labels, post_transform=post, class_treeids=leaves["treeids"],
                     class_nodeids=leaves["nodeids"], class_ids=leaves["ids"], class_weights=leaves["weights"],
                     **extra, **a)
    assert_node_on_numba_matches(model, {"x": X}, "TreeEnsembleClassifier")


def test_classifier_string_labels_and_a_large_batch_on_two_threads():
    a, leaves = random_trees(30, 6, lambda: [(c, f32(RNG.random())) for c in range(3)], MODES)
    model = ml_model("TreeEnsembleClassifier", T.FLOAT, [("l", T.STRING, [None]), ("z", T.FLOAT, [None, 3])],
                     classlabels_strings=["a", "b", "c"], post_transform="SOFTMAX", class_treeids=leaves["treeids"],
                     class_nodeids=leaves["nodeids"], class_ids=leaves["ids"], class_weights=leaves["weights"], **a)
    big = np.repeat(X, 100, axis=0) + RNG.choice([0, 0.1], (4000, 5)).astype(np.float32)
    assert_node_on_numba_matches(model, {"x": big}, "TreeEnsembleClassifier", threads=2)


def test_tree_ensemble_opset5_members_and_leaves():
    """TreeEnsemble (ai.onnx.ml 5): separate leaf lists, a set-membership split, a single-leaf tree."""
    splits = [0.5, 0.0, 1.0]
    model_attrs = dict(
        n_targets=2, aggregate_function=1, post_transform=0, tree_roots=[0, 2],
        nodes_featureids=[0, 1, 2], nodes_splits=helper.make_tensor("s", T.FLOAT, [3], splits),
        nodes_modes=helper.make_tensor("m", T.UINT8, [3], [0, 6, 0]),
        nodes_truenodeids=[1, 0, 4], nodes_trueleafs=[0, 1, 1], nodes_falsenodeids=[2, 1, 4],
        nodes_falseleafs=[1, 1, 1], nodes_missing_value_tracks_true=[1, 0, 0],
        membership_values=helper.make_tensor("mv", T.FLOAT, [3], [-1.0, 0.0, np.nan]),
        leaf_targetids=[0, 1, 0, 1, 0], leaf_weights=helper.make_tensor("w", T.FLOAT, [5], [1, 2, 3, 4, 5]))
    model = ml_model("TreeEnsemble", T.FLOAT, [("y", T.FLOAT, [None, 2])], ml_opset=5, **model_attrs)
    # exact members and values well away from them (onnxruntime's answers for values between
    # members differ from the specification's exact test, and from set to set)
    member = [-1.0, 0.0, -2.0, 1.0, 3.0, -7.0, 1e10, np.nan, np.inf]
    x = np.float32([[0.2, v, 0] for v in member] + [[0.9, 0, 0], [np.nan, 0, 0], [np.nan, 1, 0]])
    assert_node_on_numba_matches(model, {"x": np.pad(x, ((0, 0), (0, 2)))}, "TreeEnsemble")


def test_integer_input_is_declined_with_a_reason():
    """An int64 X stays on the numpy provider (onnxruntime has no int64 kernel to compare with: the
    same trees on X as float32 are the reference)."""
    a, leaves = random_trees(3, 3, lambda: [(0, f32(RNG.standard_normal()))])
    attrs = dict(n_targets=1, target_treeids=leaves["treeids"], target_nodeids=leaves["nodeids"],
                 target_ids=leaves["ids"], target_weights=leaves["weights"], **a)
    model = ml_model("TreeEnsembleRegressor", T.INT64, [("y", T.FLOAT, [None, 1])], ml_opset=1, **attrs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = ort.InferenceSession(model.SerializeToString(), providers=["numba"])
    record = session.get_node_assignments()[0]
    assert record.provider == "numpy"
    assert any(d.kind == "dtype" and "int64" in d.reason for d in record.declined), record.declined
    x = np.round(np.nan_to_num(X) * 4).astype(np.int64)
    as_float = ml_model("TreeEnsembleRegressor", T.FLOAT, [("y", T.FLOAT, [None, 1])], ml_opset=1, **attrs)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], run_onnxruntime(as_float, {"x": x.astype(np.float32)})[0],
                               rtol=1e-6)


# --- converted models ----------------------------------------------------------------------------

def _data(classes: int = 3):
    from sklearn.datasets import make_classification

    x, y = make_classification(300, 8, n_informative=5, n_classes=classes, random_state=0)
    return x.astype(np.float32), y


def _sklearn(model, x) -> onnx.ModelProto:
    from skl2onnx import to_onnx
    from skl2onnx.common import tree_ensemble

    original = tree_ensemble.add_node

    def add_node(*args, **kwargs):  # skl2onnx gives HistGradientBoosting's leaves a bool, onnx wants an int
        if "nodes_missing_value_tracks_true" in kwargs:
            kwargs["nodes_missing_value_tracks_true"] = int(kwargs["nodes_missing_value_tracks_true"])
        return original(*args, **kwargs)

    tree_ensemble.add_node = add_node
    try:
        return to_onnx(model, x[:1], options={"zipmap": False} if hasattr(model, "classes_") else None,
                       target_opset={"": 17, "ai.onnx.ml": 3})
    finally:
        tree_ensemble.add_node = original


@pytest.mark.parametrize("kind", ["forest", "gbm", "hist"])
@pytest.mark.parametrize("classes", [2, 3])
def test_sklearn_classifiers(kind, classes):
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )

    x, y = _data(classes)
    est = {"forest": RandomForestClassifier(20, max_depth=6, random_state=0),
           "gbm": GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0),
           "hist": HistGradientBoostingClassifier(max_iter=15, random_state=0)}[kind].fit(x, y)
    xt = x[:60].copy()
    xt[::7, 2] = np.nan if kind == "hist" else xt[::7, 2]
    assert_node_on_numba_matches(_sklearn(est, x), {"X": xt}, "TreeEnsembleClassifier")


@pytest.mark.parametrize("kind", ["forest", "gbm"])
def test_sklearn_regressors(kind):
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    x, y = _data()
    target = x[:, 0] * 2 + y
    est = (RandomForestRegressor(15, max_depth=6, random_state=0) if kind == "forest"
           else GradientBoostingRegressor(n_estimators=20, random_state=0)).fit(x, target)
    assert_node_on_numba_matches(_sklearn(est, x), {"X": x[:60]}, "TreeEnsembleRegressor")


def test_lightgbm_and_xgboost_classifiers():
    pytest.importorskip("onnxmltools")
    import lightgbm
    import xgboost
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    x, y = _data()
    kinds = [(lightgbm.LGBMClassifier(n_estimators=10, verbose=-1).fit(x, y), convert_lightgbm, {"zipmap": False}),
             (xgboost.XGBClassifier(n_estimators=10, max_depth=4).fit(x, y), convert_xgboost, {})]
    for est, convert, extra in kinds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = convert(est, initial_types=[("X", FloatTensorType([None, 8]))], target_opset=15, **extra)
        xt = x[:50].copy()
        xt[::5, 1] = np.nan
        assert_node_on_numba_matches(model, {"X": xt}, "TreeEnsembleClassifier")


def test_a_tree_with_a_cycle_is_an_error_not_a_hang():
    attrs = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 1, 2],
                 nodes_values=[0.0, 0.0, 0.0], nodes_modes=["BRANCH_LEQ"] * 3, nodes_truenodeids=[1, 2, 1],
                 nodes_falsenodeids=[2, 2, 1], target_treeids=[0], target_nodeids=[2], target_ids=[0],
                 target_weights=[1.0], n_targets=1)
    model = ml_model("TreeEnsembleRegressor", T.FLOAT, [("y", T.FLOAT, [None, 1])], **attrs)
    with pytest.raises(Exception, match="cycle"):
        run_numba(model, {"x": X[:5]}, fallback=True)
