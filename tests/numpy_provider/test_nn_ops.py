"""Neural-network kernels of the numpy provider against onnxruntime (or onnx.reference where ORT lacks
the op/opset): convolutions, matmuls, quantised ops, normalisations, pools, activations, softmax,
resize, sampling, recurrent layers, attention. Expected values never come from onnxplug."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxplug.errors import OnnxplugError
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, node_model, run_ours

RNG = np.random.default_rng(1234)


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape) * scale, dtype=np.float32)


def i64(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# --- registration -----------------------------------------------------------------------------
NN_OPS = """Conv ConvTranspose MatMul Gemm Einsum MatMulInteger QLinearMatMul QLinearConv ConvInteger
BatchNormalization InstanceNormalization LayerNormalization GroupNormalization RMSNormalization LpNormalization
MeanVarianceNormalization LRN MaxPool AveragePool GlobalAveragePool GlobalMaxPool GlobalLpPool LpPool MaxRoiPool
RoiAlign MaxUnpool Softmax LogSoftmax Hardmax LeakyRelu PRelu Sigmoid HardSigmoid HardSwish Tanh Elu Selu Celu Gelu
Mish Softplus Softsign ThresholdedRelu Swish Dropout Resize Upsample GridSample AffineGrid Col2Im CenterCropPad TopK
LSTM GRU RNN Attention RotaryEmbedding If Loop Scan DepthToSpace SpaceToDepth""".split()


@pytest.mark.parametrize("op_type", NN_OPS)
def test_op_has_own_numpy_kernel(op_type):
    """Each op resolves to a kernel module of the numpy provider, not the onnx.reference adapter."""
    from onnxplug.providers.numpy.registry import REGISTRY

    kernel = REGISTRY.resolve("", op_type, 23)
    assert kernel is not None
    assert kernel.__module__.startswith("onnxplug.providers.numpy.ops.ai_onnx.op_"), kernel.__module__


# --- convolutions -----------------------------------------------------------------------------
CONV_CASES = [
    ("2d basic", (1, 3, 9, 9), (4, 3, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("2d stride dilation", (2, 4, 11, 10), (6, 4, 3, 2), dict(strides=[2, 1], dilations=[2, 1], pads=[1, 0, 2, 1])),
    ("2d groups", (1, 6, 8, 8), (9, 2, 3, 3), dict(group=3, pads=[1, 1, 1, 1])),
    ("depthwise s1", (2, 5, 10, 9), (5, 1, 3, 3), dict(group=5, pads=[1, 1, 1, 1])),
    ("depthwise s2 mult", (1, 4, 11, 12), (8, 1, 3, 3), dict(group=4, strides=[2, 2], pads=[1, 1, 1, 1])),
    ("depthwise dilated", (1, 3, 12, 12), (3, 1, 3, 3), dict(group=3, dilations=[2, 2], strides=[3, 2])),
    ("1x1", (2, 8, 5, 6), (4, 8, 1, 1), {}),
    ("1x1 stride groups", (1, 8, 7, 7), (6, 4, 1, 1), dict(strides=[2, 2], group=2)),
    ("same upper", (1, 2, 7, 8), (3, 2, 4, 3), dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    ("same lower", (1, 2, 7, 8), (3, 2, 4, 3), dict(auto_pad="SAME_LOWER", strides=[2, 3])),
    ("valid", (1, 2, 7, 8), (3, 2, 3, 3), dict(auto_pad="VALID", strides=[2, 2])),
    ("1d", (2, 3, 17), (5, 3, 4), dict(strides=[3], pads=[2, 1], dilations=[2])),
    ("3d", (1, 2, 6, 5, 7), (3, 2, 3, 2, 3), dict(pads=[1, 0, 1, 1, 1, 0], strides=[1, 2, 2])),
    ("3d depthwise", (1, 3, 5, 6, 7), (3, 1, 3, 3, 3), dict(group=3, pads=[1] * 6)),
    ("depthwise same upper s2", (2, 6, 10, 9), (6, 1, 3, 3), dict(group=6, strides=[2, 2], auto_pad="SAME_UPPER")),
    ("depthwise uneven pads", (1, 4, 9, 8), (4, 1, 5, 3), dict(group=4, strides=[3, 2], pads=[0, 2, 3, 1])),
    ("depthwise 1d", (2, 5, 19), (10, 1, 4), dict(group=5, strides=[2], pads=[3, 0], dilations=[2])),
]


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("images, size", [(6, 58), (64, 8)], ids=["columns", "channels last"])
def test_depthwise_conv_in_many_blocks_on_threads(monkeypatch, stride, images, size):
    """Large enough for the product threads, with blocks of a few channels: every block boundary
    and every image is checked against onnxruntime, for both formulations (more in
    test_depthwise_conv.py)."""
    feeds = {"x": f32(images, 48, size, size), "w": f32(48, 1, 3, 3), "b": f32(48)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=48, strides=[stride, stride],
                          pads=[1, 1, 1, 1], provider_options={"depthwise_block_bytes": str(64 << 10)})


@pytest.mark.parametrize("name,xs,ws,attrs", CONV_CASES, ids=[c[0] for c in CONV_CASES])
@pytest.mark.parametrize("bias", [False, True])
def test_conv(name, xs, ws, attrs, bias):
    feeds = {"x": f32(*xs), "w": f32(*ws)}
    if bias:
        feeds["b"] = f32(ws[0])
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, **attrs)


def test_conv_float16_accumulates_in_float32():
    feeds = {"x": f32(1, 8, 6, 6).astype(np.float16), "w": f32(4, 8, 3, 3).astype(np.float16)}
    assert_matches_oracle("Conv", feeds, rtol=2e-3, atol=2e-3, opset=17, pads=[1, 1, 1, 1])


CONVT_CASES = [
    ("basic", (1, 2, 4, 5), (2, 3, 3, 3), {}),
    ("stride pads", (2, 3, 5, 4), (3, 2, 3, 3), dict(strides=[2, 2], pads=[1, 0, 1, 1])),
    ("output_padding", (1, 2, 4, 4), (2, 3, 3, 3), dict(strides=[3, 2], output_padding=[1, 1])),
    ("output_shape", (1, 2, 4, 4), (2, 3, 3, 3), dict(strides=[2, 2], output_shape=[9, 10])),
    ("groups dilation", (1, 4, 5, 5), (4, 3, 2, 3), dict(group=2, dilations=[2, 1], strides=[1, 2])),
    ("same upper", (1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    ("1d", (2, 3, 6), (3, 2, 4), dict(strides=[2], pads=[1, 2])),
    ("3d", (1, 2, 3, 3, 4), (2, 2, 2, 3, 2), dict(strides=[2, 1, 2])),
]


@pytest.mark.parametrize("name,xs,ws,attrs", CONVT_CASES, ids=[c[0] for c in CONVT_CASES])
def test_conv_transpose(name, xs, ws, attrs):
    feeds = {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[1] * attrs.get("group", 1))}
    assert_matches_oracle("ConvTranspose", feeds, rtol=1e-4, atol=1e-4, opset=17, **attrs)


def test_conv_channel_mismatch_is_a_typed_error():
    model = node_model("Conv", {"x": f32(1, 3, 5, 5), "w": f32(2, 4, 3, 3)}, opset=17)
    with pytest.raises(OnnxplugError, match="Conv"):
        run_ours(model, {"x": f32(1, 3, 5, 5), "w": f32(2, 4, 3, 3)}, like=[f32(1, 2, 3, 3)])


# --- matmul family ----------------------------------------------------------------------------
@pytest.mark.parametrize("a,b", [((3, 4), (4, 5)), ((4,), (4, 2)), ((2, 4), (4,)), ((2, 1, 3, 4), (5, 4, 6)),
                                 ((4,), (4,))])
def test_matmul_broadcasting(a, b):
    assert_matches_oracle("MatMul", {"a": f32(*a), "b": f32(*b)}, rtol=1e-5, atol=1e-5, opset=13)


def test_matmul_int32_and_float16():
    assert_matches_oracle("MatMul", {"a": RNG.integers(-5, 5, (3, 4)).astype(np.int32),
                     "b": RNG.integers(-5, 5, (4, 2)).astype(np.int32)}, opset=13)
    assert_matches_oracle("MatMul", {"a": f32(3, 8).astype(np.float16), "b": f32(8, 2).astype(np.float16)},
          rtol=2e-3, atol=2e-3, opset=13)


@pytest.mark.parametrize("attrs,cshape", [
    ({}, (5,)), (dict(alpha=0.5, beta=2.0), (3, 5)), (dict(transA=1), (1, 5)), (dict(transB=1, beta=0.0), (3, 1)),
    (dict(transA=1, transB=1, alpha=-1.5), ()), ({}, None)])
def test_gemm(attrs, cshape):
    a = f32(4, 3) if attrs.get("transA") else f32(3, 4)
    b = f32(5, 4) if attrs.get("transB") else f32(4, 5)
    feeds = {"a": a, "b": b}
    if cshape is not None:
        feeds["c"] = f32(*cshape)
    assert_matches_oracle("Gemm", feeds, rtol=1e-5, atol=1e-5, opset=13, **attrs)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("ii->i", [(4, 4)]),
    ("...ij->...ji", [(2, 3, 4)]), ("i,i", [(5,), (5,)]), ("ij->", [(3, 3)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)])])
def test_einsum(equation, shapes):
    feeds = {f"x{i}": f32(*s) for i, s in enumerate(shapes)}
    assert_matches_oracle("Einsum", feeds, rtol=1e-5, atol=1e-5, opset=12, equation=equation)


@pytest.mark.parametrize("adt,bdt", [(np.uint8, np.uint8), (np.int8, np.int8), (np.uint8, np.int8)])
def test_matmul_integer(adt, bdt):
    a = RNG.integers(np.iinfo(adt).min, np.iinfo(adt).max, (4, 7)).astype(adt)
    b = RNG.integers(np.iinfo(bdt).min, np.iinfo(bdt).max, (2, 7, 3)).astype(bdt)
    azp, bzp = np.arange(4).astype(adt), np.array([1, 2, 0], bdt)
    feeds = {"a": a, "b": b, "azp": azp, "bzp": bzp}
    model = node_model("MatMulInteger", feeds, opset=10)
    expected = (a.astype(np.int64) - azp[:, None].astype(np.int64)) @ (b.astype(np.int64) - bzp.astype(np.int64))
    (ours,) = run_ours(model, feeds)
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(ours, expected)  # per-row / per-column zero points, exact
    if adt == bdt:  # onnxruntime's u8s8 path saturates int16 partial sums on AVX2
        assert_matches_oracle("MatMulInteger", {"a": a, "b": b, "azp": np.array(3, adt), "bzp": np.array(2, bdt)}, opset=10)
        assert_matches_oracle("MatMulInteger", {"a": a, "b": b[0]}, opset=10)


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_qlinear_matmul(dt):
    info = np.iinfo(dt)
    a = RNG.integers(info.min, info.max, (2, 3, 8)).astype(dt)
    b = RNG.integers(info.min, info.max, (8, 5)).astype(dt)
    feeds = {"a": a, "as": np.array(0.05, np.float32), "azp": np.array(4, dt), "b": b,
             "bs": np.array(0.02, np.float32), "bzp": np.array(-2 if dt == np.int8 else 130, dt),
             "ys": np.array(0.1, np.float32), "yzp": np.array(1, dt)}
    assert_matches_oracle("QLinearMatMul", feeds, opset=10)


def test_conv_integer_and_qlinear_conv_per_channel():
    x = RNG.integers(0, 255, (1, 3, 7, 7)).astype(np.uint8)
    w = RNG.integers(0, 255, (4, 3, 3, 3)).astype(np.uint8)
    assert_matches_oracle("ConvInteger", {"x": x, "w": w, "xzp": np.array(128, np.uint8), "wzp": np.array(120, np.uint8)},
          opset=10, pads=[1, 1, 1, 1], strides=[2, 2])
    wq = RNG.integers(-127, 127, (4, 3, 3, 3)).astype(np.int8)
    feeds = {"x": x, "xs": np.array(0.02, np.float32), "xzp": np.array(128, np.uint8), "w": wq,
             "ws": np.array([0.01, 0.02, 0.015, 0.03], np.float32), "wzp": np.zeros(4, np.int8),
             "ys": np.array(0.05, np.float32), "yzp": np.array(100, np.uint8),
             "b": RNG.integers(-500, 500, 4).astype(np.int32)}
    # onnxruntime's u8s8 kernel saturates int16 partial sums on AVX2, so exact integer arithmetic
    # is checked against onnx.reference; u8u8 against onnxruntime
    assert_matches_oracle("QLinearConv", feeds, oracle="ref", opset=10, pads=[1, 1, 1, 1])
    feeds.update(w=RNG.integers(0, 255, (4, 3, 3, 3)).astype(np.uint8), wzp=np.array([3, 120, 128, 7], np.uint8))
    assert_matches_oracle("QLinearConv", feeds, opset=10, pads=[1, 1, 1, 1], strides=[2, 1])


# --- normalisation ----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 2)])
def test_batch_normalization_inference(shape):
    c = shape[1]
    feeds = {"x": f32(*shape), "s": f32(c), "b": f32(c), "m": f32(c), "v": np.abs(f32(c)) + 0.5}
    assert_matches_oracle("BatchNormalization", feeds, rtol=1e-5, atol=1e-5, opset=15, epsilon=1e-3)


def test_batch_normalization_training_outputs():
    feeds = {"x": f32(3, 2, 4, 5), "s": f32(2), "b": f32(2), "m": f32(2), "v": np.abs(f32(2)) + 0.5}
    assert_matches_oracle("BatchNormalization", feeds, oracle="ref", n_outputs=3, rtol=1e-5, atol=1e-5, opset=15,
          training_mode=1, momentum=0.8)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5)])
def test_instance_normalization(shape):
    assert_matches_oracle("InstanceNormalization", {"x": f32(*shape), "s": f32(shape[1]), "b": f32(shape[1])},
          rtol=1e-4, atol=1e-5, opset=6, epsilon=1e-4)


@pytest.mark.parametrize("axis", [-1, 1, 2])
def test_layer_normalization_with_stash_outputs(axis):
    x = f32(2, 3, 4, 5)
    norm_shape = x.shape[axis:] if axis >= 0 else x.shape[-1:]
    feeds = {"x": x, "s": f32(*norm_shape), "b": f32(*norm_shape)}
    assert_matches_oracle("LayerNormalization", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=17, axis=axis)


@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_group_normalization(groups):
    assert_matches_oracle("GroupNormalization", {"x": f32(2, 6, 3, 4), "s": f32(6), "b": f32(6)}, oracle="ref",
          rtol=1e-4, atol=1e-5, opset=21, num_groups=groups, epsilon=1e-3)


@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_normalization(axis):
    x = f32(2, 3, 4)
    assert_matches_oracle("RMSNormalization", {"x": x, "s": f32(*x.shape[axis:])}, oracle="ref", rtol=1e-5, atol=1e-6,
          opset=23, axis=axis)


@pytest.mark.parametrize("p,axis", [(1, -1), (2, 1)])
def test_lp_normalization(p, axis):
    assert_matches_oracle("LpNormalization", {"x": f32(3, 4, 5)}, rtol=1e-5, atol=1e-6, opset=13, p=p, axis=axis)


def test_mean_variance_normalization_and_lrn():
    # onnx's strict shape inference fails on this function op's body, so the model is built by hand
    # and the expected value is the ONNX function written out in float64
    x = f32(2, 3, 4, 5)
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 2, 3])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (ours,) = run_ours(model, {"x": x})
    xd = x.astype(np.float64)
    mean = xd.mean(axis=(0, 2, 3), keepdims=True)
    std = np.sqrt((xd * xd).mean(axis=(0, 2, 3), keepdims=True) - mean * mean)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, (xd - mean) / (std + 1e-9), rtol=1e-4, atol=1e-5)
    assert_matches_oracle("LRN", {"x": f32(2, 7, 3, 3)}, rtol=1e-5, atol=1e-6, opset=13, size=3, alpha=1e-3, beta=0.6, bias=1.5)
    # even sizes: onnxruntime refuses them and onnx.reference's LRN loops over the batch axis, so the
    # spec's window [c - floor((size-1)/2), c + ceil((size-1)/2)] is written out here
    x = f32(1, 5, 4, 4)
    model = node_model("LRN", {"x": x}, opset=13, size=4)
    (ours,) = run_ours(model, {"x": x})
    sq = np.square(x.astype(np.float64))
    window = np.stack([sq[:, max(0, c - 1):min(5, c + 3)].sum(axis=1) for c in range(5)], axis=1)
    np.testing.assert_allclose(ours, x / (1.0 + 1e-4 / 4 * window) ** 0.75, rtol=1e-5, atol=1e-6)


# --- pooling ----------------------------------------------------------------------------------
POOL_CASES = [
    ("basic", (1, 2, 7, 7), dict(kernel_shape=[3, 3])),
    ("stride pads", (2, 3, 9, 8), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1])),
    ("ceil", (1, 2, 8, 7), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("ceil pads", (1, 1, 9, 9), dict(kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ("same upper", (1, 2, 7, 6), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("same lower", (1, 2, 7, 6), dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
    ("1d", (2, 3, 10), dict(kernel_shape=[4], strides=[3], pads=[1, 2])),
    ("3d", (1, 2, 5, 6, 5), dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0])),
    # every stride > 1: windows clipped to the input instead of a padded copy
    ("3d strided", (1, 2, 7, 6, 5), dict(kernel_shape=[2, 3, 2], strides=[2, 2, 3], pads=[1, 1, 0, 0, 1, 1])),
    ("dilated strided", (1, 2, 11, 10), dict(kernel_shape=[3, 2], dilations=[2, 3], strides=[2, 2], pads=[2, 1, 1, 2])),
    ("resnet stem", (2, 4, 16, 16), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("no tap in every window", (1, 2, 4, 6), dict(kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1])),
]


@pytest.mark.parametrize("name,shape,attrs", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_max_pool_with_indices(name, shape, attrs):
    assert_matches_oracle("MaxPool", {"x": f32(*shape)}, n_outputs=2, opset=12, **attrs)


@pytest.mark.parametrize("name,shape,attrs", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_max_pool(name, shape, attrs):
    x = f32(*shape)
    x[..., 0] = -5.0  # the edge values that padding must never beat
    assert_matches_oracle("MaxPool", {"x": x}, opset=12, **attrs)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_dilations_storage_order(storage_order):
    assert_matches_oracle("MaxPool", {"x": f32(2, 3, 9, 8)}, n_outputs=2, opset=12, kernel_shape=[2, 3], dilations=[2, 2],
          strides=[1, 2], pads=[1, 1, 0, 1], storage_order=storage_order)


def test_max_pool_int8():
    assert_matches_oracle("MaxPool", {"x": RNG.integers(-128, 127, (1, 2, 6, 6)).astype(np.int8)}, opset=12,
          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])


@pytest.mark.parametrize("name,shape,attrs", POOL_CASES, ids=[c[0] for c in POOL_CASES])
@pytest.mark.parametrize("include_pad", [0, 1])
def test_average_pool(name, shape, attrs, include_pad):
    assert_matches_oracle("AveragePool", {"x": f32(*shape)}, rtol=1e-5, atol=1e-6, opset=19, count_include_pad=include_pad, **attrs)


@pytest.mark.parametrize("name,shape,attrs", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_pools_split_over_the_product_threads_match(monkeypatch, parallel_for_calls, name, shape, attrs):
    """Pools worth splitting (here: made so) reduce blocks of (image, channel) planes on both product
    threads: the same values as onnxruntime's, for max (exactly) and average pools."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.ops import _pool_util

    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    split = parallel_for_calls(_pool_util)
    x = f32(*shape)
    options = {"split_product_macs": "1"}
    assert_matches_oracle("MaxPool", {"x": x}, rtol=0, atol=0, opset=12, provider_options=options, **attrs)
    assert_matches_oracle("AveragePool", {"x": x}, rtol=1e-5, atol=1e-6, opset=19, count_include_pad=1,
                          provider_options=options, **attrs)
    assert [ran for _, ran in split] == ([True, True] if shape[0] * shape[1] > 1 else [])


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_and_global_pools(p):
    assert_matches_oracle("LpPool", {"x": f32(1, 2, 7, 6)}, rtol=1e-4, atol=1e-5, opset=18, kernel_shape=[3, 2], strides=[2, 1],
          pads=[1, 0, 1, 1], p=p)
    assert_matches_oracle("GlobalLpPool", {"x": f32(2, 3, 4, 5)}, rtol=1e-4, atol=1e-5, opset=2, p=p)
    for op_type in ("GlobalAveragePool", "GlobalMaxPool"):
        assert_matches_oracle(op_type, {"x": f32(2, 3, 4, 5, 2)}, rtol=1e-5, atol=1e-6, opset=13)


