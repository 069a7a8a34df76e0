"""GELU, bias + GELU, LayerNorm, SkipLayerNorm and multi-head attention fusions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper, numpy_helper

from onnxplug.optimizer.passes.attention_fusion import AttentionFusion
from onnxplug.optimizer.passes.bias_gelu_fusion import BiasGeluFusion
from onnxplug.optimizer.passes.gelu_fusion import GeluFusion
from onnxplug.optimizer.passes.layer_norm_fusion import LayerNormFusion
from onnxplug.optimizer.passes.rms_norm_fusion import RMSNormFusion
from onnxplug.optimizer.passes.skip_layer_norm_fusion import SkipLayerNormFusion
from onnxplug.providers.numpy import NumpyProvider
from tests.optimizer.providers import PickyProvider
from tests.optimizer.util import F, assert_equivalent, model, node, op_types, ort_run, rand, run_passes

S2 = {"sqrt2": np.array(math.sqrt(2), np.float32), "one": np.array(1.0, np.float32),
      "half": np.array(0.5, np.float32)}


def _erf_gelu(order: str, x: str = "x", out: str = "y") -> list:
    head = [node("Div", [x, "sqrt2"], ["d"]), node("Erf", ["d"], ["e"]), node("Add", ["e", "one"], ["a"])]
    if order == "x_first":  # (x * (1 + erf)) * 0.5
        return head + [node("Mul", [x, "a"], ["m"]), node("Mul", ["m", "half"], [out])]
    if order == "half_first":  # (0.5 * (1 + erf)) * x
        return head + [node("Mul", ["half", "a"], ["m"]), node("Mul", ["m", x], [out])]
    return head + [node("Mul", [x, "half"], ["h"]), node("Mul", ["h", "a"], [out])]  # (x * 0.5) * (1 + erf)


@pytest.mark.parametrize("order", ["x_first", "half_first", "half_x"])
def test_erf_gelu_in_each_association(order):
    proto = model(_erf_gelu(order), [("x", F, [2, 8])], [("y", F, [2, 8])], S2)
    m, reports = run_passes(proto, GeluFusion)
    assert op_types(m) == {"com.onnxplug:Gelu": 1}
    assert_equivalent(proto, m, {"x": 3 * rand(2, 8)})


def test_tanh_gelu():
    inits = {"c3": np.array(3.0, np.float32), "k": np.array(0.044715, np.float32),
             "s": np.array(math.sqrt(2 / math.pi), np.float32), **S2}
    proto = model([node("Pow", ["x", "c3"], ["p"]), node("Mul", ["p", "k"], ["pk"]), node("Add", ["x", "pk"], ["i"]),
                   node("Mul", ["i", "s"], ["is"]), node("Tanh", ["is"], ["t"]), node("Add", ["t", "one"], ["a"]),
                   node("Mul", ["x", "a"], ["m"]), node("Mul", ["m", "half"], ["y"])],
                  [("x", F, [2, 8])], [("y", F, [2, 8])], inits)
    m, reports = run_passes(proto, GeluFusion)
    assert op_types(m) == {"com.onnxplug:Gelu": 1}
    assert m.graph.nodes[0].attr("approximate") == "tanh"
    assert_equivalent(proto, m, {"x": 3 * rand(2, 8)})


def test_gelu_with_wrong_constant_or_shared_intermediate_is_not_fused():
    wrong = model(_erf_gelu("x_first"), [("x", F, [4])], [("y", F, [4])], {**S2, "half": np.array(0.6, np.float32)})
    m, _ = run_passes(wrong, GeluFusion)
    assert "com.onnxplug:Gelu" not in op_types(m)
    shared = model(_erf_gelu("x_first"), [("x", F, [4])], [("y", F, [4]), ("e", F, [4])], S2)
    m, _ = run_passes(shared, GeluFusion)
    assert "com.onnxplug:Gelu" not in op_types(m)


def test_gelu_not_fused_when_erf_provider_lacks_gelu():
    proto = model(_erf_gelu("x_first"), [("x", F, [4])], [("y", F, [4])], S2)
    picky = PickyProvider({("", "Erf"), ("", "Div"), ("", "Add"), ("", "Mul")})
    m, _ = run_passes(proto, GeluFusion, providers=[picky, NumpyProvider()])
    assert op_types(m)["Erf"] == 1


def test_bias_gelu():
    proto = model([node("MatMul", ["x", "w"], ["mm"]), node("Add", ["mm", "bias"], ["xb"]), *_erf_gelu("x_first", "xb")],
                  [("x", F, ["b", 3, 4])], [("y", F, ["b", 3, 8])], {"w": rand(4, 8), "bias": rand(8), **S2})
    m, _ = run_passes(proto, GeluFusion, BiasGeluFusion)
    assert op_types(m) == {"MatMul": 1, "com.onnxplug:BiasGelu": 1}
    assert_equivalent(proto, m, {"x": rand(2, 3, 4)})


def test_bias_that_broadcasts_over_rows_is_not_a_bias_gelu():
    proto = model([node("Add", ["x", "bias"], ["xb"]), *_erf_gelu("x_first", "xb")],
                  [("x", F, [3, 8])], [("y", F, [3, 8])], {"bias": rand(3, 1), **S2})
    m, _ = run_passes(proto, GeluFusion, BiasGeluFusion)
    assert op_types(m) == {"Add": 1, "com.onnxplug:Gelu": 1}


def _layer_norm(x: str, out: str, prefix: str = "", axes=(-1,), opset: int = 17) -> list:
    p = prefix
    reduce = (lambda i, o: node("ReduceMean", [i, f"{p}axes"], [o])) if opset >= 18 else (
        lambda i, o: node("ReduceMean", [i], [o], axes=list(axes)))
    return [reduce(x, f"{p}mean"), node("Sub", [x, f"{p}mean"], [f"{p}d"]),
            node("Pow", [f"{p}d", "two"], [f"{p}sq"]), reduce(f"{p}sq", f"{p}var"),
            node("Add", [f"{p}var", "eps"], [f"{p}ve"]), node("Sqrt", [f"{p}ve"], [f"{p}std"]),
            node("Div", [f"{p}d", f"{p}std"], [f"{p}n"]), node("Mul", [f"{p}n", "gamma"], [f"{p}g"]),
            node("Add", [f"{p}g", "beta"], [out])]


def _ln_inits(d: int = 8, axes=(-1,)) -> dict:
    return {"two": np.array(2.0, np.float32), "eps": np.array(1e-5, np.float32), "gamma": 1 + rand(d, seed=7),
            "beta": rand(d, seed=8), "axes": np.array(axes, np.int64)}


@pytest.mark.parametrize("opset, domain", [(17, ""), (18, ""), (13, "com.onnxplug")])
def test_layer_norm_fusion_uses_standard_op_from_opset_17(opset, domain):
    proto = model(_layer_norm("x", "y", opset=opset), [("x", F, ["b", 5, 8])], [("y", F, ["b", 5, 8])],
                  _ln_inits(), opset=opset)
    m, _ = run_passes(proto, LayerNormFusion)
    assert op_types(m) == {f"{domain}:LayerNormalization" if domain else "LayerNormalization": 1}
    assert_equivalent(proto, m, {"x": 2 + rand(2, 5, 8)})


def test_layer_norm_over_a_middle_axis_or_with_shared_intermediate_is_not_fused():
    middle = model(_layer_norm("x", "y", axes=(1,), opset=13), [("x", F, [2, 5, 8])], [("y", F, [2, 5, 8])],
                   {**_ln_inits(), "gamma": np.float32(1) + rand(8, seed=7)}, opset=13)
    m, _ = run_passes(middle, LayerNormFusion)
    assert "ReduceMean" in op_types(m)
    shared = model(_layer_norm("x", "y"), [("x", F, [2, 5, 8])], [("y", F, [2, 5, 8]), ("std", F, [2, 5, 1])],
                   _ln_inits())
    m, _ = run_passes(shared, LayerNormFusion)
    assert "LayerNormalization" not in op_types(m)


@pytest.mark.parametrize("sum_is_output", [False, True])
def test_skip_layer_norm_with_bias(sum_is_output):
    nodes = [node("MatMul", ["h", "w"], ["mm"]), node("Add", ["mm", "bias"], ["proj"]),
             node("Add", ["x", "proj"], ["s"]), node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1)]
    outputs = [("y", F, ["b", 5, 8])] + ([("s", F, ["b", 5, 8])] if sum_is_output else [])
    proto = model(nodes, [("x", F, ["b", 5, 8]), ("h", F, ["b", 5, 4])], outputs,
                  {"w": rand(4, 8), "bias": rand(8, seed=2), "gamma": rand(8, seed=3), "beta": rand(8, seed=4)})
    m, reports = run_passes(proto, SkipLayerNormFusion)
    assert op_types(m) == {"MatMul": 1, "com.onnxplug:SkipLayerNormalization": 1}
    assert reports["SkipLayerNormFusion"].counts == {"fused": 1, "with_bias": 1}
    assert len(m.graph.nodes[-1].outputs) == (2 if sum_is_output else 1)
    assert_equivalent(proto, m, {"x": rand(2, 5, 8), "h": rand(2, 5, 4, seed=1)})


def test_broadcasting_residual_add_is_not_a_skip_layer_norm():
    proto = model([node("Add", ["x", "r"], ["s"]), node("LayerNormalization", ["s", "gamma"], ["y"])],
                  [("x", F, [2, 5, 8]), ("r", F, [1, 5, 8])], [("y", F, [2, 5, 8])], {"gamma": rand(8)})
    m, _ = run_passes(proto, SkipLayerNormFusion)
    assert op_types(m) == {"Add": 1, "LayerNormalization": 1}


def _attention(mask_shape=("b", 1, 1, "s"), k_perm=(0, 2, 3, 1), heads=2, head=4, split_heads=None,
               kv_batch="b") -> tuple:
    d = heads * head
    split = np.array(split_heads or [0, 0, heads, head], np.int64)
    nodes = [node("Reshape", ["q", "split"], ["q4"]), node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
             node("Reshape", ["k", "split"], ["k4"]), node("Transpose", ["k4"], ["kt"], perm=list(k_perm)),
             node("Reshape", ["v", "split"], ["v4"]), node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
             node("MatMul", ["qt", "kt"], ["scores"]), node("Div", ["scores", "scale"], ["scaled"]),
             node("Add", ["scaled", "mask"], ["masked"]), node("Softmax", ["masked"], ["probs"], axis=-1),
             node("MatMul", ["probs", "vt"], ["ctx"]), node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
             node("Reshape", ["ctx_t", "merge"], ["y"])]
    inits = {"split": split, "merge": np.array([0, 0, d], np.int64), "scale": np.array(math.sqrt(head), np.float32)}
    qkv = [("q", F, ["b", "s", d])] + [(n, F, [kv_batch, "s", d]) for n in "kv"]
    return model(nodes, [*qkv, ("mask", F, list(mask_shape))], [("y", F, [None, None, d])], inits), d


def test_multi_head_attention_fusion():
    proto, d = _attention()
    m, _ = run_passes(proto, AttentionFusion)
    assert op_types(m) == {"com.onnxplug:MultiHeadAttention": 1}
    fused = m.graph.nodes[0]
    assert fused.attr("num_heads") == 2 and fused.attr("scale") == pytest.approx(0.5)
    mask = np.where(np.arange(6)[None, None, None, :] < 4, 0.0, -1e4).astype(np.float32).repeat(2, 0)
    feeds = {"q": rand(2, 6, d), "k": rand(2, 6, d, seed=1), "v": rand(2, 6, d, seed=2), "mask": mask}
    assert_equivalent(proto, m, feeds)


@pytest.mark.parametrize("split", [[0, 0, -1, 4], [0, -1, 2, 4]])
def test_attention_with_heads_from_the_width_and_a_computed_merge(split):
    """Exports split heads by [0, 0, -1, Dh] (or [0, -1, H, Dh]) and merge them by a target computed
    from shapes: the merging Reshape then stays, reading the fused output."""
    proto, d = _attention(split_heads=split)
    graph = proto.graph
    merge = next(n for n in graph.node if n.output[0] == "y")
    merge.input[1] = "merge_computed"
    target = [node("Shape", ["q"], ["q_shape"]), node("Slice", ["q_shape", "zero", "two"], ["lead"]),
              node("Concat", ["lead", "width"], ["merge_computed"], axis=0)]
    nodes = target + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend([numpy_helper.from_array(np.array(v, np.int64), k)
                              for k, v in {"zero": [0], "two": [2], "width": [d]}.items()])
    m, _ = run_passes(proto, AttentionFusion)
    types = op_types(m)
    assert types["com.onnxplug:MultiHeadAttention"] == 1 and types["Reshape"] == 1 and "Softmax" not in types
    assert next(n for n in m.graph.nodes if n.op_type == "MultiHeadAttention").attr("num_heads") == 2
    feeds = {"q": rand(2, 6, d), "k": rand(2, 6, d, seed=1), "v": rand(2, 6, d, seed=2), "mask": rand(2, 1, 1, 6)}
    assert_equivalent(proto, m, feeds)


@pytest.mark.parametrize("case", ["mask_widens_batch", "keys_broadcast_over_batch"])
def test_attention_over_unknown_dims_broadcasts_as_the_unfused_nodes(case):
    """Batch dims the optimizer cannot compare (different symbols) are fused; operands that then
    broadcast give the unfused graph's result (larger than the queries' batch where the mask is)."""
    if case == "mask_widens_batch":
        proto, d = _attention(mask_shape=("m", 1, "s", "s"))
        feeds = {"q": rand(1, 6, 8), "k": rand(1, 6, 8, seed=1), "v": rand(1, 6, 8, seed=2),
                 "mask": rand(3, 1, 6, 6, seed=3)}
    else:
        proto, d = _attention(kv_batch="c")
        feeds = {"q": rand(2, 6, 8), "k": rand(1, 6, 8, seed=1), "v": rand(1, 6, 8, seed=2),
                 "mask": rand(2, 1, 1, 6, seed=3)}
    m, _ = run_passes(proto, AttentionFusion)
    assert op_types(m) == {"com.onnxplug:MultiHeadAttention": 1}
    assert_equivalent(proto, m, feeds)
    if case == "mask_widens_batch":
        assert ort_run(proto, feeds)[0].shape == (3, 6, 8)


@pytest.mark.parametrize("case", ["mask_widens_scores", "k_not_transposed"])
def test_attention_not_fused_when_mask_widens_or_k_layout_differs(case):
    if case == "mask_widens_scores":
        proto, _ = _attention(mask_shape=("b", 3, "s", "s"))  # 3 heads' worth of mask: broadcast changes shape
    else:
        proto, _ = _attention(k_perm=(0, 2, 1, 3))
    m, _ = run_passes(proto, AttentionFusion)
    assert "com.onnxplug:MultiHeadAttention" not in op_types(m)


def test_layer_norm_over_a_symbolic_dim_is_not_fused():
    proto = model(_layer_norm("x", "y"), [("x", F, ["b", 5, "d"])], [("y", F, ["b", 5, "d"])], _ln_inits())
    m, _ = run_passes(proto, LayerNormFusion)
    assert "LayerNormalization" not in op_types(m)


def _rms_norm(spelling: str, weighted: bool = True, residual: bool = False) -> tuple:
    """x / sqrt(mean(x^2) + eps) [* gamma] as exporters write it; ``residual``: x also read elsewhere."""
    square = node("Pow", ["x", "two"], ["sq"]) if spelling != "mul_square" else node("Mul", ["x", "x"], ["sq"])
    nodes = [square, node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1), node("Add", ["ms", "eps"], ["se"]),
             node("Sqrt", ["se"], ["std"])]
    if spelling == "div":
        nodes.append(node("Div", ["x", "std"], ["n"]))
    elif spelling == "reciprocal":
        nodes += [node("Reciprocal", ["std"], ["inv"]), node("Mul", ["x", "inv"], ["n"])]
    else:  # Llama's: Div(1, std) then x times it
        nodes += [node("Div", ["one", "std"], ["inv"]), node("Mul", ["x", "inv"], ["n"])]
    inits = {"two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32), "one": np.array(1.0, np.float32)}
    if weighted:
        nodes.append(node("Mul", ["gamma", "n"], ["y"]))
        inits["gamma"] = rand(8, seed=4)
    else:
        nodes.append(node("Identity", ["n"], ["y"]))
    outputs = [("y", F, ["b", "s", 8])]
    if residual:
        nodes.append(node("Add", ["x", "y"], ["r"]))
        outputs = [("r", F, ["b", "s", 8])]
    return model(nodes, [("x", F, ["b", "s", 8])], outputs, inits)


@pytest.mark.parametrize("spelling", ["div", "reciprocal", "one_over", "mul_square"])
@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm_fusion(spelling, weighted):
    proto = _rms_norm(spelling, weighted, residual=True)
    m, _ = run_passes(proto, RMSNormFusion)
    types = op_types(m)
    assert types["com.onnxplug:RMSNormalization"] == 1 and "ReduceMean" not in types and "Sqrt" not in types
    fused = next(n for n in m.graph.nodes if n.op_type == "RMSNormalization")
    assert fused.attr("axis") == -1 and fused.attr("epsilon") == pytest.approx(1e-6)
    assert_equivalent(proto, m, {"x": 3 * rand(2, 5, 8)})


def test_rms_norm_with_a_shared_intermediate_or_another_exponent_is_not_fused():
    shared = _rms_norm("div")
    shared.graph.output.append(helper.make_tensor_value_info("std", F, None))
    m, _ = run_passes(shared, RMSNormFusion)
    assert "com.onnxplug:RMSNormalization" not in op_types(m)
    cube = _rms_norm("div")
    next(t for t in cube.graph.initializer if t.name == "two").CopyFrom(numpy_helper.from_array(np.array(3.0, np.float32), "two"))
    m, _ = run_passes(cube, RMSNormFusion)
    assert "com.onnxplug:RMSNormalization" not in op_types(m)
