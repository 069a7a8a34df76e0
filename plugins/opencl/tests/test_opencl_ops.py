"""Convolution, pooling, reductions, normalisation and data movement against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_helpers import assert_close, helper, make_model, run_both

CONVS = [
    ((1, 3, 17, 19), (8, 3, 3, 3), dict(pads=[1, 1, 1, 1])),
    ((2, 4, 10, 11), (6, 2, 3, 3), dict(group=2, strides=[2, 1], pads=[0, 1, 2, 1])),
    ((2, 6, 9, 9), (6, 1, 3, 3), dict(group=6, pads=[1, 1, 1, 1], strides=[2, 2])),
    ((1, 6, 9, 9), (12, 1, 3, 3), dict(group=6, dilations=[2, 2])),
    ((2, 5, 7, 7), (7, 5, 1, 1), {}),
    ((2, 3, 20), (4, 3, 5), dict(strides=[2], pads=[2, 1])),
    ((1, 3, 9, 9), (4, 3, 3, 3), dict(auto_pad="SAME_UPPER", strides=[2, 2])),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONVS, ids=str)
def test_conv(x_shape, w_shape, attrs, rng):
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], {"x": x}, ["y"], {"w": w, "b": b})
    got, want, _ = run_both(model, {"x": x})
    assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_conv_bn_add_relu_is_one_fused_step(rng):
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    r = rng.standard_normal((2, 6, 8, 8)).astype(np.float32)
    inits = {"w": rng.standard_normal((6, 4, 3, 3)).astype(np.float32),
             "s": rng.random(6).astype(np.float32) + 0.5, "bb": rng.standard_normal(6).astype(np.float32),
             "m": rng.standard_normal(6).astype(np.float32), "v": rng.random(6).astype(np.float32) + 0.1}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
             helper.make_node("Add", ["n", "r"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    got, want, session = run_both(make_model(nodes, {"x": x, "r": r}, ["y"], inits), {"x": x, "r": r})
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    # One step: the core optimizer may fold BatchNormalization first, the provider fuses the rest.
    assert len(session.engine.groups) == 1 and session.engine.groups[0].fused


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[2, 3], ceil_mode=1, strides=[2, 2])),
    ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
    ("GlobalAveragePool", {}), ("GlobalMaxPool", {}),
], ids=str)
def test_pooling(op, attrs, rng):
    x = rng.standard_normal((2, 3, 11, 9)).astype(np.float32)
    got, want, _ = run_both(make_model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": x}, ["y"]), {"x": x})
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                                "ReduceLogSumExp", "ReduceSumSquare"])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([-1], 1), (None, 0)], ids=str)
def test_reductions(op, axes, keepdims, rng):
    x = (rng.random((3, 4, 5)).astype(np.float32) + 0.5)
    inputs = ["x"] + (["axes"] if axes is not None else [])
    inits = {"axes": np.array(axes, np.int64)} if axes is not None else {}
    model = make_model([helper.make_node(op, inputs, ["y"], keepdims=keepdims)], {"x": x}, ["y"], inits, opset=18)
    got, want, _ = run_both(model, {"x": x})
    assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax_family(op, axis, rng):
    x = rng.standard_normal((3, 4, 6)).astype(np.float32) * 4
    got, want, _ = run_both(make_model([helper.make_node(op, ["x"], ["y"], axis=axis)], {"x": x}, ["y"]), {"x": x})
    assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_layer_norm_with_stats_and_batchnorm(rng):
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    inits = {"g": rng.standard_normal(8).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32),
             "s": rng.random(5).astype(np.float32), "bb": rng.random(5).astype(np.float32),
             "m": rng.random(5).astype(np.float32), "v": rng.random(5).astype(np.float32) + 0.1}
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"], axis=-1, epsilon=1e-3),
             helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["z"])]
    got, want, _ = run_both(make_model(nodes, {"x": x}, ["y", "mean", "inv", "z"], inits), {"x": x})
    assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_arg_reductions(rng):
    x = rng.integers(0, 5, (4, 6)).astype(np.float32)  # ties exercise select_last_index
    nodes = [helper.make_node("ArgMax", ["x"], ["a"], axis=1), helper.make_node("ArgMin", ["x"], ["b"], axis=0,
             keepdims=0, select_last_index=1)]
    got, want, _ = run_both(make_model(nodes, {"x": x}, ["a", "b"]), {"x": x})
    assert_close(got, want, rtol=0, atol=0)


def test_data_movement(rng):
    x = rng.standard_normal((2, 4, 4, 6)).astype(np.float32)
    idx = np.array([[2, -1], [0, 1]], np.int64)
    inits = {"starts": np.array([3, 0], np.int64), "ends": np.array([0, 4], np.int64),
             "axes": np.array([3, 1], np.int64), "steps": np.array([-1, 2], np.int64),
             "pads": np.array([0, 1, 0, 2, 0, 0, 1, 1], np.int64), "reps": np.array([1, 2, 1, 1], np.int64),
             "shape": np.array([3, 1, 1, 1, 1], np.int64), "split": np.array([1, 3], np.int64)}
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 3, 1]),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=2),
             helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
             helper.make_node("Gather", ["x", "idx"], ["g"], axis=2),
             helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect"),
             helper.make_node("Tile", ["x", "reps"], ["ti"]),
             helper.make_node("Expand", ["x", "shape"], ["e"]),
             helper.make_node("Split", ["x", "split"], ["sp0", "sp1"], axis=2),
             helper.make_node("DepthToSpace", ["x"], ["d"], blocksize=2, mode="CRD")]
    outs = ["t", "c", "s", "g", "p", "ti", "e", "sp0", "sp1", "d"]
    model = make_model(nodes, {"x": x, "idx": idx}, outs, inits)
    got, want, _ = run_both(model, {"x": x, "idx": idx})
    assert_close(got, want, rtol=0, atol=0)


def test_shape_arithmetic_reshape(rng):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exported transformers do."""
    x = rng.standard_normal((2, 6, 4)).astype(np.float32)
    inits = {"i0": np.array(0, np.int64), "ax": np.array([0], np.int64), "rest": np.array([-1, 2], np.int64)}
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["n"]),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]), helper.make_node("Concat", ["n1", "rest"], ["tgt"],
                                                                                axis=0),
             helper.make_node("Reshape", ["x", "tgt"], ["y"])]
    got, want, _ = run_both(make_model(nodes, {"x": x}, ["y"], inits), {"x": x})
    assert_close(got, want, rtol=0, atol=0)