@pytest.mark.parametrize("shape", [(1, 16, 32, 32), (3, 5, 7), (2, 3, 4, 5, 2)])
def test_global_average_pool_float16_sums_in_float32(shape):
    x = (f32(*shape) * 4 + 60).astype(np.float16)  # a float16 running sum would drift by several ulp
    expected = np.mean(x.astype(np.float32), axis=tuple(range(2, x.ndim)), keepdims=True).astype(np.float16)
    (ours,) = run_ours(node_model("GlobalAveragePool", {"x": x}, opset=13), {"x": x}, like=[expected])
    assert ours.dtype == np.float16 and np.array_equal(ours, expected)


@pytest.mark.parametrize("shape,axes,keepdims", [((16, 1, 32), [0], 0), ((3, 4, 5), [1, 2], 1), ((6, 7), [-1], 0),
                                                 ((2, 3, 4), None, 0)])
def test_reduce_mean_float32_and_float64(shape, axes, keepdims):
    for dtype in (np.float32, np.float64):
        attrs = {"keepdims": keepdims} if axes is None else {"axes": axes, "keepdims": keepdims}
        assert_matches_oracle("ReduceMean", {"x": f32(*shape, scale=50).astype(dtype)}, rtol=1e-6, atol=1e-6,
                              opset=13, **attrs)


