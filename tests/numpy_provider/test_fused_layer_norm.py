"""com.onnxplug SkipLayerNormalization and LayerNormalization kernels against onnxruntime's
com.microsoft SkipLayerNormalization and ai.onnx LayerNormalization, across several row blocks."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxplug
from tests.numpy_provider.single_node_oracle import kernels_only
from tests.oracle import ort_outputs

RNG = np.random.default_rng(21)
_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}


def _model(op_type: str, domain: str, feeds: dict, outputs: list[str], opset: int = 17, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op_type, list(feeds), outputs, domain=domain, **attrs)
    inputs = [helper.make_tensor_value_info(name, _TYPES[value.dtype.type], list(value.shape))
              for name, value in feeds.items()]
    outs = [helper.make_tensor_value_info(name, _TYPES[next(iter(feeds.values())).dtype.type], None)
            for name in outputs if name]
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(helper.make_graph([node], "g", inputs, outs), ir_version=9, opset_imports=imports)


def _ours(model: onnx.ModelProto, feeds: dict, **numpy_options: str) -> list:
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(),
                                        providers=[("numpy", numpy_options)])
    return session.run(None, feeds)


def _skip_feeds(shape: tuple, dtype, with_bias: bool) -> dict:
    width = shape[-1]
    feeds = {"x": 2 * RNG.standard_normal(shape) + 1, "skip": RNG.standard_normal(shape),
             "gamma": 1 + 0.1 * RNG.standard_normal(width), "beta": 0.1 * RNG.standard_normal(width)}
    if with_bias:
        feeds["bias"] = 0.2 * RNG.standard_normal(width)
    return {name: value.astype(dtype) for name, value in feeds.items()}


@pytest.mark.parametrize("shape", [(1, 128, 256), (3, 200, 384), (5, 7)])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("with_sum", [True, False])
def test_skip_layer_norm_matches_onnxruntime(shape, with_bias, with_sum):
    feeds = _skip_feeds(shape, np.float32, with_bias)
    ours = _ours(_model("SkipLayerNormalization", "com.onnxplug", feeds,
                        ["y", "s"] if with_sum else ["y"], epsilon=1e-5), feeds)
    # com.microsoft's outputs are Y, mean, inv_std_var, S: the sum is the fourth
    expected = ort_outputs(_model("SkipLayerNormalization", "com.microsoft", feeds,
                                  ["y", "", "", "s"] if with_sum else ["y"], epsilon=1e-5), feeds)
    np.testing.assert_allclose(ours[0], expected[0], rtol=1e-5, atol=2e-6)
    if with_sum:
        np.testing.assert_allclose(ours[1], expected[-1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(8, 128, 256), (3, 7, 64)])
@pytest.mark.parametrize("with_sum", [True, False])
def test_large_skip_layer_norm_goes_to_the_product_threads_in_one_block_each(monkeypatch, parallel_for_calls,
                                                                             shape, with_sum):
    """Row blocks on both threads (option share_layer_norm_rows) give the bits the calling thread alone gives, and
    onnxruntime's values; a small one stays on the calling thread."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.ops.com_onnxplug import op_fused_layer_norm

    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    feeds = _skip_feeds(shape, np.float32, True)
    model = _model("SkipLayerNormalization", "com.onnxplug", feeds, ["y", "s"] if with_sum else ["y"],
                   epsilon=1e-5)
    calls = parallel_for_calls(op_fused_layer_norm)
    shared = _ours(model, feeds, split_product_macs="1000000")
    rows = shape[0] * shape[1]
    assert calls == [(2, rows * shape[2] * op_fused_layer_norm.MACS_PER_VALUE >= 1_000_000)]
    alone = _ours(model, feeds, split_product_macs="1000000", share_layer_norm_rows="0")
    for got, want in zip(shared, alone):
        np.testing.assert_array_equal(got, want)
    expected = ort_outputs(_model("SkipLayerNormalization", "com.microsoft", feeds,
                                  ["y", "", "", "s"] if with_sum else ["y"], epsilon=1e-5), feeds)
    np.testing.assert_allclose(shared[0], expected[0], rtol=1e-5, atol=2e-6)


