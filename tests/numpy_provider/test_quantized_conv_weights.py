"""QLinearConv and ConvInteger with constant weights (initializers), whose centered weights are
prepared once per kernel and kept, in float32 where every partial sum is exact there, else in
float64: against onnxruntime, over two runs (the second uses the kept weights)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug
from onnxplug.providers.numpy.ops._quant_util import IntegerConvWeights, centered_range

RNG = np.random.default_rng(37)


def _model(op_type, x, inits, names, out_type, **attrs):
    graph = helper.make_graph(
        [helper.make_node(op_type, names, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), ["n", x.shape[1], "h", "w"])],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _check(model, xs):
    ours = onnxplug.InferenceSession(model, providers=["numpy"])
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    for x in xs:  # the first run prepares the weights, the next ones use them as kept
        for _ in range(2):
            got, want = ours.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0]
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def _ints(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return RNG.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, shape).astype(dtype)


def _qlinear_conv(x_dtype, w_dtype, channels, w_lo=None, w_hi=None, bias_hi=5000, per_channel=True, **attrs):
    m = 8
    w = _ints(w_dtype, (m, channels // attrs.get("group", 1), 3, 3), w_lo, w_hi)
    inits = {
        "xs": np.float32(0.02), "xzp": _ints(x_dtype, ()), "w": w,
        "ws": RNG.uniform(0.001, 0.01, m if per_channel else ()).astype(np.float32),
        "wzp": np.zeros(m if per_channel else (), w_dtype),
        "ys": np.float32(0.5), "yzp": _ints(x_dtype, ()),
        "b": RNG.integers(-bias_hi, bias_hi + 1, m).astype(np.int32),
    }
    x = [_ints(x_dtype, (2, channels, 9, 11)), _ints(x_dtype, (1, channels, 6, 5))]
    return _model("QLinearConv", x[0], inits, ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"],
                  helper.np_dtype_to_tensor_dtype(x[0].dtype), pads=[1, 1, 1, 1], **attrs), x


@pytest.mark.parametrize("x_dtype,w_dtype", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_channel", [True, False])
def test_qlinear_conv_kept_weights(x_dtype, w_dtype, per_channel):
    model, xs = _qlinear_conv(x_dtype, w_dtype, 4, per_channel=per_channel)
    _check(model, xs)
    model, xs = _qlinear_conv(x_dtype, w_dtype, 6, per_channel=per_channel, strides=[2, 1], group=2)
    _check(model, xs)


def _beyond_bound(w, wzp, x_range, bias=0):
    reach = np.abs(w.astype(np.int64) - wzp.astype(np.int64).reshape(-1, 1, 1, 1)).sum(axis=(1, 2, 3))
    return (reach * x_range + np.abs(bias)).max() >= 1 << 24


def test_qlinear_conv_beyond_the_float32_bound():
    """160 channels of weights from -128 to -100: 1440 taps of at least 100 x 128 pass 2**24 (float64
    path); so does a bias near 2**28, where the int32 sum's conversion to float rounds."""
    model, xs = _qlinear_conv(np.uint8, np.int8, 160, w_lo=-128, w_hi=-100)
    w = next(numpy_helper.to_array(t) for t in onnx.load_from_string(model).graph.initializer if t.name == "w")
    assert _beyond_bound(w, np.zeros(8, np.int8), 128)
    _check(model, xs)
    _check(*_qlinear_conv(np.uint8, np.int8, 2, bias_hi=1 << 28))


@pytest.mark.parametrize("x_dtype,w_dtype", [(np.uint8, np.int8), (np.uint8, np.uint8)])
@pytest.mark.parametrize("channels", [3, 160])
def test_conv_integer_kept_weights(x_dtype, w_dtype, channels):
    """3 channels: float32; 160 channels of weights at least 100 from their zero point: float64."""
    if channels == 3:
        w, wzp = _ints(w_dtype, (5, channels, 3, 3)), _ints(w_dtype, ())
    else:
        w, wzp = _ints(w_dtype, (5, channels, 3, 3), 100), np.zeros((), w_dtype)
        assert _beyond_bound(w, wzp.reshape(1), 128)
    inits = {"w": w, "xzp": _ints(x_dtype, ()), "wzp": wzp}
    x = [_ints(x_dtype, (2, channels, 7, 8)), _ints(x_dtype, (1, channels, 5, 5))]
    _check(_model("ConvInteger", x[0], inits, ["x", "w", "xzp", "wzp"], TensorProto.INT32, pads=[1, 0, 1, 2]), x)


def test_integer_conv_weights_choose_float32_only_within_the_bound():
    w = np.full((2, 4, 3, 3), -128, np.int8)  # 36 taps of 128: 4608 per unit of x range
    weights = IntegerConvWeights(constant=True)
    assert weights.get(w, np.int8(0), None, 255.0)[0].dtype == np.float32  # 4608 * 255 < 2**24
    assert weights.get(w, np.int8(0), None, 4000.0)[0].dtype == np.float64  # 4608 * 4000 > 2**24
    bias = np.array([0, 1 << 24], np.int32)
    assert weights.get(w, np.int8(0), bias, 1.0)[0].dtype == np.float64
    assert centered_range(np.dtype(np.uint8), np.uint8(0)) == 255 and centered_range(np.dtype(np.int8), None) == 128