def test_gemm_float16_accumulates_in_float32():
    a, b, c = f32(3, 40).astype(np.float16), f32(5, 40).astype(np.float16), f32(5).astype(np.float16)
    assert_matches_oracle("Gemm", {"a": a, "b": b, "c": c}, rtol=2e-3, atol=2e-3, opset=13, transB=1, alpha=0.5)


def test_max_unpool_inverts_max_pool_indices():
    x = f32(1, 2, 6, 6)
    pooled, indices = assert_matches_oracle("MaxPool", {"x": x}, n_outputs=2, opset=12, kernel_shape=[2, 2], strides=[2, 2])
    assert_matches_oracle("MaxUnpool", {"x": pooled, "i": indices}, opset=11, kernel_shape=[2, 2], strides=[2, 2])
    assert_matches_oracle("MaxUnpool", {"x": pooled, "i": indices, "shape": i64(1, 2, 7, 7)}, oracle="ref", opset=11,
          kernel_shape=[2, 2], strides=[2, 2])


def test_max_roi_pool_and_roi_align():
    x = f32(2, 3, 10, 12)
    rois = np.array([[0, 1, 1, 8, 6], [1, 0, 2, 11, 9], [0, 3.4, 2.2, 5.7, 7.9]], np.float32)
    assert_matches_oracle("MaxRoiPool", {"x": x, "rois": rois}, opset=1, pooled_shape=[3, 2], spatial_scale=1.0)
    boxes = rois[:, 1:]
    batch = np.array([0, 1, 0], np.int64)
    for mode in ("avg", "max"):
        for ctm in ("half_pixel", "output_half_pixel"):
            assert_matches_oracle("RoiAlign", {"x": x, "rois": boxes, "b": batch}, rtol=1e-4, atol=1e-5, opset=16, mode=mode,
                  output_height=3, output_width=4, sampling_ratio=2, spatial_scale=0.9,
                  coordinate_transformation_mode=ctm)
    assert_matches_oracle("RoiAlign", {"x": x, "rois": boxes, "b": batch}, rtol=1e-4, atol=1e-5, opset=16, output_height=2,
          output_width=2, sampling_ratio=0)