def test_skip_layer_norm_in_float64_and_with_a_broadcast_skip():
    feeds = _skip_feeds((2, 50, 64), np.float64, True)
    total = feeds["x"] + feeds["skip"] + feeds["bias"]
    mean = total.mean(-1, keepdims=True)
    expected = (total - mean) / np.sqrt(((total - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    expected = expected * feeds["gamma"] + feeds["beta"]
    (y,) = _ours(_model("SkipLayerNormalization", "com.onnxplug", feeds, ["y"], epsilon=1e-5), feeds)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    feeds["skip"] = feeds["skip"][:1]  # a skip that broadcasts takes the general path
    (y,) = _ours(_model("SkipLayerNormalization", "com.onnxplug", feeds, ["y"], epsilon=1e-5), feeds)
    total = feeds["x"] + feeds["skip"] + feeds["bias"]
    mean = total.mean(-1, keepdims=True)
    expected = (total - mean) / np.sqrt(((total - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, expected * feeds["gamma"] + feeds["beta"], rtol=1e-12, atol=1e-12)


def test_skip_layer_norm_takes_each_runs_vectors():
    """Fed new gamma, beta and bias arrays on every run of one session (graph inputs here, not
    initializers), the kernel uses each run's values, in every block of rows."""
    feeds = _skip_feeds((2, 300, 256), np.float32, True)  # 600 rows: blocks of 128 and a partial one
    model = _model("SkipLayerNormalization", "com.onnxplug", feeds, ["y"], epsilon=1e-5)
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])
    for _ in range(3):
        reference = _model("SkipLayerNormalization", "com.microsoft", feeds, ["y"], epsilon=1e-5)
        np.testing.assert_allclose(session.run(None, feeds)[0], ort_outputs(reference, feeds)[0], rtol=1e-5, atol=2e-6)
        feeds = {**feeds, "gamma": feeds["gamma"] * 1.5, "beta": feeds["beta"] - 0.3, "bias": -feeds["bias"]}


def test_skip_layer_norm_without_beta():
    feeds = _skip_feeds((3, 200, 384), np.float32, True)
    del feeds["beta"]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape))
              for name, value in feeds.items()]
    node = helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "", "bias"], ["y"],
                            domain="com.onnxplug", epsilon=1e-5)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid("com.onnxplug", 1)])
    (y,) = _ours(model, feeds)
    total = (feeds["x"] + feeds["skip"] + feeds["bias"]).astype(np.float64)
    centered = total - total.mean(-1, keepdims=True)
    expected = centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5) * feeds["gamma"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("axis", [-1, 1])
def test_com_onnxplug_layer_norm_matches_onnxruntime_layer_normalization(dtype, axis):
    x = (3 * RNG.standard_normal((4, 96, 300)) - 1).astype(dtype)
    scale_shape = x.shape[axis:] if axis != -1 else x.shape[-1:]
    feeds = {"x": x, "scale": (1 + 0.1 * RNG.standard_normal(scale_shape)).astype(dtype),
             "bias": (0.1 * RNG.standard_normal(scale_shape)).astype(dtype)}
    (ours,) = _ours(_model("LayerNormalization", "com.onnxplug", feeds, ["y"], axis=axis, epsilon=1e-5), feeds)
    (expected,) = ort_outputs(_model("LayerNormalization", "", feeds, ["y"], axis=axis, epsilon=1e-5), feeds)
    tol = 2e-3 if dtype == np.float16 else 2e-5
    assert ours.dtype == dtype
    np.testing.assert_allclose(ours.astype(np.float32), expected.astype(np.float32), rtol=tol, atol=tol)
