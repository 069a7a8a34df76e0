"""ai.onnx.ml kernels of the numpy provider against onnxruntime (the runtime ml converters target)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper

import onnxplug
from tests.numpy_provider.single_node_oracle import assert_same, kernels_only

RNG = np.random.default_rng(11)
X = RNG.standard_normal((20, 5)).astype(np.float32)


def ml_model(op, inputs, outputs, ml_opset=3, **attrs):
    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _, _ in outputs], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", ml_opset)], ir_version=8)


def compare(model, feeds, rtol=1e-5, atol=1e-5):
    ours = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"]).run(None, feeds)
    expected = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for i, (a, e) in enumerate(zip(ours, expected)):
        assert_same(a, e, rtol, atol, f"{model.graph.node[0].op_type} output {i}")
    return ours


def f32(name, shape=(20, 5)):
    return (name, T.FLOAT, list(shape))


# --- preprocessing ops ----------------------------------------------------------------------------

def test_binarizer_scaler_imputer():
    compare(ml_model("Binarizer", [f32("x")], [f32("y")], threshold=0.3), {"x": X})
    compare(ml_model("Scaler", [f32("x")], [f32("y")], offset=[0.1] * 5, scale=[1, 2, 3, 4, 5.0]), {"x": X})
    x = X.copy()
    x[::3, 1] = np.nan
    compare(ml_model("Imputer", [f32("x")], [f32("y")], imputed_value_floats=[9.0] * 5,
                     replaced_value_float=float("nan")), {"x": x})
    xi = (X * 3).astype(np.int64)
    compare(ml_model("Imputer", [("x", T.INT64, [20, 5])], [("y", T.INT64, [20, 5])], imputed_value_int64s=[-7],
                     replaced_value_int64=0), {"x": xi})


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer(norm):
    x = X.copy()
    x[0] = 0
    compare(ml_model("Normalizer", [f32("x")], [f32("y")], norm=norm), {"x": x})


def test_array_feature_extractor_and_feature_vectorizer():
    compare(ml_model("ArrayFeatureExtractor", [f32("x"), ("i", T.INT64, [3])], [("y", T.FLOAT, [20, 3])]),
            {"x": X, "i": np.array([4, 0, 4], np.int64)})
    compare(ml_model("ArrayFeatureExtractor", [f32("x", [5]), ("i", T.INT64, [2])], [("y", T.FLOAT, [1, 2])]),
            {"x": X[0], "i": np.array([1, 3], np.int64)})
    compare(ml_model("FeatureVectorizer", [f32("a"), f32("b", [20, 2])], [("y", T.FLOAT, [20, 7])],
                     inputdimensions=[4, 3]), {"a": X, "b": X[:, :2]})


@pytest.mark.parametrize("zeros", [1, 0])
def test_one_hot_encoder(zeros):
    x = np.array([["a", "b"], ["c", "a"]], dtype=object) if zeros else np.array([["a", "b"]], dtype=object)
    compare(ml_model("OneHotEncoder", [("x", T.STRING, list(x.shape))], [("y", T.FLOAT, [*x.shape, 2])],
                     cats_strings=["a", "b"], zeros=zeros), {"x": x})
    compare(ml_model("OneHotEncoder", [("x", T.INT64, [4])], [("y", T.FLOAT, [4, 3])], cats_int64s=[1, 5, 9]),
            {"x": np.array([5, 1, 2, 9], np.int64)})


def test_one_hot_encoder_unknown_category_with_zeros_0_names_the_node():
    model = ml_model("OneHotEncoder", [("x", T.STRING, [2])], [("y", T.FLOAT, [2, 1])], cats_strings=["a"], zeros=0)
    session = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"])
    with pytest.raises(onnxplug.errors.KernelError, match="OneHotEncoder.*'z' is not a category"):
        session.run(None, {"x": np.array(["a", "z"], dtype=object)})


def test_label_encoder_and_category_mapper():
    strings = np.array(["a", "b", "zz", "a"], dtype=object)
    ints = np.array([[1, 2], [7, 1]], np.int64)
    compare(ml_model("LabelEncoder", [("x", T.STRING, [4])], [("y", T.INT64, [4])], ml_opset=2,
                     keys_strings=["a", "b"], values_int64s=[10, 20], default_int64=-9), {"x": strings})
    compare(ml_model("LabelEncoder", [("x", T.INT64, [2, 2])], [("y", T.FLOAT, [2, 2])], ml_opset=2,
                     keys_int64s=[1, 2], values_floats=[0.5, 0.25]), {"x": ints})
    compare(ml_model("LabelEncoder", [("x", T.INT64, [2, 2])], [("y", T.STRING, [2, 2])], ml_opset=2,
                     keys_int64s=[1, 2], values_strings=["one", "two"]), {"x": ints})
    compare(ml_model("CategoryMapper", [("x", T.STRING, [4])], [("y", T.INT64, [4])], cats_strings=["a", "b"],
                     cats_int64s=[3, 4], default_int64=-1), {"x": strings})
    compare(ml_model("CategoryMapper", [("x", T.INT64, [2, 2])], [("y", T.STRING, [2, 2])], cats_strings=["a", "b"],
                     cats_int64s=[1, 2], default_string="?"), {"x": ints})


def test_zip_map_and_dict_vectorizer():
    model = ml_model("ZipMap", [f32("x", [3, 2])], [("y", T.FLOAT, [3, 2])], classlabels_int64s=[4, 8])
    seq_map = helper.make_sequence_type_proto(helper.make_map_type_proto(T.INT64, helper.make_tensor_type_proto(T.FLOAT, [])))
    model.graph.output[0].CopyFrom(helper.make_value_info("y", seq_map))
    ours = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"]).run(None, {"x": X[:3, :2]})
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": X[:3, :2]})
    assert [list(m.items()) for m in ours[0]] == [list(m.items()) for m in expected[0]]
    model = ml_model("DictVectorizer", [f32("x")], [("y", T.FLOAT, [1, 3])], string_vocabulary=["a", "b", "c"])
    model.graph.input[0].CopyFrom(helper.make_value_info("x", helper.make_map_type_proto(T.STRING, helper.make_tensor_type_proto(T.FLOAT, []))))
    compare(model, {"x": {"c": 2.5, "a": 1.0}})


# --- linear models and SVMs -----------------------------------------------------------------------

@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("classes", [3, 1])
def test_linear_classifier(post, classes):
    labels = dict(classlabels_strings=["x", "y", "z"]) if classes == 3 else dict(classlabels_ints=[4, 9])
    model = ml_model("LinearClassifier", [f32("x")], [("l", T.STRING if classes == 3 else T.INT64, [20]),
                                                        ("z", T.FLOAT, [20, max(classes, 2)])],
                     coefficients=RNG.standard_normal(5 * classes).tolist(), intercepts=[0.3] * classes,
                     post_transform=post, **labels)
    compare(model, {"x": X})


@pytest.mark.parametrize("targets,post", [(1, "NONE"), (3, "NONE"), (3, "SOFTMAX"), (3, "LOGISTIC")])
def test_linear_regressor(targets, post):
    compare(ml_model("LinearRegressor", [f32("x")], [("y", T.FLOAT, [20, targets])], targets=targets,
                     coefficients=RNG.standard_normal(5 * targets).tolist(), intercepts=[0.5] * targets,
                     post_transform=post), {"x": X})


SV = RNG.standard_normal((5, 5)).astype(np.float32)


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID"])
def test_svm_regressor(kernel):
    compare(ml_model("SVMRegressor", [f32("x")], [("y", T.FLOAT, [20, 1])], kernel_type=kernel,
                     kernel_params=[0.2, 0.5, 3.0], n_supports=5, support_vectors=SV.ravel().tolist(),
                     coefficients=RNG.standard_normal(5).tolist(), rho=[0.1]), {"x": X})


@pytest.mark.parametrize("classes,per_class", [(3, [2, 1, 2]), (2, [3, 2])])
@pytest.mark.parametrize("proba", [False, True])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
def test_svm_classifier(classes, per_class, proba, post):
    pairs = classes * (classes - 1) // 2
    extra = dict(prob_a=RNG.standard_normal(pairs).tolist(), prob_b=RNG.standard_normal(pairs).tolist()) if proba else {}
    model = ml_model("SVMClassifier", [f32("x")], [("y", T.INT64, [20]), ("z", T.FLOAT, [20, None])],
                     kernel_type="RBF", kernel_params=[0.3, 0.0, 3.0], vectors_per_class=per_class,
                     support_vectors=RNG.standard_normal((sum(per_class), 5)).ravel().tolist(),
                     coefficients=RNG.standard_normal((classes - 1) * sum(per_class)).tolist(),
                     rho=RNG.standard_normal(pairs).tolist(), classlabels_ints=list(range(classes)),
                     post_transform=post, **extra)
    compare(model, {"x": X}, rtol=1e-4, atol=1e-5)


# --- tree ensembles -------------------------------------------------------------------------------

def random_trees(n_trees, depth, leaf, modes=("BRANCH_LEQ",)):
    """Node lists of random trees; ``leaf()`` gives [(class/target id, weight), ...] per leaf."""
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                         "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true")}
    leaves = {"treeids": [], "nodeids": [], "ids": [], "weights": []}
    for t in range(n_trees):
        counter = [0]

        def grow(d):
            me = counter[0]
            counter[0] += 1
            i = len(a["nodes_modes"])
            for k, v in (("nodes_treeids", t), ("nodes_nodeids", me), ("nodes_missing_value_tracks_true", int(RNG.integers(2))),
                         ("nodes_truenodeids", 0), ("nodes_falsenodeids", 0)):
                a[k].append(v)
            if d == 0 or RNG.random() < 0.15:
                a["nodes_featureids"].append(0)
                a["nodes_values"].append(0.0)
                a["nodes_modes"].append("LEAF")
                for cid, w in leaf():
                    for k, v in (("treeids", t), ("nodeids", me), ("ids", cid), ("weights", w)):
                        leaves[k].append(v)
                return me
            a["nodes_featureids"].append(int(RNG.integers(5)))
            a["nodes_values"].append(float(np.float32(RNG.standard_normal())))
            a["nodes_modes"].append(str(RNG.choice(modes)))
            a["nodes_truenodeids"][i] = grow(d - 1)
            a["nodes_falsenodeids"][i] = grow(d - 1)
            return me

        grow(depth)
    return a, leaves


XN = X.copy()
XN[2, 1] = XN[5, 3] = np.nan


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("targets", [1, 3])
def test_tree_ensemble_regressor(aggregate, targets):
    modes = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
    a, leaves = random_trees(6, 4, lambda: [(int(RNG.integers(targets)), float(np.float32(RNG.standard_normal())))], modes)
    model = ml_model("TreeEnsembleRegressor", [f32("x")], [("y", T.FLOAT, [20, targets])], n_targets=targets,
                     aggregate_function=aggregate, base_values=[0.5] * targets, target_treeids=leaves["treeids"],
                     target_nodeids=leaves["nodeids"], target_ids=leaves["ids"], target_weights=leaves["weights"], **a)
    compare(model, {"x": XN})


@pytest.mark.parametrize("labels,single_class", [([3, 5, 7], False), ([0, 1], False), ([0, 1], True)])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
@pytest.mark.parametrize("base", [False, True])
def test_tree_ensemble_classifier(labels, single_class, post, base):
    """single_class: every leaf scores class 0 only, the binary case of GBM converters."""
    n = len(labels)

    def leaf():
        if single_class:
            return [(0, float(np.float32(RNG.standard_normal())))]
        return [(c, float(np.float32(RNG.random()))) for c in range(n) if RNG.random() < 0.7]

    a, leaves = random_trees(5, 3, leaf)
    extra = {"base_values": [0.25] * n} if base else {}
    model = ml_model("TreeEnsembleClassifier", [f32("x")], [("l", T.INT64, [20]), ("z", T.FLOAT, [20, n])],
                     classlabels_int64s=labels, post_transform=post, class_treeids=leaves["treeids"],
                     class_nodeids=leaves["nodeids"], class_ids=leaves["ids"], class_weights=leaves["weights"],
                     **extra, **a)
    compare(model, {"x": XN})