# --- softmax family and activations -------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset,axis", [(11, None), (11, 0), (11, 2), (13, None), (13, 1), (13, -3)])
def test_softmax_family_axis_semantics(op_type, opset, axis):
    attrs = {} if axis is None else {"axis": axis}
    x = f32(2, 3, 4)
    if op_type == "Hardmax":
        x[0, 0, :2] = 5.0  # ties: the first maximum wins
    assert_matches_oracle(op_type, {"x": x}, rtol=1e-5, atol=1e-6, opset=opset, **attrs)


ACTIVATIONS = [
    ("LeakyRelu", dict(alpha=0.2), 16), ("Sigmoid", {}, 13), ("HardSigmoid", dict(alpha=0.3, beta=0.4), 6),
    ("HardSwish", {}, 14), ("Tanh", {}, 13), ("Elu", dict(alpha=0.7), 6), ("Selu", dict(alpha=1.5, gamma=1.1), 6),
    ("Celu", dict(alpha=0.8), 12), ("Gelu", {}, 20), ("Gelu", dict(approximate="tanh"), 20), ("Mish", {}, 18),
    ("Softplus", {}, 1), ("Softsign", {}, 1), ("ThresholdedRelu", dict(alpha=0.5), 10),
]


@pytest.mark.parametrize("op_type,attrs,opset", ACTIVATIONS, ids=[f"{a[0]}{a[1]}" for a in ACTIVATIONS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations(op_type, attrs, opset, dtype):
    x = (f32(3, 50, scale=4.0)).astype(dtype)
    x[0, :4] = [0.0, -100.0, 100.0, -0.5]
    assert_matches_oracle(op_type, {"x": x}, rtol=1e-5, atol=1e-6, opset=opset, **attrs)


def test_swish_and_prelu():
    assert_matches_oracle("Swish", {"x": f32(4, 6)}, oracle="ref", rtol=1e-5, atol=1e-6, opset=24, alpha=0.7)
    assert_matches_oracle("PRelu", {"x": f32(2, 3, 4), "slope": f32(3, 1)}, rtol=1e-6, atol=1e-6, opset=16)
    assert_matches_oracle("PRelu", {"x": f32(2, 3, 4), "slope": f32(4)}, rtol=1e-6, atol=1e-6, opset=16)


def test_dropout_inference_is_identity_with_true_mask():
    x = f32(3, 4)
    assert_matches_oracle("Dropout", {"x": x}, n_outputs=2, opset=13)
    assert_matches_oracle("Dropout", {"x": x, "r": np.array(0.3, np.float32), "t": np.array(False)}, n_outputs=2, opset=13)


def test_dropout_training_mask_and_scale():
    x = np.abs(f32(40, 50)) + 0.1
    feeds = {"x": x, "r": np.array(0.25, np.float32), "t": np.array(True)}
    model = node_model("Dropout", feeds, n_outputs=2, opset=13, seed=7)
    y, mask = run_ours(model, feeds)
    y2, mask2 = run_ours(model, feeds)
    assert mask.dtype == np.bool_ and y.dtype == np.float32
    np.testing.assert_array_equal(mask, mask2)  # a seed makes the mask reproducible
    np.testing.assert_allclose(y, np.where(mask, x / 0.75, 0), rtol=1e-6)
    assert 0.18 < 1 - mask.mean() < 0.32  # about `ratio` of the elements dropped


# --- resize and sampling ----------------------------------------------------------------------
RESIZE_MODES = [
    ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"), ("nearest", "pytorch_half_pixel", "ceil"),
    ("linear", "half_pixel", None), ("linear", "align_corners", None), ("linear", "asymmetric", None),
    ("linear", "pytorch_half_pixel", None), ("cubic", "half_pixel", None), ("cubic", "asymmetric", None),
]


@pytest.mark.parametrize("mode,ctm,nearest", RESIZE_MODES, ids=["-".join(filter(None, m)) for m in RESIZE_MODES])
@pytest.mark.parametrize("scales", [(1, 1, 2.0, 1.5), (1, 1, 0.6, 0.75)])
def test_resize_scales(mode, ctm, nearest, scales):
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    if nearest:
        attrs["nearest_mode"] = nearest
    feeds = {"x": f32(1, 2, 5, 6), "roi": np.zeros(0, np.float32), "scales": np.array(scales, np.float32)}
    # align_corners with a fractional output length: onnx divides by (scale * length - 1) where
    # onnxruntime uses the integer length; the ONNX backend tests follow onnx
    oracle = "ref" if ctm == "align_corners" and scales[3] == 0.75 else "ort"
    assert_matches_oracle("Resize", feeds, oracle=oracle, rtol=1e-4, atol=1e-5, opset=13, **attrs)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("antialias", [0, 1])
def test_resize_sizes_antialias_exclude_outside(mode, antialias):
    feeds = {"x": f32(1, 2, 9, 10), "sizes": i64(1, 2, 4, 13)}
    assert_matches_oracle("Resize", feeds, rtol=1e-4, atol=1e-5, opset=18, input_names=["x", "", "", "sizes"], mode=mode,
          antialias=antialias,
          exclude_outside=1 if mode == "cubic" else 0, cubic_coeff_a=-0.5)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_resize_keep_aspect_ratio_with_axes(policy):
    feeds = {"x": f32(2, 6, 8, 3), "sizes": i64(4, 9)}
    assert_matches_oracle("Resize", feeds, rtol=1e-4, atol=1e-5, opset=18, input_names=["x", "", "", "sizes"], mode="linear",
          axes=[1, 2],
          keep_aspect_ratio_policy=policy)


def test_resize_tf_crop_and_resize_and_uint8():
    feeds = {"x": f32(1, 1, 6, 6), "roi": np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], np.float32),
             "sizes": i64(1, 1, 4, 5)}
    assert_matches_oracle("Resize", feeds, rtol=1e-4, atol=1e-5, opset=13, input_names=["x", "roi", "", "sizes"], mode="linear",
          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)
    img = RNG.integers(0, 255, (1, 3, 5, 5)).astype(np.uint8)
    assert_matches_oracle("Resize", {"x": img, "roi": np.zeros(0, np.float32), "scales": np.array([1, 1, 1.6, 1.6], np.float32)},
          atol=1, opset=13, mode="linear")


