"""onnxruntime's com.microsoft BiasGelu, FastGelu and SkipLayerNormalization on the numba provider,
against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import assert_matches_onnxruntime, node_model, run_numba
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"


def _rng():
    return np.random.default_rng(7)


def test_bias_gelu():
    dtype = np.float32  # onnxruntime's only BiasGelu
    rng = _rng()
    x = rng.standard_normal((2, 5, 16)).astype(dtype)
    model = node_model("BiasGelu", {"x": x}, initializers={"b": rng.standard_normal(16).astype(dtype)}, domain=MS)
    assert_matches_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("with_bias", [False, True])
def test_fast_gelu(with_bias):
    rng = _rng()
    x = (3 * rng.standard_normal((2, 5, 16))).astype(np.float32)
    inits = {"b": rng.standard_normal(16).astype(np.float32)} if with_bias else {}
    assert_matches_onnxruntime(node_model("FastGelu", {"x": x}, initializers=inits, domain=MS), {"x": x})


def _skip_ln(x_shape, skip_shape, outputs, with_beta=True, with_bias=False, **attrs):
    rng = _rng()
    f = TensorProto.FLOAT
    h = x_shape[-1]
    inits = {"gamma": rng.standard_normal(h), "beta": rng.standard_normal(h) if with_beta else None,
             "bias": rng.standard_normal(h) if with_bias else None}
    names = ["x", "skip"] + [k if v is not None else "" for k, v in inits.items()]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("SkipLayerNormalization", names, outputs, domain=MS, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", f, x_shape), helper.make_tensor_value_info("skip", f, skip_shape)],
        [helper.make_tensor_value_info(o, f, None) for o in outputs if o],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items() if v is not None])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32),
             "skip": rng.standard_normal(skip_shape).astype(np.float32)}
    return model, feeds


@pytest.mark.parametrize("skip_shape", [(2, 5, 32), (1, 5, 32), (5, 32)])
@pytest.mark.parametrize("outputs", [["y"], ["y", "", "", "s"]])
def test_skip_layer_normalization(skip_shape, outputs):
    model, feeds = _skip_ln((2, 5, 32), skip_shape, outputs, with_bias=True)
    assert_matches_onnxruntime(model, feeds)


def test_skip_layer_normalization_default_epsilon_and_no_beta():
    model, feeds = _skip_ln((1, 3, 8), (1, 3, 8), ["y"], with_beta=False)
    feeds = {k: v * 1e-5 for k, v in feeds.items()}  # tiny variance: the epsilon shows
    assert_matches_onnxruntime(model, feeds)


def test_skip_layer_normalization_with_statistics_runs_on_numpy():
    model, feeds = _skip_ln((2, 4, 8), (2, 4, 8), ["y", "mean", "inv_std"], epsilon=1e-5)
    _, session = run_numba(model, feeds, fallback=True)
    assert {a.provider for a in session.get_node_assignments()} == {"numpy"}


def test_skip_layer_normalization_refuses_a_bad_skip():
    model, feeds = _skip_ln((2, 4, 8), (3, 4, 8), ["y"])
    with pytest.raises(Exception, match="skip"):
        run_numba(model, feeds)




def _embed_ln(with_segment, with_mask, with_position_ids, outputs=("y", "mask_index")):
    rng = _rng()
    f, i32 = TensorProto.FLOAT, TensorProto.INT32
    vocab, positions, hidden, batch, seq = 30, 16, 8, 2, 5
    inits = {"word": rng.standard_normal((vocab, hidden)), "pos": rng.standard_normal((positions, hidden)),
             "seg": rng.standard_normal((2, hidden)), "gamma": rng.standard_normal(hidden),
             "beta": rng.standard_normal(hidden)}
    names = ["ids", "segs" if with_segment else "", "word", "pos", "seg" if with_segment else "", "gamma", "beta",
             "mask" if with_mask else "", "pids" if with_position_ids else ""]
    while names[-1] == "":
        names.pop()
    feeds = {"ids": rng.integers(0, vocab, (batch, seq)).astype(np.int32)}
    if with_segment:
        feeds["segs"] = rng.integers(0, 2, (batch, seq)).astype(np.int32)
    if with_mask:
        feeds["mask"] = (rng.random((batch, seq)) > 0.3).astype(np.int32)
    if with_position_ids:
        feeds["pids"] = rng.integers(0, positions, (1, seq)).astype(np.int32)
    node = helper.make_node("EmbedLayerNormalization", names, list(outputs), domain=MS, epsilon=1e-5)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, i32, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, i32 if o == "mask_index" else f, None) for o in outputs if o],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items() if k in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    return model, feeds


@pytest.mark.parametrize("with_segment", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("with_position_ids", [False, True])
def test_embed_layer_normalization(with_segment, with_mask, with_position_ids):
    model, feeds = _embed_ln(with_segment, with_mask, with_position_ids)
    assert_matches_onnxruntime(model, feeds)


def test_embed_layer_normalization_sum_output():
    model, feeds = _embed_ln(True, True, False, outputs=("y", "mask_index", "sum"))
    assert_matches_onnxruntime(model, feeds)


def test_embed_layer_normalization_refuses_ids_out_of_range():
    model, feeds = _embed_ln(False, False, False)
    feeds["ids"][0, 0] = 99
    with pytest.raises(Exception, match="out of range"):
        run_numba(model, feeds)


def _attention_model(op, inputs, inits, outputs=("y",), **attrs):
    f = TensorProto.FLOAT
    names = list(inputs)
    node = helper.make_node(op, names, list(outputs), domain=MS, **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, ELEM_OF[v.dtype], v.shape) for k, v in inputs.items()
                      if k and k not in inits],
        [helper.make_tensor_value_info(o, f, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    return model, {k: v for k, v in inputs.items() if k and k not in inits}


ELEM_OF = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}


@pytest.mark.parametrize("mask", [None, "end", "2d"])
def test_attention(mask):
    rng = _rng()
    b, s, din, d, heads = 2, 5, 12, 16, 4
    inputs = {"x": rng.standard_normal((b, s, din)).astype(np.float32),
              "w": (0.3 * rng.standard_normal((din, 3 * d))).astype(np.float32),
              "bias": rng.standard_normal(3 * d).astype(np.float32)}
    if mask == "end":
        inputs["mask"] = np.array([5, 3], np.int32)
    elif mask == "2d":
        inputs["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    model, feeds = _attention_model("Attention", inputs, {"w": inputs["w"], "bias": inputs["bias"]}, num_heads=heads)
    assert_matches_onnxruntime(model, feeds)


@pytest.mark.parametrize("mask", [None, "end", "2d"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_multi_head_attention(mask, with_bias):
    rng = _rng()
    b, s, length, d, heads = 2, 4, 6, 16, 4
    inputs = {"q": rng.standard_normal((b, s, d)).astype(np.float32),
              "k": rng.standard_normal((b, length, d)).astype(np.float32),
              "v": rng.standard_normal((b, length, d)).astype(np.float32),
              "bias": rng.standard_normal(3 * d).astype(np.float32) if with_bias else None}
    if mask == "end":
        inputs["mask"] = np.array([6, 2], np.int32)
    elif mask == "2d":
        inputs["mask"] = (rng.random((b, length)) > 0.3).astype(np.int32)
    inits = {"bias": inputs["bias"]} if with_bias else {}
    if not with_bias:
        inputs[""] = inputs.pop("bias")
        if "mask" in inputs:
            inputs["mask"] = inputs.pop("mask")
    inputs = {k: v for k, v in inputs.items() if v is not None or k == ""}
    model, feeds = _attention_model("MultiHeadAttention", inputs, inits, num_heads=heads)
    assert_matches_onnxruntime(model, feeds)


def test_attention_with_present_output_runs_on_numpy():
    rng = _rng()
    inputs = {"x": rng.standard_normal((1, 3, 8)).astype(np.float32),
              "w": rng.standard_normal((8, 24)).astype(np.float32)}
    model, feeds = _attention_model("Attention", inputs, {"w": inputs["w"]}, outputs=("y", "present"), num_heads=2)
    _, session = run_numba(model, feeds, fallback=True)
    assert {a.provider for a in session.get_node_assignments()} == {"numpy"}


@pytest.mark.parametrize("layout", ["bnsh"])  # onnxruntime's CPU kernel has no packed key and value
def test_multi_head_attention_key_layouts(layout):
    rng = _rng()
    b, s, length, heads, h = 2, 3, 5, 2, 4
    q = rng.standard_normal((b, s, heads * h)).astype(np.float32)
    if layout == "bnsh":
        inputs = {"q": q, "k": rng.standard_normal((b, heads, length, h)).astype(np.float32),
                  "v": rng.standard_normal((b, heads, length, h)).astype(np.float32)}
    else:
        inputs = {"q": q, "k": rng.standard_normal((b, length, heads, 2, h)).astype(np.float32)}
    model, feeds = _attention_model("MultiHeadAttention", inputs, {}, num_heads=heads)
    assert_matches_onnxruntime(model, feeds)
