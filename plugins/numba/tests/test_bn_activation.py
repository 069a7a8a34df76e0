"""BatchNormalization -> Relu as one fused pass, and BatchNormalization over small planes: equal to
onnxruntime, and bit for bit to BatchNormalization and Relu run as their own kernels."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxplug as ort
import pytest
from numba_test_helpers import assert_close, run_numba, run_onnxruntime
from onnx import TensorProto, helper


def _model(shape, rng, relu=True, dtype=np.float32, constant=True):  # type: ignore[no-untyped-def]
    c = shape[1]
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    params = {"s": rng.standard_normal(c) + 1.0, "b": rng.standard_normal(c), "m": rng.standard_normal(c),
              "v": rng.random(c) + 0.1}
    inits = [onnx.numpy_helper.from_array(v.astype(dtype), k) for k, v in params.items()] if constant else []
    inputs = [helper.make_tensor_value_info("x", elem, shape)]
    if not constant:
        inputs += [helper.make_tensor_value_info(k, elem, (c,)) for k in params]
    nodes = [helper.make_node("Concat", ["x", "x"], ["cat"], axis=0),
             helper.make_node("BatchNormalization", ["cat", "s", "b", "m", "v"], ["bn"], epsilon=1e-3)]
    nodes += [helper.make_node("Relu", ["bn"], ["y"])] if relu else [helper.make_node("Neg", ["bn"], ["y"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", elem, None)], inits)
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8))
    feeds = {"x": rng.standard_normal(shape).astype(dtype)}
    if not constant:
        feeds.update({k: v.astype(dtype) for k, v in params.items()})
    return model, feeds


def _unfused(model, feeds, monkeypatch):  # type: ignore[no-untyped-def]
    """Both nodes as their own kernels, the parameters broadcast per channel row (no expanded planes)."""
    from onnxplug_numba.ops import op_norm

    monkeypatch.setattr(op_norm, "SMALL_PLANE", 0)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["numba"],
                                       provider_options=[{"fuse_elementwise": False}])
    return session.run(None, feeds)


@pytest.mark.parametrize("shape", [(1, 7, 5, 3), (2, 64, 2, 2), (1, 16, 9, 11), (3, 5, 40, 40), (1, 6, 13)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bn_relu_pair_is_one_step_and_matches(shape, dtype, rng, monkeypatch):
    model, feeds = _model(shape, rng, dtype=dtype)
    got, session = run_numba(model, feeds)
    kinds = [(s.kind.value, type(s.kernel).__name__) for s in session.engine.plan.steps]
    assert ("fused", "BatchNormActivationKernel") in kinds and len(kinds) == 2, kinds
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-5, atol=1e-6)
    assert (got[0] >= 0).all()
    np.testing.assert_array_equal(got[0], _unfused(model, feeds, monkeypatch)[0])


@pytest.mark.parametrize("shape", [(1, 300, 2, 2), (2, 33, 3, 5), (1, 8, 1, 1), (2, 48, 16, 16)])
def test_bn_alone_small_planes_match(shape, rng, monkeypatch):
    model, feeds = _model(shape, rng, relu=False)
    got, session = run_numba(model, feeds)
    assert "BatchNormalization" in [type(s.kernel).__name__ for s in session.engine.plan.steps]
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[0], _unfused(model, feeds, monkeypatch)[0])


def test_bn_with_graph_input_parameters_stays_unpaired(rng):
    model, feeds = _model((1, 4, 3, 3), rng, constant=False)
    got, session = run_numba(model, feeds)
    assert "BatchNormActivationKernel" not in [type(s.kernel).__name__ for s in session.engine.plan.steps]
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-5, atol=1e-6)