def test_upsample_nearest_and_linear():
    assert_matches_oracle("Upsample", {"x": f32(1, 2, 3, 4), "s": np.array([1, 1, 2, 3], np.float32)}, opset=9, mode="nearest")
    assert_matches_oracle("Upsample", {"x": f32(1, 2, 3, 4), "s": np.array([1, 1, 2, 1.5], np.float32)}, rtol=1e-5, atol=1e-6,
          opset=9, mode="linear")


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode, padding, align):
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 5, 2)).astype(np.float32)
    feeds = {"x": f32(2, 3, 5, 6), "grid": grid}
    assert_matches_oracle("GridSample", feeds, oracle="ref", rtol=1e-4, atol=1e-5, opset=20, mode=mode, padding_mode=padding,
          align_corners=align)
    if not (mode == "cubic" and padding == "border"):  # onnxruntime clamps bicubic taps differently there
        assert_matches_oracle("GridSample", feeds, rtol=1e-4, atol=1e-5, opset=16, padding_mode=padding, align_corners=align,
              mode={"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode))


def test_grid_sample_3d_linear():
    grid = RNG.uniform(-1.1, 1.1, (1, 3, 4, 2, 3)).astype(np.float32)
    assert_matches_oracle("GridSample", {"x": f32(1, 2, 4, 5, 3), "grid": grid}, oracle="ref", rtol=1e-4, atol=1e-5, opset=20,
          mode="linear", padding_mode="border")


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_2d_3d(align):
    assert_matches_oracle("AffineGrid", {"theta": f32(2, 2, 3), "size": i64(2, 3, 4, 5)}, oracle="ref", rtol=1e-5, atol=1e-6,
          opset=20, align_corners=align)
    assert_matches_oracle("AffineGrid", {"theta": f32(1, 3, 4), "size": i64(1, 1, 2, 3, 4)}, oracle="ref", rtol=1e-5, atol=1e-6,
          opset=20, align_corners=align)


def test_col2im_center_crop_pad_depth_space():
    assert_matches_oracle("Col2Im", {"x": f32(2, 2 * 6, 15), "img": i64(5, 6), "block": i64(2, 3)}, oracle="ref", rtol=1e-5,
          atol=1e-6, opset=18, strides=[2, 1], pads=[1, 0, 0, 1], dilations=[1, 1])
    assert_matches_oracle("CenterCropPad", {"x": f32(5, 6, 3), "shape": i64(3, 9)}, oracle="ref", opset=18, axes=[0, 1])
    assert_matches_oracle("CenterCropPad", {"x": f32(4, 7), "shape": i64(7, 2)}, oracle="ref", opset=18)
    for mode in ("DCR", "CRD"):
        assert_matches_oracle("DepthToSpace", {"x": f32(2, 8, 3, 2)}, opset=13, blocksize=2, mode=mode)
    assert_matches_oracle("SpaceToDepth", {"x": f32(2, 3, 4, 6)}, opset=13, blocksize=2)


@pytest.mark.parametrize("largest,axis", [(1, -1), (0, 0), (1, 1)])
def test_top_k_with_ties(largest, axis):
    x = RNG.integers(0, 4, (5, 6)).astype(np.float32)  # many ties: lower indices first
    assert_matches_oracle("TopK", {"x": x, "k": i64(3)}, n_outputs=2, opset=11, largest=largest, axis=axis)
    assert_matches_oracle("TopK", {"x": x.astype(np.int32), "k": i64(2)}, n_outputs=2, opset=11, largest=largest, axis=axis)


# --- recurrent layers -------------------------------------------------------------------------
def _rnn_feeds(gates, directions, hidden=5, seq=4, batch=3, inp=3, lens=None, init=False, layout=0, extra=()):
    x = f32(batch, seq, inp) if layout else f32(seq, batch, inp)
    feeds = {"x": x, "w": f32(directions, gates * hidden, inp, scale=0.5),
             "r": f32(directions, gates * hidden, hidden, scale=0.5),
             "b": f32(directions, 2 * gates * hidden, scale=0.5)}
    names = ["x", "w", "r", "b", "", ""]
    if lens is not None:
        feeds["lens"] = np.asarray(lens, np.int32)
        names[4] = "lens"
    if init:
        for k in extra or ("h0",):
            feeds[k] = f32(batch, directions, hidden) if layout else f32(directions, batch, hidden)
        names = names[:5] + list(extra or ("h0",))
    return feeds, [n for n in names]


RNN_CONFIGS = [
    ("forward", None, False, 0), ("reverse", [4, 2, 3], True, 0), ("bidirectional", None, True, 0),
    ("bidirectional", [1, 4, 2], False, 0), ("bidirectional", None, True, 1),  # layout 1: onnx.reference
]


def _trim(names):
    while names and names[-1] == "":
        names = names[:-1]
    return names


@pytest.mark.parametrize("direction,lens,init,layout", RNN_CONFIGS)
def test_lstm(direction, lens, init, layout):
    d = 2 if direction == "bidirectional" else 1
    feeds, names = _rnn_feeds(4, d, lens=lens, init=init, layout=layout, extra=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=_trim(names),
          direction=direction, hidden_size=5, layout=layout)


def test_lstm_peepholes_input_forget_clip_activations():
    feeds, names = _rnn_feeds(4, 2, init=True, extra=("h0", "c0"))
    feeds["p"] = f32(2, 15, scale=0.5)
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=names + ["p"],
          direction="bidirectional", hidden_size=5, input_forget=1, clip=0.8)
    feeds, names = _rnn_feeds(4, 1, lens=[4, 3, 1])
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=_trim(names), hidden_size=5,
          activations=["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha=[0.3, 0.1], activation_beta=[0.4])


@pytest.mark.parametrize("direction,lens,init,layout", RNN_CONFIGS)
@pytest.mark.parametrize("lbr", [0, 1])
def test_gru(direction, lens, init, layout, lbr):
    d = 2 if direction == "bidirectional" else 1
    feeds, names = _rnn_feeds(3, d, lens=lens, init=init, layout=layout)
    assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=_trim(names),
          direction=direction, hidden_size=5, layout=layout, linear_before_reset=lbr)


def test_gru_clip_and_activations():
    feeds, names = _rnn_feeds(3, 2, init=True)
    assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=names, direction="bidirectional",
          hidden_size=5, clip=0.5, activations=["Sigmoid", "Relu", "HardSigmoid", "Tanh"],
          activation_alpha=[0.25], activation_beta=[0.5])


