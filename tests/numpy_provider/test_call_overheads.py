"""The numpy provider's cheaper call paths give what the numpy calls they replace give."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from onnxplug.providers.numpy.ops._strided import strided_view
from onnxplug.providers.numpy.ops.op_fused_activation import apply_activation


def test_strided_view_matches_as_strided_on_a_contiguous_base():
    base = np.arange(200, dtype=np.float32).reshape(10, 20)
    shape, strides = (3, 2, 4, 5), (80, 4, 80, 4)
    view = strided_view(base, shape, strides, offset=7)
    np.testing.assert_array_equal(view, as_strided(base.reshape(-1)[7:], shape, strides))
    assert not view.flags.writeable
    assert np.shares_memory(view, base)


def test_strided_view_is_writeable_when_asked():
    base = np.zeros(12, dtype=np.float64)
    view = strided_view(base, (3, 2), (32, 8), offset=1, writeable=True)
    view[...] = 1
    np.testing.assert_array_equal(base, [0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0])


def test_strided_view_refuses_a_view_that_leaves_a_contiguous_base():
    base = np.zeros((4, 8), dtype=np.float32)
    with pytest.raises(ValueError):
        strided_view(base, (4, 9), (32, 4))  # the last row would read one value past the end
    with pytest.raises(ValueError):
        strided_view(base, (4, 8), (32, 4), offset=1)


def test_strided_view_of_a_non_contiguous_base():
    base = np.arange(64, dtype=np.float32).reshape(8, 8)[:, 2:6]
    view = strided_view(base, (2, 4), (64, 4))
    np.testing.assert_array_equal(view, as_strided(base, (2, 4), (64, 4)))
    with pytest.raises(ValueError):
        strided_view(base, (2, 4), (64, 4), offset=1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("params", [[0.0, 6.0], [-1.5], [], [-np.inf, np.inf], [2.0, 1e40]])
def test_clip_activation_matches_np_clip(dtype, params):
    x = np.array([-np.inf, -1e4, -2.0, -0.0, 0.5, 3.0, 7.0, 6e4, np.inf, np.nan], dtype=dtype)
    info = np.finfo(dtype)
    low = max(params[0], float(info.min)) if params else info.min
    high = min(params[1], float(info.max)) if len(params) > 1 else info.max
    expected = np.clip(x, dtype(low), dtype(high))
    got = apply_activation(x.copy(), "Clip", params)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


def test_clip_activation_works_in_place_and_copies_read_only_inputs():
    x = np.array([-1.0, 9.0], dtype=np.float32)
    assert apply_activation(x, "Clip", [0.0, 6.0]) is x
    np.testing.assert_array_equal(x, [0.0, 6.0])
    frozen = np.array([-1.0, 9.0], dtype=np.float32)
    frozen.flags.writeable = False
    out = apply_activation(frozen, "Clip", [0.0, 6.0])
    np.testing.assert_array_equal(out, [0.0, 6.0])
    np.testing.assert_array_equal(frozen, [-1.0, 9.0])


def _gemm_session(op_type: str, domain: str, shapes: dict, **attrs):
    from onnx import TensorProto, helper

    import onnxplug
    from tests.numpy_provider.single_node_oracle import kernels_only

    node = helper.make_node(op_type, list(shapes), ["y"], domain=domain, **attrs)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in shapes.items()]
    imports = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([node], "g", inputs, [output]), ir_version=9, opset_imports=imports)
    return onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])


@pytest.mark.parametrize("m,k,n", [(1, 64, 64), (8, 64, 64), (300, 400, 500)])  # small ones take a.dot
@pytest.mark.parametrize("c_shape", [None, (), (1,), ("n",), (1, "n"), ("m", 1), ("m", "n")])
@pytest.mark.parametrize("activation", ["", "Tanh", "Clip", "Relu"])
def test_gemm_and_fused_gemm_match_numpy_small_or_large(m, k, n, c_shape, activation):
    rng = np.random.default_rng(3)
    sizes = {"m": m, "n": n}
    shapes = {"a": (m, k), "b": (k, n)}
    if c_shape is not None:
        shapes["c"] = tuple(sizes.get(d, d) for d in c_shape)
    feeds = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    expected = feeds["a"].astype(np.float64) @ feeds["b"]
    if "c" in feeds:
        expected = expected + feeds["c"]
    if activation:
        params = {"activation_params": [-0.5, 0.5]} if activation == "Clip" else {}
        session = _gemm_session("FusedGemm", "com.onnxplug", shapes, activation=activation, **params)
        expected = {"Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0),
                    "Clip": lambda v: np.clip(v, -0.5, 0.5)}[activation](expected)
    else:
        session = _gemm_session("Gemm", "", shapes)
    (got,) = session.run(None, feeds)
    assert got.shape == (m, n) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4 * np.sqrt(k))