def test_matmul_broadcasting_and_gemm(rng):
    a = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    b = rng.standard_normal((3, 7, 4)).astype(np.float32)
    v = rng.standard_normal((7,)).astype(np.float32)
    w = rng.standard_normal((6, 7)).astype(np.float32)
    c = rng.standard_normal((6,)).astype(np.float32)
    m2 = rng.standard_normal((5, 7)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["a", "b"], ["ab"]), helper.make_node("MatMul", ["a", "v"], ["av"]),
             helper.make_node("Gemm", ["m2", "w", "c"], ["g"], transB=1, alpha=0.5, beta=2.0)]
    feeds = {"a": a, "b": b, "v": v, "m2": m2}
    got, want, _ = run_both(make_model(nodes, feeds, ["ab", "av", "g"], {"w": w, "c": c}), feeds)
    assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["bias_relu", "residual", "broadcast_residual"])
def test_matmul_add_chains_are_fused(mode, rng):
    x = rng.standard_normal((2, 7, 16)).astype(np.float32)
    w = rng.standard_normal((16, 24)).astype(np.float32)
    inits = {"w": w}
    feeds = {"x": x}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"])]
    if mode == "bias_relu":
        inits["b"] = rng.standard_normal(24).astype(np.float32)
        nodes += [helper.make_node("Add", ["p", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    else:
        feeds["r"] = rng.standard_normal((2, 7, 24) if mode == "residual" else (7, 1)).astype(np.float32)
        nodes += [helper.make_node("Add", ["r", "p"], ["y"])]
    got, want, session = run_both(make_model(nodes, feeds, ["y"], inits), feeds)
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert len(session.engine.groups) == 1 and session.engine.groups[0].fused


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_vectorised_rows(op, rng):
    """Rows whose length is a multiple of 8 take the 8-wide kernel."""
    x = rng.standard_normal((3, 5, 32)).astype(np.float32) * 5
    got, want, _ = run_both(make_model([helper.make_node(op, ["x"], ["y"], axis=-1)], {"x": x}, ["y"]), {"x": x})
    assert_close(got, want, rtol=1e-5, atol=1e-6)
