"""Float32 pointwise, depthwise and stride-1 (pitched im2col) convs shared in numba prange regions (kernels/native_parallel.py),
against onnxruntime, with the fused residual and activation."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from numba_test_helpers import assert_close, node_model, run_numba, run_onnxruntime

native_parallel = pytest.importorskip("onnxplug_numba.kernels.native_parallel")
pytestmark = pytest.mark.skipif(not native_parallel.AVAILABLE or numba.config.NUMBA_NUM_THREADS < 2,
                                reason="no OpenBLAS sgemm, thread-safe numba layer or second CPU")


def _spy(monkeypatch, name: str) -> list[int]:
    calls: list[int] = []
    compiled = getattr(native_parallel, name)

    def spy(*args):  # type: ignore[no-untyped-def]
        calls.append(numba.get_num_threads())
        return compiled(*args)

    monkeypatch.setattr(native_parallel, name, spy)
    return calls


@pytest.mark.parametrize("x_shape,w_shape,attrs,kernel", [
    ((1, 32, 64, 64), (32, 32, 1, 1), {}, "pointwise_conv"),  # few output channels: column bands
    ((3, 24, 40, 40), (40, 24, 1, 1), {}, "pointwise_conv"),  # column bands that are not multiples of 16
    ((1, 64, 96, 96), (64, 1, 3, 3), {"group": 64, "pads": [1, 1, 1, 1]}, "depthwise_conv"),
    ((2, 128, 99, 99), (128, 1, 3, 3), {"group": 128, "pads": [1, 1, 1, 1], "strides": [2, 2]}, "depthwise_conv"),
    # stride-1 convs of one group: one product per tap from the padded band
    ((1, 16, 32, 32), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}, "tap_conv"),
    ((2, 64, 18, 18), (64, 64, 3, 3), {"pads": [1, 1, 1, 1]}, "tap_conv"),  # one band per image
    ((1, 16, 33, 35), (16, 16, 5, 3), {"pads": [2, 1, 2, 1]}, "tap_conv"),
    ((1, 16, 40, 40), (24, 16, 3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}, "tap_conv"),
    # groups: im2col over the padded band
    ((1, 16, 44, 44), (32, 8, 3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2], "group": 2}, "pitched_conv"),
])
@pytest.mark.parametrize("activation", ["Relu", "Clip"])
@pytest.mark.parametrize("residual", [False, True])
def test_shared_fused_conv_matches_onnxruntime(rng, monkeypatch, x_shape, w_shape, attrs, kernel, activation,
                                               residual):
    calls = _spy(monkeypatch, kernel)
    x = rng.standard_normal(x_shape).astype(np.float32)
    init = {"w": rng.standard_normal(w_shape).astype(np.float32), "b": rng.standard_normal(w_shape[0]).astype(np.float32)}
    feeds = {"x": x}
    if residual:  # the conv's output shape, from onnxruntime
        plain = node_model("Conv", {"x": x}, initializers=init, **attrs)
        out_shape = run_onnxruntime(plain, {"x": x})[0].shape
        feeds["z"] = rng.standard_normal(out_shape).astype(np.float32)
    extra = {"activation_params": [-0.5, 0.8]} if activation == "Clip" else {}
    model = node_model("FusedConv", feeds, initializers=init, domain="com.microsoft", activation=activation,
                       **attrs, **extra)
    if residual:
        model.graph.node[0].input[:] = ["x", "w", "b", "z"]
    got, _ = run_numba(model, feeds, threads=2)
    assert calls == [2], calls  # one prange region, on two threads
    # float32 sums of up to 576 products (magnitude ~25) before a clip to [-0.5, 0.8]: rounding
    # differences of ~2e-5 against onnxruntime's summation order
    assert_close(got, run_onnxruntime(model, feeds), atol=1e-4)


def test_one_thread_does_not_use_prange(rng, monkeypatch):
    calls = _spy(monkeypatch, "pointwise_conv")
    x = rng.standard_normal((1, 16, 64, 64)).astype(np.float32)
    model = node_model("Conv", {"x": x}, initializers={"w": rng.standard_normal((64, 16, 1, 1)).astype(np.float32)})
    got, _ = run_numba(model, {"x": x}, threads=1)
    assert calls == []
    assert_close(got, run_onnxruntime(model, {"x": x}))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((400, 128), (128, 96)),  # row bands
    ((16, 512), (512, 1024)),  # few rows: column bands of 16+ columns
    ((3, 100, 64), (64, 300)),  # leading axes flattened into rows
    ((2, 100, 200), (200, 130)),  # a column count that is not a multiple of 16
])
@pytest.mark.parametrize("with_bias", [False, True])
def test_shared_matmul_matches_onnxruntime(rng, monkeypatch, a_shape, b_shape, with_bias):
    from onnx import TensorProto, helper
    import onnx

    calls = _spy(monkeypatch, "matmul_bias")
    a = rng.standard_normal(a_shape).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(rng.standard_normal(b_shape).astype(np.float32), "w")]
    nodes = [helper.make_node("MatMul", ["a", "w"], ["p" if with_bias else "y"])]
    if with_bias:  # claimed as one fused MatMul + bias step
        inits.append(onnx.numpy_helper.from_array(rng.standard_normal(b_shape[1]).astype(np.float32), "bias"))
        nodes.append(helper.make_node("Add", ["p", "bias"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    got, _ = run_numba(model, {"a": a}, threads=2)
    assert calls == [2], calls
    assert_close(got, run_onnxruntime(model, {"a": a}), atol=1e-4)


def _fused_conv_relu(rng, x_shape, w_shape, attrs, residual: bool):  # type: ignore[no-untyped-def]
    """A FusedConv + Relu model with random weights and bias (and residual Z), and its feeds."""
    x = rng.standard_normal(x_shape).astype(np.float32)
    init = {"w": rng.standard_normal(w_shape).astype(np.float32), "b": rng.standard_normal(w_shape[0]).astype(np.float32)}
    feeds = {"x": x}
    if residual:
        out_shape = run_onnxruntime(node_model("Conv", {"x": x}, initializers=init, **attrs), {"x": x})[0].shape
        feeds["z"] = rng.standard_normal(out_shape).astype(np.float32)
    model = node_model("FusedConv", feeds, initializers=init, domain="com.microsoft", activation="Relu", **attrs)
    if residual:
        model.graph.node[0].input[:] = ["x", "w", "b", "z"]
    return model, feeds


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 64, 40, 40), (128, 64, 3, 3), {"pads": [1, 1, 1, 1], "strides": [1, 2]}),
    ((1, 64, 33, 15), (24, 64, 3, 3), {"pads": [0, 0, 0, 0], "dilations": [2, 1]}),  # 29 output rows
    ((1, 3, 64, 64), (32, 3, 7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),  # strided: row bands
    ((2, 16, 48, 48), (32, 8, 3, 3), {"pads": [1, 0, 1, 2], "strides": [2, 1], "group": 2}),
    ((1, 64, 60, 60), (96, 64, 1, 1), {"strides": [2, 2]}),  # strided 1x1
])
@pytest.mark.parametrize("residual", [False, True])
def test_shared_im2col_conv_matches_onnxruntime(rng, monkeypatch, x_shape, w_shape, attrs, residual):
    calls = _spy(monkeypatch, "im2col_conv")
    model, feeds = _fused_conv_relu(rng, x_shape, w_shape, attrs, residual)
    got, _ = run_numba(model, feeds, threads=2)
    assert calls == [2], calls
    assert_close(got, run_onnxruntime(model, feeds), atol=1e-4)


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 64, 14, 14), (128, 64, 3, 3), {"pads": [1, 1, 1, 1], "strides": [1, 2]}),
    ((1, 64, 9, 9), (200, 64, 3, 3), {"pads": [0, 0, 0, 0], "dilations": [2, 1]}),  # 200 rows: bands not multiples of 8
    ((1, 256, 7, 7), (512, 256, 3, 3), {"pads": [1, 1, 1, 1]}),  # ResNet's last stage
    ((1, 256, 28, 28), (512, 256, 1, 1), {"strides": [2, 2]}),  # strided 1x1 downsample
    ((1, 96, 13, 11), (128, 96, 5, 3), {"pads": [2, 0, 1, 2], "strides": [2, 1]}),  # asymmetric pads
    ((1, 160, 7, 7), (960, 160, 1, 1), {}),  # pointwise: the product only (pointwise_channel_split)
    ((1, 32, 56, 56), (100, 32, 1, 1), {}),  # pointwise, bands not multiples of 8
])
@pytest.mark.parametrize("residual", [False, True])
def test_channel_split_conv_matches_onnxruntime(rng, monkeypatch, x_shape, w_shape, attrs, residual):
    """Single images with few output pixels: im2col by input channels, then the product by output
    channels, in two prange regions (kernels/native_channels.py)."""
    from onnxplug_numba.kernels import native_channels

    calls: list[int] = []

    def spy(*args):  # type: ignore[no-untyped-def]
        calls.append(numba.get_num_threads())
        return compiled(*args)

    name = "pointwise_channel_split" if w_shape[2:] == (1, 1) and not attrs else "channel_split_conv"
    compiled = getattr(native_channels, name)
    monkeypatch.setattr(native_channels, name, spy)
    model, feeds = _fused_conv_relu(rng, x_shape, w_shape, attrs, residual)
    got, _ = run_numba(model, feeds, threads=2)
    assert calls == [2], calls
    # float32 sums of up to 2304 products: rounding differences against onnxruntime's order
    assert_close(got, run_onnxruntime(model, feeds), atol=2e-4)


def test_tap_conv_with_a_fed_weight_reads_it_on_every_run(rng, monkeypatch):
    """The tap layout of a constant weight is kept across runs; a fed one may change in place."""
    calls = _spy(monkeypatch, "tap_conv")
    x = rng.standard_normal((1, 16, 32, 32)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    model = node_model("Conv", {"x": x, "w": w}, pads=[1, 1, 1, 1])
    _, session = run_numba(model, {"x": x, "w": w}, threads=2)
    for scale in (2.0, -0.5):
        w *= scale  # the same array, new values
        assert_close(session.run(None, {"x": x, "w": w}), run_onnxruntime(model, {"x": x, "w": w}), atol=1e-4)
    assert calls == [2, 2, 2]
