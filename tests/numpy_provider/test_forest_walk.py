"""ai.onnx.ml kernels on the numpy provider's prepared paths against onnxruntime: tree ensembles
(all-node walk, chunks, direct multiclass labels), SVMs (vectorised votes and coupling) and
OneHotEncoder's category tables."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper

import onnxplug.ml.forest_walk as walk
from tests.numpy_provider.test_ml_ops import compare, f32, ml_model

RNG = np.random.default_rng(5)


def chain_trees(n_trees, depth, classes, every_leaf_class=None, modes=("BRANCH_LEQ",), leaf_p=0.5):
    """Unbalanced random trees (many levels, few nodes) in TreeEnsembleClassifier attributes.

    ``every_leaf_class(t)`` gives the one class tree t scores at all its leaves (GBM converters);
    without it a leaf scores a random subset of the classes.
    """
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                         "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                         "class_treeids", "class_nodeids", "class_ids", "class_weights")}
    for t in range(n_trees):
        counter = [0]

        def grow(d):
            me, i = counter[0], len(a["nodes_modes"])
            counter[0] += 1
            for k, v in (("nodes_treeids", t), ("nodes_nodeids", me), ("nodes_truenodeids", 0),
                         ("nodes_falsenodeids", 0), ("nodes_missing_value_tracks_true", int(RNG.integers(2)))):
                a[k].append(v)
            if d == 0 or (me > 0 and RNG.random() < leaf_p):
                a["nodes_featureids"].append(0)
                a["nodes_values"].append(0.0)
                a["nodes_modes"].append("LEAF")
                ids = [every_leaf_class(t)] if every_leaf_class else [c for c in range(classes) if RNG.random() < 0.6]
                for c in ids:
                    for k, v in (("class_treeids", t), ("class_nodeids", me), ("class_ids", c),
                                 ("class_weights", float(np.float32(RNG.standard_normal())))):
                        a[k].append(v)
                return me
            a["nodes_featureids"].append(int(RNG.integers(5)))
            a["nodes_values"].append(float(np.float32(RNG.standard_normal() * 0.7)))
            a["nodes_modes"].append(str(RNG.choice(modes)))
            a["nodes_truenodeids"][i] = grow(d - 1)
            a["nodes_falsenodeids"][i] = grow(d - 1)
            return me

        grow(depth)
    return a


def classifier(attrs, labels, post, rows, **extra):
    return ml_model("TreeEnsembleClassifier", [f32("x", (rows, 5))],
                    [("l", T.INT64, [rows]), ("z", T.FLOAT, [rows, len(labels)])],
                    classlabels_int64s=labels, post_transform=post, **extra, **attrs)


@pytest.fixture
def walks(monkeypatch):
    """Counts the all-node walks (the prepared path) that ran."""
    calls = []
    original = walk.ForestWalker._walk

    def spy(self, x):
        calls.append(x.shape[0])
        return original(self, x)

    monkeypatch.setattr(walk.ForestWalker, "_walk", spy)
    return calls


@pytest.mark.parametrize("rows", [1, 3, 17, 64])
@pytest.mark.parametrize("base", [False, True])
def test_gbm_style_classifier(rows, base, walks):
    """Each tree scores one class at every leaf: labels are the argmax directly; NaN rows included."""
    attrs = chain_trees(30, 9, 3, every_leaf_class=lambda t: t % 3)
    extra = {"base_values": [0.1, -0.2, 0.3]} if base else {}
    x = RNG.standard_normal((rows, 5)).astype(np.float32)
    x[0, 1] = np.nan
    compare(classifier(attrs, [2, 4, 6], "SOFTMAX", rows, **extra), {"x": x})
    assert walks == [rows]


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
def test_forest_classes_sometimes_unscored(post, walks):
    attrs = chain_trees(4, 6, 3)
    x = RNG.standard_normal((9, 5)).astype(np.float32)
    compare(classifier(attrs, [0, 1, 2], post, 9), {"x": x})
    assert walks == [9]


def test_mixed_modes_and_chunks(monkeypatch, walks):
    """Every split mode in one forest; a batch larger than one chunk is walked in several."""
    monkeypatch.setattr(walk, "_MAX_PAIRS", 2000)
    modes = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
    attrs = chain_trees(8, 8, 2, modes=modes)
    x = RNG.standard_normal((40, 5)).astype(np.float32)
    x[::7, 2] = np.nan
    x[3, :] = attrs["nodes_values"][0]  # equality splits meet their threshold
    compare(classifier(attrs, [0, 1], "NONE", 40), {"x": x})
    assert len(walks) > 1 and sum(walks) == 40


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MAX"])
def test_regressor_targets(aggregate, walks):
    attrs = chain_trees(6, 7, 2)
    renamed = {k.replace("class_", "target_"): v for k, v in attrs.items()}
    x = RNG.standard_normal((11, 5)).astype(np.float32)
    model = ml_model("TreeEnsembleRegressor", [f32("x", (11, 5))], [("y", T.FLOAT, [11, 2])], n_targets=2,
                     aggregate_function=aggregate, base_values=[0.5, -1.0], **renamed)
    compare(model, {"x": x})
    assert walks == ([] if aggregate == "MAX" else [11])


def test_bushy_forest_large_batch_walks_by_level(walks):
    """Full binary trees on a large batch: the level-by-level walker is cheaper and is used."""
    attrs = chain_trees(12, 7, 3, leaf_p=0.0)
    x = RNG.standard_normal((600, 5)).astype(np.float32)
    compare(classifier(attrs, [0, 1, 2], "SOFTMAX", 600), {"x": x})
    assert walks == []


def test_tree_ensemble_opset5_member_splits(walks):
    """ai.onnx.ml opset 5 TreeEnsemble: a set-membership split next to a less-or-equal one."""
    node = helper.make_node(
        "TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", n_targets=2, aggregate_function=1, post_transform=0,
        tree_roots=[0, 2], nodes_modes=helper.make_tensor("m", T.UINT8, [3], [0, 6, 0]),
        nodes_featureids=[0, 1, 2], nodes_splits=helper.make_tensor("s", T.FLOAT, [3], [0.0, 0.0, 0.5]),
        nodes_truenodeids=[0, 0, 2], nodes_trueleafs=[1, 1, 1], nodes_falsenodeids=[1, 1, 3],
        nodes_falseleafs=[0, 1, 1], membership_values=helper.make_tensor("v", T.FLOAT, [3], [1.0, 2.0, np.nan]),
        leaf_targetids=[0, 1, 0, 1], leaf_weights=helper.make_tensor("w", T.FLOAT, [4], [1.0, 2.0, 3.0, 4.0]))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", T.FLOAT, [6, 3])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [6, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)],
                              ir_version=10)
    x = np.array([[-1, 1, 0], [1, 2, 1], [1, 3, 0], [-1, 2, 1], [0, 1, 0.5], [2, 0, 0.7]], dtype=np.float32)
    compare(model, {"x": x})
    assert walks == [6]


@pytest.mark.parametrize("rows", [1, 4, 23])
@pytest.mark.parametrize("classes", [3, 5])
@pytest.mark.parametrize("proba", [False, True])
def test_svc_votes_and_coupling(rows, classes, proba):
    per_class = [int(v) for v in RNG.integers(1, 5, classes)]
    pairs = classes * (classes - 1) // 2
    extra = dict(prob_a=(-RNG.random(pairs) * 3).tolist(), prob_b=(RNG.standard_normal(pairs) * 0.3).tolist()) \
        if proba else {}
    model = ml_model("SVMClassifier", [f32("x", (rows, 5))], [("y", T.INT64, [rows]), ("z", T.FLOAT, [rows, None])],
                     kernel_type="RBF", kernel_params=[0.2, 0.0, 3.0], vectors_per_class=per_class,
                     support_vectors=RNG.standard_normal((sum(per_class), 5)).ravel().tolist(),
                     coefficients=RNG.standard_normal((classes - 1) * sum(per_class)).tolist(),
                     rho=RNG.standard_normal(pairs).tolist(), classlabels_ints=list(range(10, 10 + classes)), **extra)
    compare(model, {"x": RNG.standard_normal((rows, 5)).astype(np.float32)}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [7, 300])
def test_one_hot_encoder_prepared_lookup(size):
    """Small inputs take the dict, large int64 ones the sorted search; unknown values give zeros."""
    cats = [9, -4, 100, 3, 7]
    x = RNG.choice(np.array(cats + [0, 55, -1], np.int64), size=(size, 2))
    compare(ml_model("OneHotEncoder", [("x", T.INT64, [size, 2])], [("y", T.FLOAT, [size, 2, 5])],
                     cats_int64s=cats), {"x": x})
    if size < 100:
        words = np.array([["b", "zz"], ["a", "c"], ["", "a"]], dtype=object)
        compare(ml_model("OneHotEncoder", [("x", T.STRING, [3, 2])], [("y", T.FLOAT, [3, 2, 3])],
                         cats_strings=["c", "a", "b"]), {"x": words})


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer_rows_without_zero_divisor(norm):
    x = RNG.uniform(0.5, 2.0, (6, 4)).astype(np.float32)
    compare(ml_model("Normalizer", [f32("x", (6, 4))], [f32("y", (6, 4))], norm=norm), {"x": x})