@pytest.mark.parametrize("direction,lens,init,layout", RNN_CONFIGS)
def test_rnn(direction, lens, init, layout):
    d = 2 if direction == "bidirectional" else 1
    feeds, names = _rnn_feeds(1, d, lens=lens, init=init, layout=layout)
    assert_matches_oracle("RNN", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=_trim(names),
          direction=direction, hidden_size=5, layout=layout)
    if d == 2 and layout == 0:
        assert_matches_oracle("RNN", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=_trim(names),
              direction=direction, hidden_size=5, layout=layout, activations=["Relu", "Sigmoid"])


# --- attention --------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["plain", "causal", "mask", "boolmask", "gqa", "past", "softcap", "3d"])
def test_attention_23(variant):
    b, hq, hkv, s, kv, d = 2, 4, 4, 3, 5, 8
    if variant == "gqa":
        hkv = 2
    if variant == "3d":
        feeds = {"q": f32(b, s, hq * d), "k": f32(b, kv, hkv * d), "v": f32(b, kv, hkv * d)}
        attrs = dict(q_num_heads=hq, kv_num_heads=hkv)
    else:
        feeds = {"q": f32(b, hq, s, d), "k": f32(b, hkv, kv, d), "v": f32(b, hkv, kv, d)}
        attrs = {}
    names = ["q", "k", "v"]
    if variant == "causal":
        attrs["is_causal"] = 1
    if variant == "mask":
        feeds["m"] = f32(s, kv)
        names.append("m")
    if variant == "boolmask":
        feeds["m"] = RNG.random((b, 1, s, kv)) > 0.3
        names.append("m")
    if variant == "past":
        feeds.update(m=f32(s, kv + 2), pk=f32(b, hkv, 2, d), pv=f32(b, hkv, 2, d))
        names += ["m", "pk", "pv"]
        attrs["is_causal"] = 1
    if variant == "softcap":
        attrs.update(softcap=2.0, scale=0.3, qk_matmul_output_mode=3)
    n_out = 4 if variant in ("past", "softcap") else 1
    assert_matches_oracle("Attention", feeds, oracle="ref", n_outputs=n_out, rtol=1e-5, atol=1e-6, opset=23, input_names=names,
          **attrs)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding(interleaved):
    x = f32(2, 3, 4, 8)
    cos, sin = f32(10, 2), f32(10, 2)
    feeds = {"x": x, "cos": cos, "sin": sin, "pos": RNG.integers(0, 10, (2, 4)).astype(np.int64)}
    assert_matches_oracle("RotaryEmbedding", feeds, oracle="ref", rtol=1e-6, atol=1e-6, opset=23, interleaved=interleaved,
          rotary_embedding_dim=4)
    feeds3 = {"x": f32(2, 4, 16), "cos": f32(2, 4, 2), "sin": f32(2, 4, 2)}
    assert_matches_oracle("RotaryEmbedding", feeds3, oracle="ref", rtol=1e-6, atol=1e-6, opset=23, interleaved=interleaved,
          num_heads=4)
