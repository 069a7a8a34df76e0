"""The numpy provider's cheaper call paths give what the numpy calls they replace give."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from onnxplug.providers.numpy.kernels.conv.strided import strided_view
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_activation import apply_activation


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


def _kernel(cls, op_type: str, feeds: dict, opset: int = 17, **attrs):
    """A numpy-provider kernel of class ``cls`` for a one-node model over ``feeds``."""
    from onnxplug.ir import load_model
    from onnxplug.kernel import KernelContext
    from onnxplug.providers.numpy.provider import NumpyProvider
    from tests.numpy_provider.single_node_oracle import node_model

    node = load_model(node_model(op_type, feeds, opset=opset, **attrs)).graph.nodes[0]
    return cls(node, KernelContext(provider=NumpyProvider()))


_COMPARISONS = {"Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
                "GreaterOrEqual": np.greater_equal, "Equal": np.equal}


@pytest.mark.parametrize("op_type", sorted(_COMPARISONS))
@pytest.mark.parametrize("shapes", [((), ()), ((), (3,)), ((2, 1), (3,))])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("array_out", [True, False])  # numpy >= 2.3's out=..., or the asarray path
def test_comparisons_give_bool_arrays_even_for_0d_operands(monkeypatch, op_type, shapes, dtype, array_out):
    from onnxplug.providers.numpy import registry
    from onnxplug.providers.numpy.ops import _elementwise_util

    if not array_out:
        monkeypatch.setattr(_elementwise_util, "ARRAY_OUT", None)
    rng = np.random.default_rng(5)
    a, b = (rng.integers(-2, 3, s).astype(dtype) for s in shapes)
    cls = registry.REGISTRY.resolve("", op_type, 17)
    got = _kernel(cls, op_type, {"a": a, "b": b}).compute(a, b)
    expected = _COMPARISONS[op_type](a, b)
    assert got.__class__ is np.ndarray and got.dtype == np.bool_ and got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op_type,reduce", [("ReduceMax", np.max), ("ReduceMin", np.min)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("opset,axes,keepdims", [(17, None, 0), (17, [1], 0), (17, [0, -1], 1), (18, None, 0),
                                                 (18, [1], 1)])
@pytest.mark.parametrize("array_out", [True, False])
def test_max_and_min_reductions_give_arrays_of_the_input_dtype(monkeypatch, op_type, reduce, dtype, opset, axes,
                                                               keepdims, array_out):
    from onnxplug.providers.numpy import registry
    from onnxplug.providers.numpy.ops import _reduce_util

    if not array_out:
        monkeypatch.setattr(_reduce_util, "ARRAY_OUT", None)
    x = np.random.default_rng(6).integers(-5, 6, (2, 3, 4)).astype(dtype)
    attrs = {"keepdims": keepdims}
    args = [x]
    if axes is not None and opset < 18:
        attrs["axes"] = axes
    feeds = {"x": x}
    if axes is not None and opset >= 18:
        feeds["axes"] = np.array(axes, np.int64)
        args.append(feeds["axes"])
    cls = registry.REGISTRY.resolve("", op_type, opset)
    got = _kernel(cls, op_type, feeds, opset=opset, **attrs).compute(*args)
    expected = reduce(x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims))
    assert got.__class__ is np.ndarray and got.dtype == x.dtype and got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


def test_max_reduction_of_an_empty_set_and_noop_with_empty_axes_keep_their_meaning():
    from onnxplug.providers.numpy.ops.ai_onnx.op_reduce_max import ReduceMax

    empty = np.zeros((2, 0), np.float32)
    kernel = _kernel(ReduceMax, "ReduceMax", {"x": empty}, opset=17, axes=[1], keepdims=0)
    np.testing.assert_array_equal(kernel.compute(empty), [-np.inf, -np.inf])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    noop = _kernel(ReduceMax, "ReduceMax", {"x": x}, opset=18, noop_with_empty_axes=1)
    np.testing.assert_array_equal(noop.compute(x), x)  # no axes given: nothing reduced


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axes,keepdims", [(None, False), (None, True), ((0,), False), ((1, 2), True), ((-1,), False)])
@pytest.mark.parametrize("array_out", [True, False])
def test_fast_mean_matches_np_mean(monkeypatch, dtype, axes, keepdims, array_out):
    from onnxplug.providers.numpy.ops import _nn_util

    if not array_out:
        monkeypatch.setattr(_nn_util, "ARRAY_OUT", None)
    x = np.random.default_rng(7).standard_normal((16, 3, 32)).astype(dtype)
    got = _nn_util.fast_mean(x, axes, keepdims)
    expected = np.mean(x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert np.asarray(got).dtype == dtype and np.shape(got) == np.shape(expected)
    if array_out:
        assert got.__class__ is np.ndarray
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
