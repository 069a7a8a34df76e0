"""Host emulation (NOT a GPU test): the provider's array programs with numpy standing in for CuPy,
against onnxruntime (or numpy written here for the project's com.onnxplug ops)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cupy_test_support import assert_close, check_emulated, node_model, session

pytestmark = pytest.mark.emulation

F32 = np.float32


def r(rng: np.random.Generator, *shape: int, dtype: type = F32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# --- matrix products -------------------------------------------------------------------------------

@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                              ((4,), (4, 3)), ((3, 4), (4,))])
def test_matmul_shapes(a_shape: tuple, b_shape: tuple, emulated: str, rng: np.random.Generator) -> None:
    feeds = {"a": r(rng, *a_shape), "b": r(rng, *b_shape)}
    check_emulated(node_model("MatMul", feeds), feeds, emulated)


@pytest.mark.parametrize("attrs, c_shape", [({}, (5,)), ({"transA": 1, "alpha": 0.5}, (3, 5)),
                                            ({"transB": 1, "beta": 2.0}, (1,)), ({"transA": 1, "transB": 1}, None)])
def test_gemm(attrs: dict, c_shape: tuple | None, emulated: str, rng: np.random.Generator) -> None:
    a = r(rng, 4, 3) if attrs.get("transA") else r(rng, 3, 4)
    b = r(rng, 5, 4) if attrs.get("transB") else r(rng, 4, 5)
    feeds = {"a": a, "b": b} | ({"c": r(rng, *c_shape)} if c_shape else {})
    check_emulated(node_model("Gemm", feeds, **attrs), feeds, emulated)


def test_fused_gemm_and_matmul_activations(emulated: str, rng: np.random.Generator) -> None:
    a, b, c = r(rng, 3, 4), r(rng, 4, 5), r(rng, 5)
    model = node_model("FusedGemm", {"a": a, "b": b, "c": c}, domain="com.onnxplug", activation="LeakyRelu",
                       activation_params=[0.1], alpha=2.0)
    y = 2.0 * a @ b + c
    assert_close(session(model, emulated).run(None, {"a": a, "b": b, "c": c}), [np.where(y < 0, 0.1 * y, y)])
    model = node_model("FusedMatMul", {"a": a, "b": b}, domain="com.onnxplug", activation="Clip",
                       activation_params=[-0.5, 0.5])
    assert_close(session(model, emulated).run(None, {"a": a, "b": b}), [np.clip(a @ b, -0.5, 0.5)])


# --- convolution ---------------------------------------------------------------------------------

CONVS = [
    ((1, 3, 7, 7), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 4, 8, 6), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 0, 1]}),
    ((1, 4, 9, 9), (4, 1, 3, 3), {"group": 4, "dilations": [2, 2], "pads": [2, 2, 2, 2]}),  # depthwise
    ((1, 3, 8, 8), (5, 3, 1, 1), {"strides": [2, 2]}),  # 1x1 strided
    ((1, 2, 10), (3, 2, 4), {"auto_pad": "SAME_UPPER", "strides": [3]}),  # 1-D
    ((1, 2, 5, 4, 6), (2, 2, 2, 3, 2), {"auto_pad": "SAME_LOWER"}),  # 3-D
]


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONVS)
def test_conv(x_shape: tuple, w_shape: tuple, attrs: dict, emulated: str, rng: np.random.Generator) -> None:
    feeds = {"x": r(rng, *x_shape), "w": r(rng, *w_shape), "b": r(rng, w_shape[0])}
    check_emulated(node_model("Conv", feeds, **attrs), feeds, emulated)


def test_fused_conv_adds_the_residual_before_the_activation(emulated: str, rng: np.random.Generator) -> None:
    x, w, b, z = r(rng, 1, 2, 5, 5), r(rng, 3, 2, 3, 3), r(rng, 3), r(rng, 1, 3, 5, 5)
    model = node_model("FusedConv", {"x": x, "w": w, "b": b, "z": z}, domain="com.onnxplug",
                       activation="Relu", pads=[1, 1, 1, 1])
    plain = node_model("Conv", {"x": x, "w": w, "b": b}, pads=[1, 1, 1, 1])
    conv = session(plain, emulated).run(None, {"x": x, "w": w, "b": b})[0]
    got = session(model, emulated).run(None, {"x": x, "w": w, "b": b, "z": z})
    assert_close(got, [np.maximum(conv + z, 0)])


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((1, 3, 4, 4), (3, 2, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    ((1, 4, 3, 5), (4, 1, 2, 2), {"group": 2, "dilations": [2, 1]}),
    ((2, 2, 5), (2, 3, 3), {"strides": [2], "output_shape": [12]}),
])
def test_conv_transpose(x_shape: tuple, w_shape: tuple, attrs: dict, emulated: str,
                        rng: np.random.Generator) -> None:
    feeds = {"x": r(rng, *x_shape), "w": r(rng, *w_shape)}
    check_emulated(node_model("ConvTranspose", feeds, **attrs), feeds, emulated)


# --- pooling -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("MaxPool", {"kernel_shape": [2, 3], "ceil_mode": 1, "strides": [2, 2]}),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1, "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 2], "ceil_mode": 1, "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}),
])
def test_pools(op: str, attrs: dict, emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 2, 3, 7, 8)
    check_emulated(node_model(op, {"x": x}, opset=19, **attrs), {"x": x}, emulated)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op: str, emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 2, 3, 5, 4)
    check_emulated(node_model(op, {"x": x}), {"x": x}, emulated)


# --- reductions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes, keepdims", [([1], 1), ([0, 2], 0), (None, 1)])
def test_reductions(op: str, axes: list | None, keepdims: int, emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 3, 4, 5)
    inits = {"axes": np.array(axes, np.int64)} if axes is not None else {}
    check_emulated(node_model(op, {"x": x}, initializers=inits, opset=18, keepdims=keepdims), {"x": x}, emulated)


def test_reduce_noop_with_empty_axes_and_empty_input(emulated: str) -> None:
    x = np.arange(6, dtype=F32).reshape(2, 3)
    check_emulated(node_model("ReduceSum", {"x": x}, opset=13, noop_with_empty_axes=1), {"x": x}, emulated)
    empty = np.zeros((2, 0, 3), dtype=F32)
    inits = {"axes": np.array([1], np.int64)}
    check_emulated(node_model("ReduceMax", {"x": empty}, initializers=inits, opset=18), {"x": empty}, emulated)
    check_emulated(node_model("ReduceSum", {"x": empty}, initializers=inits, opset=18), {"x": empty}, emulated)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_extremes_with_ties(op: str, last: int, emulated: str) -> None:
    x = np.array([[1, 3, 3, 0], [2, 2, 0, 0]], dtype=F32)
    check_emulated(node_model(op, {"x": x}, axis=1, keepdims=0, select_last_index=last), {"x": x}, emulated)


# --- normalisation, softmax, attention -------------------------------------------------------------

@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset, axis", [(11, 1), (13, 1), (13, -1)])
def test_softmax(op: str, opset: int, axis: int, emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 2, 3, 4) * 20
    check_emulated(node_model(op, {"x": x}, opset=opset, axis=axis), {"x": x}, emulated)


def test_layer_norm_with_statistics(emulated: str, rng: np.random.Generator) -> None:
    feeds = {"x": r(rng, 2, 3, 4), "s": r(rng, 3, 4), "b": r(rng, 3, 4)}
    check_emulated(node_model("LayerNormalization", feeds, 3, axis=1, epsilon=1e-3), feeds, emulated)


def test_batch_and_instance_norm(emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 2, 3, 4, 5)
    params = {"scale": r(rng, 3), "bias": r(rng, 3), "mean": r(rng, 3), "var": np.abs(r(rng, 3)) + 0.1}
    check_emulated(node_model("BatchNormalization", {"x": x}, initializers=params), {"x": x}, emulated)
    feeds = {"x": x} | params  # computed parameters: the unfolded path
    check_emulated(node_model("BatchNormalization", feeds), feeds, emulated)
    feeds = {"x": x, "s": r(rng, 3), "b": r(rng, 3)}
    check_emulated(node_model("InstanceNormalization", feeds), feeds, emulated)


def test_skip_layer_norm_and_multi_head_attention(emulated: str, rng: np.random.Generator) -> None:
    x, skip, g, b = r(rng, 2, 3, 8), r(rng, 2, 3, 8), r(rng, 8), r(rng, 8)
    model = node_model("SkipLayerNormalization", {"x": x, "skip": skip, "g": g, "b": b}, 2, domain="com.onnxplug")
    total = x + skip
    mean = total.mean(-1, keepdims=True)
    var = ((total - mean) ** 2).mean(-1, keepdims=True)
    expected = (total - mean) / np.sqrt(var + 1e-5) * g + b
    assert_close(session(model, emulated).run(None, {"x": x, "skip": skip, "g": g, "b": b}), [expected, total])

    q, k, v, bias = r(rng, 2, 3, 8), r(rng, 2, 5, 8), r(rng, 2, 5, 4), r(rng, 1, 1, 3, 5)
    model = node_model("MultiHeadAttention", {"q": q, "k": k, "v": v, "bias": bias}, domain="com.onnxplug",
                       num_heads=2)
    heads = []
    for h in range(2):
        scores = q[..., 4 * h:4 * h + 4] @ k[..., 4 * h:4 * h + 4].transpose(0, 2, 1) / math.sqrt(4) + bias[:, 0]
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        heads.append(weights @ v[..., 2 * h:2 * h + 2])
    assert_close(session(model, emulated).run(None, {"q": q, "k": k, "v": v, "bias": bias}),
                 [np.concatenate(heads, axis=-1)])


# --- layout --------------------------------------------------------------------------------------

def test_layout_family(emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 2, 3, 4)
    i64 = np.int64
    cases = [
        ("Reshape", {"shape": np.array([0, -1], i64)}, {}),
        ("Transpose", {}, {"perm": [2, 0, 1]}),
        ("Flatten", {}, {"axis": 2}),
        ("Unsqueeze", {"axes": np.array([0, -1], i64)}, {}),
        ("Slice", {"starts": np.array([3, -1], i64), "ends": np.array([-100, 0], i64),
                   "axes": np.array([2, 1], i64), "steps": np.array([-2, -1], i64)}, {}),
        ("Gather", {"idx": np.array([[0, -1], [1, 2]], i64)}, {"axis": 2}),
        ("Expand", {"shape": np.array([3, 1, 1, 1], i64)}, {}),
        ("Tile", {"reps": np.array([1, 2, 1], i64)}, {}),
        ("Pad", {"pads": np.array([0, 1, -1, 0, 0, 2], i64)}, {"mode": "constant"}),
        ("Pad", {"pads": np.array([0, 2, 1, 0, 1, 2], i64)}, {"mode": "reflect"}),
        ("Pad", {"pads": np.array([0, 2, 1, 0, 1, 2], i64)}, {"mode": "edge"}),
        ("Trilu", {"k": np.array(1, i64)}, {"upper": 0}),
        ("CumSum", {"axis": np.array(1, i64)}, {"exclusive": 1, "reverse": 1}),
        ("Shape", {}, {"start": 1}),
    ]
    for op, inits, attrs in cases:
        check_emulated(node_model(op, {"x": x}, initializers=inits, opset=18, **attrs), {"x": x}, emulated)


def test_split_concat_and_gather_elements(emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 2, 7)
    check_emulated(node_model("Split", {"x": x}, 3, opset=18, axis=1, num_outputs=3), {"x": x}, emulated)
    check_emulated(node_model("Split", {"x": x}, 2, initializers={"s": np.array([5, 2], np.int64)}, axis=1),
                   {"x": x}, emulated)
    feeds = {"a": r(rng, 2, 3), "b": r(rng, 2, 0), "c": r(rng, 2, 1)}
    check_emulated(node_model("Concat", feeds, axis=-1), feeds, emulated)
    idx = np.array([[0, -1, 2], [1, 1, 0]], np.int64)
    check_emulated(node_model("GatherElements", {"x": x}, initializers={"i": idx}, axis=1), {"x": x}, emulated)


def test_casts_and_generators(emulated: str) -> None:
    x = np.array([-2.7, -0.5, 0.0, 0.4, 3.9], dtype=F32)
    for to in (6, 7, 9, 10):  # int32, int64, bool, float16
        check_emulated(node_model("Cast", {"x": x}, to=to), {"x": x}, emulated)
    shape = np.array([2, 3], np.int64)
    check_emulated(node_model("ConstantOfShape", {"s": shape}, value=__import__("onnx").numpy_helper.from_array(
        np.array([1.5], F32))), {"s": shape}, emulated)
    feeds = {"a": np.array(1.0, F32), "b": np.array(2.2, F32), "d": np.array(0.3, F32)}
    check_emulated(node_model("Range", feeds), feeds, emulated)
    i = np.array([[0, 3], [-1, 2]], np.int64)
    check_emulated(node_model("OneHot", {"i": i}, initializers={"depth": np.array(4, np.int64),
                                                                 "v": np.array([0.0, 5.0], F32)}, axis=1),
                   {"i": i}, emulated)


def test_space_depth_moves(emulated: str, rng: np.random.Generator) -> None:
    x = r(rng, 1, 8, 2, 3)
    for mode in ("DCR", "CRD"):
        check_emulated(node_model("DepthToSpace", {"x": x}, blocksize=2, mode=mode), {"x": x}, emulated)
    y = r(rng, 1, 2, 4, 6)
    check_emulated(node_model("SpaceToDepth", {"x": y}, blocksize=2), {"x": y}, emulated)


# --- recurrent -----------------------------------------------------------------------------------

@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("with_lens", [False, True])
def test_lstm(direction: str, with_lens: bool, emulated: str, rng: np.random.Generator) -> None:
    d, h, i, s, b = (2 if direction == "bidirectional" else 1), 3, 4, 5, 2
    feeds = {"x": r(rng, s, b, i), "w": r(rng, d, 4 * h, i), "r": r(rng, d, 4 * h, h), "b": r(rng, d, 8 * h)}
    names = ["x", "w", "r", "b"]
    if with_lens:
        feeds["lens"] = np.array([5, 3], np.int32)
        feeds |= {"h0": r(rng, d, b, h), "c0": r(rng, d, b, h), "p": r(rng, d, 3 * h)}
        names += ["lens", "h0", "c0", "p"]
    model = node_model("LSTM", feeds, 3, input_names=names, hidden_size=h, direction=direction)
    check_emulated(model, feeds, emulated)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("layout", [0, 1])
def test_gru(linear_before_reset: int, layout: int, emulated: str, rng: np.random.Generator) -> None:
    h, i, s, b = 3, 4, 5, 2
    x = r(rng, b, s, i) if layout else r(rng, s, b, i)
    feeds = {"x": x, "w": r(rng, 2, 3 * h, i), "r": r(rng, 2, 3 * h, h), "b": r(rng, 2, 6 * h)}
    model = node_model("GRU", feeds, 2, opset=14, hidden_size=h, direction="bidirectional", layout=layout,
                       linear_before_reset=linear_before_reset)
    check_emulated(model, feeds, emulated, reference=bool(layout))  # onnxruntime refuses layout=1


def test_einsum_hardmax_gather_nd(emulated: str, rng: np.random.Generator) -> None:
    feeds = {"a": r(rng, 2, 3, 4), "b": r(rng, 2, 4, 5)}
    check_emulated(node_model("Einsum", feeds, equation="bij,bjk->bik"), feeds, emulated)
    x = np.array([[1, 3, 3, 0], [2, 2, 0, 5]], dtype=F32)
    check_emulated(node_model("Hardmax", {"x": x}, opset=13, axis=1), {"x": x}, emulated)
    data = r(rng, 3, 4, 2)
    idx = np.array([[0, -1], [2, 1]], np.int64)
    check_emulated(node_model("GatherND", {"d": data}, initializers={"i": idx}), {"d": data}, emulated)
