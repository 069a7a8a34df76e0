"""Shape and layout kernels of the numpy provider against onnxruntime / onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug
from onnxplug.errors import KernelError
from tests.numpy_provider.backend_node_cases import cases_for, failures
from tests.numpy_provider.single_node_oracle import (assert_matches_oracle, assert_same, kernels_only, node_model,
                                                     run_ours)

RNG = np.random.default_rng(1)


def rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def i64(*values):
    return np.array(values, dtype=np.int64)


# --- transpose, reshape, flatten, squeeze, unsqueeze -----------------------------------------

@pytest.mark.parametrize("perm", [[0, 2, 3, 1], [0, 3, 1, 2], [0, 1, 3, 2]])
def test_large_transposes_keeping_the_first_axis_copy_it_on_the_product_threads(monkeypatch, parallel_for_calls, perm):
    """Large enough (here: made so), they copy one first-axis index per unit on both threads."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.ops.ai_onnx import op_transpose

    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    shared = parallel_for_calls(op_transpose)
    x = rand((5, 6, 7, 8))
    assert_matches_oracle("Transpose", {"x": x}, rtol=0, atol=0, perm=perm,
                          provider_options={"split_product_macs": "1000"})
    assert shared == [(5, True)]


@pytest.mark.parametrize("shape,perm", [((1, 3, 40, 36), [0, 2, 3, 1]), ((2, 4, 30, 20), [0, 2, 3, 1]),
                                         ((3, 50, 20), [1, 2, 0]), ((2, 2, 600), None), ((2, 4, 3, 200), [0, 3, 2, 1])])
@pytest.mark.parametrize("split", [False, True], ids=["whole", "per first index"])
def test_transposes_to_a_short_last_axis(monkeypatch, shape, perm, split):
    """Outputs whose last axis has 2-4 values (an image going channels-last) are copied one index
    of that axis at a time, whole or per first-axis index on the product threads; values exact."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.ops.ai_onnx import op_transpose

    if split:
        monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    copies = []
    monkeypatch.setattr(op_transpose, "_copy", lambda dst, src, real=op_transpose._copy: copies.append(dst.shape[-1])
                        or real(dst, src))
    kwargs = {} if perm is None else {"perm": perm}
    (y,) = assert_matches_oracle("Transpose", {"x": rand(shape)}, rtol=0, atol=0,
                                 provider_options={"split_product_macs": "1000"} if split else None, **kwargs)
    assert y.flags.c_contiguous and copies and set(copies) == {y.shape[-1]} and y.shape[-1] <= op_transpose.SHORT_LAST_AXIS


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1], [1, 0, 2]])
def test_transpose(perm):
    kwargs = {} if perm is None else {"perm": perm}
    (y,) = assert_matches_oracle("Transpose", {"x": rand((2, 3, 4))}, **kwargs)
    assert y.flags.c_contiguous


@pytest.mark.parametrize("shape,allowzero", [
    ([4, 6], 0), ([-1], 0), ([2, -1, 3], 0), ([0, 12], 0), ([0, -1], 0), ([2, 0, 3, 4], 1)])
def test_reshape(shape, allowzero):
    x = rand((2, 3, 4)) if not (allowzero and 0 in shape) else rand((2, 0, 3, 4))
    if allowzero and 0 in shape:
        x = rand((0, 24))
        shape = [0, 4, 6]
    assert_matches_oracle("Reshape", {"x": x, "shape": np.array(shape, np.int64)}, allowzero=allowzero, opset=14)


def test_reshape_opset_1_shape_attribute():
    x = rand((2, 3, 4))
    (y,) = run_ours(node_model("Reshape", {"x": x}, opset=4, shape=[4, -1]), {"x": x}, like=[x.reshape(4, 6)])
    assert_same(y, x.reshape(4, 6))


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis):
    assert_matches_oracle("Flatten", {"x": rand((2, 3, 4))}, axis=axis)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [None, [0], [-1], [0, 2]])
def test_squeeze(opset, axes):
    x = rand((1, 3, 1))
    if axes is None:
        assert_matches_oracle("Squeeze", {"x": x}, opset=opset)
    elif opset < 13:
        assert_matches_oracle("Squeeze", {"x": x}, opset=opset, axes=axes)
    else:
        assert_matches_oracle("Squeeze", {"x": x, "axes": np.array(axes, np.int64)}, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [[0], [-1], [0, 3], [4, 1, 0], [-4, 2]])
def test_unsqueeze(opset, axes):
    x = rand((3, 4))
    if opset < 13:
        assert_matches_oracle("Unsqueeze", {"x": x}, opset=opset, axes=axes)
    else:
        assert_matches_oracle("Unsqueeze", {"x": x, "axes": np.array(axes, np.int64)}, opset=opset)


def _constant_axes_model(op_type: str, axes: list[int]):
    """``op_type`` whose axes are an initializer (read once by the kernel) over an x of any rank."""
    node = helper.make_node(op_type, ["x", "axes"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array(axes, np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("op_type, axes, shapes", [
    ("Unsqueeze", [-1, 0], [(3, 4), (2, 3, 4), (5,)]),  # negative axes resolve per input rank
    ("Squeeze", [0, -1], [(1, 3, 1), (1, 2, 3, 1)]),
])
def test_constant_axes_serve_inputs_of_every_rank(op_type, axes, shapes):
    model = _constant_axes_model(op_type, axes)
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])
    for shape in shapes + shapes[:1]:  # the first rank again after the others
        x = rand(shape)
        expected = np.expand_dims(x, tuple(sorted(a % (x.ndim + len(axes)) for a in axes))) \
            if op_type == "Unsqueeze" else np.squeeze(x, tuple(axes))
        (y,) = session.run(None, {"x": x})
        assert_same(y, expected, where=f"{op_type} of {shape}")


@pytest.mark.parametrize("op_type, axes, shape, message", [
    ("Unsqueeze", [1, -3], (3, 4), "repeat"),
    ("Unsqueeze", [3], (3, 4), "out of range"),
    ("Squeeze", [1], (1, 3), "size not equal to one"),
])
def test_constant_axes_errors_name_the_node(op_type, axes, shape, message):
    model = _constant_axes_model(op_type, axes)
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])
    with pytest.raises(KernelError, match=message) as info:
        session.run(None, {"x": rand(shape)})
    assert op_type in str(info.value)


# --- concat, split, slice --------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_including_empty_inputs(axis):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    feeds = {f"x{i}": rand(s) for i, s in enumerate(shapes)}
    assert_matches_oracle("Concat", feeds, axis=axis)
    empty = list(shapes[0])
    empty[axis] = 0
    assert_matches_oracle("Concat", {"a": rand(shapes[0]), "b": rand(tuple(empty))}, axis=axis)
    assert_matches_oracle("Concat", {"a": np.array(["x", "y"], dtype=object), "b": np.array(["z"], dtype=object)}, axis=0)


def test_split_forms_over_opsets():
    x = rand((6, 4))
    assert_matches_oracle("Split", {"x": x}, n_outputs=3, opset=11, axis=0)
    assert_matches_oracle("Split", {"x": x}, n_outputs=2, opset=11, axis=0, split=[2, 4])
    assert_matches_oracle("Split", {"x": x, "split": i64(1, 3)}, n_outputs=2, opset=13, axis=-1)
    assert_matches_oracle("Split", {"x": x}, n_outputs=2, opset=13, axis=1)
    # opset 18: num_outputs with an uneven last chunk
    assert_matches_oracle("Split", {"x": rand((7, 2))}, n_outputs=3, opset=18, axis=0, num_outputs=3)
    assert_matches_oracle("Split", {"x": x, "split": i64(0, 6)}, n_outputs=2, opset=18, axis=0)


def test_split_opset_1_and_2_attributes():
    x = rand((6, 4))
    for opset in (1, 2):
        model = node_model("Split", {"x": x}, n_outputs=2, opset=opset, axis=0, split=[1, 5])
        ys = run_ours(model, {"x": x}, like=[x, x])
        assert_same(ys[0], x[:1])
        assert_same(ys[1], x[1:])
    feeds = {"x": x, "split": i64(2, 2)}  # opset 1 also takes ``split`` as an input
    ys = run_ours(node_model("Split", feeds, n_outputs=2, opset=1, axis=1), feeds, like=[x, x])
    assert_same(ys[0], x[:, :2])
    assert_same(ys[1], x[:, 2:])


def test_concat_opset_1_defaults_to_axis_1():
    feeds = {"a": rand((2, 3)), "b": rand((2, 1))}
    (y,) = run_ours(node_model("Concat", feeds, opset=1), feeds, like=[np.zeros((2, 4), np.float32)])
    assert_same(y, np.concatenate([feeds["a"], feeds["b"]], axis=1))


SLICES = [
    ([1], [3], [0], None), ([0, 1], [2, 100], [0, 1], None), ([-1], [-100], [1], [-1]),
    ([10], [-10], [2], [-2]), ([-3, 0], [-1, 4], [-1, 0], [1, 2]), ([0], [2**62], [1], [3]),
    ([2], [0], [0], [1]), ([-(2**62)], [2**62], [2], None), ([3], [-(2**63)], [1], [-1]),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES)
def test_slice_inputs_with_clamping_and_negative_steps(starts, ends, axes, steps):
    feeds = {"x": rand((3, 4, 5)), "starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64),
             "axes": np.array(axes, np.int64)}
    if steps is not None:
        feeds["steps"] = np.array(steps, np.int64)
    assert_matches_oracle("Slice", feeds, opset=13)


def test_slice_without_axes_and_int32_indices():
    x = rand((4, 5))
    assert_matches_oracle("Slice", {"x": x, "s": np.array([1, -4], np.int32), "e": np.array([3, 5], np.int32)})


def test_slice_opset_1_attributes():
    x = rand((4, 5))
    (y,) = run_ours(node_model("Slice", {"x": x}, opset=9, starts=[1, -3], ends=[3, 1000], axes=[0, 1]), {"x": x})
    assert_same(y, x[1:3, -3:])
    (y,) = run_ours(node_model("Slice", {"x": x}, opset=9, starts=[1], ends=[-1]), {"x": x})
    assert_same(y, x[1:-1])


# --- gather / scatter ------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_negative_indices_and_scalar_index(axis):
    x = rand((3, 4, 5))
    assert_matches_oracle("Gather", {"x": x, "i": np.array([[0, -1], [1, 2]], np.int64)}, axis=axis)
    assert_matches_oracle("Gather", {"x": x, "i": np.array(-2, np.int32)}, axis=axis)


def test_gather_out_of_range_index_is_an_error():
    from onnxplug.errors import KernelError

    x, i = rand((3,)), np.array([3], np.int64)
    with pytest.raises(KernelError, match="out of bounds"):
        run_ours(node_model("Gather", {"x": x, "i": i}), {"x": x, "i": i}, like=[x[:1]])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = rand((3, 4))
    idx = RNG.integers(-3, 3, (2, 4) if axis == 0 else (3, 5)).astype(np.int64)
    assert_matches_oracle("GatherElements", {"x": x, "i": idx}, axis=axis)


@pytest.mark.parametrize("batch_dims,data_shape,index_shape", [
    (0, (3, 4, 5), (2, 1)), (0, (3, 4, 5), (2, 3, 2)), (0, (3, 4), (2, 2)),
    (1, (2, 3, 4), (2, 1)), (1, (2, 3, 4), (2, 5, 2)), (2, (2, 3, 4, 5), (2, 3, 1, 2)),
])
def test_gather_nd_batch_dims(batch_dims, data_shape, index_shape):
    x = rand(data_shape)
    k = index_shape[-1]
    high = np.array(data_shape[batch_dims:batch_dims + k])
    idx = (RNG.integers(0, 1000, index_shape) % high) - high * RNG.integers(0, 2, index_shape)  # some negative
    assert_matches_oracle("GatherND", {"x": x, "i": idx.astype(np.int64)}, batch_dims=batch_dims)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_reductions_with_duplicates(reduction, axis):
    data = rand((3, 4))
    if reduction == "none":  # duplicates are undefined without a reduction
        idx = np.array([[2, -3, 1, 0], [0, 1, 2, 1]]) if axis == 0 else np.array([[3, 0], [1, 2], [-1, 0]])
    else:
        idx = np.array([[1, 1, 0, 1], [1, 0, 1, 1]]) if axis == 0 else np.array([[1, 1], [0, 0], [2, 2]])
    idx = idx.astype(np.int64)
    assert_matches_oracle("ScatterElements", {"d": data, "i": idx, "u": rand(idx.shape)}, axis=axis, reduction=reduction,
          opset=18)


def test_scatter_deprecated():
    data, idx = rand((3, 3)), np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    assert_matches_oracle("Scatter", {"d": data, "i": idx, "u": rand((2, 3))}, axis=0, opset=10)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_reductions(reduction):
    data = rand((4, 3, 2))
    if reduction == "none":
        idx = np.array([[0, 1], [3, -1], [-2, 0]], np.int64)
        updates = rand((3, 2))
    else:
        idx = np.array([[1], [1], [-4], [2]], np.int64)
        updates = rand((4, 3, 2))
    assert_matches_oracle("ScatterND", {"d": data, "i": idx, "u": updates}, reduction=reduction, opset=18)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_with_many_duplicates_folds_them(reduction):
    # more than 16 updates per target: the reduceat path rather than rounds of fancy indexing
    data = rand((3, 4))
    idx = np.array([[0], [2]] * 20, np.int64)
    assert_matches_oracle("ScatterND", {"d": data, "i": idx, "u": rand((40, 4))}, reduction=reduction, opset=18, rtol=1e-4)
    idx = np.zeros((30, 4), np.int64)
    assert_matches_oracle("ScatterElements", {"d": data, "i": idx, "u": rand((30, 4))}, axis=0, reduction=reduction, opset=18,
          rtol=1e-4)


# --- expand, tile, pad -----------------------------------------------------------------------

@pytest.mark.parametrize("x_shape,shape", [((3, 1), (2, 1, 6)), ((3, 4), (1, 1)), ((1,), (0,)), ((), (2, 2))])
def test_expand_broadcasts_both_ways(x_shape, shape):
    (y,) = assert_matches_oracle("Expand", {"x": rand(x_shape), "s": np.array(shape, np.int64)})
    assert y.flags.writeable


def test_tile():
    assert_matches_oracle("Tile", {"x": rand((2, 3)), "r": i64(2, 3)})
    assert_matches_oracle("Tile", {"x": rand((2, 3)), "r": i64(1, 0)})


def test_tile_opset_1_tiles_and_axis():
    x = rand((2, 3))
    feeds = {"x": x, "tiles": np.array(3, np.int64), "axis": np.array(1, np.int64)}
    (y,) = run_ours(node_model("Tile", feeds, opset=1), feeds, like=[x])
    assert_same(y, np.tile(x, (1, 3)))


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[0, 2, 1, 1], [1, 0, 0, 2], [0, 0, 0, 0], [2, 1, 1, 3]])
def test_pad_modes(mode, pads):
    feeds = {"x": rand((3, 4)), "pads": np.array(pads, np.int64)}
    if mode == "constant":
        feeds["value"] = np.array(1.5, np.float32)
    assert_matches_oracle("Pad", feeds, mode=mode, opset=19, input_names=["x", "pads", "value"] if mode == "constant" else None)


def test_pad_negative_pads_crop():
    feeds = {"x": rand((4, 5)), "pads": i64(-1, 2, 1, -2)}
    assert_matches_oracle("Pad", feeds, opset=13)
    assert_matches_oracle("Pad", feeds, opset=13, mode="edge")


def test_pad_axes_input_and_integer_data():
    feeds = {"x": np.arange(24, dtype=np.int32).reshape(2, 3, 4), "pads": i64(2, 1, 3, 0),
             "value": np.array(-1, np.int32), "axes": i64(-1, 0)}
    assert_matches_oracle("Pad", feeds, opset=18)
    assert_matches_oracle("Pad", feeds, opset=19, mode="reflect")


def test_pad_opset_2_attributes():
    x = rand((2, 3))
    expected = np.pad(x, ((1, 0), (0, 2)), constant_values=-1.0)
    (y,) = run_ours(node_model("Pad", {"x": x}, opset=1, paddings=[1, 0, 0, 2], value=-1.0), {"x": x}, like=[expected])
    assert_same(y, expected)
    (y,) = run_ours(node_model("Pad", {"x": x}, opset=2, pads=[0, 1, 1, 0], value=2.0), {"x": x})
    assert_same(y, np.pad(x, ((0, 1), (1, 0)), constant_values=2.0))
    (y,) = run_ours(node_model("Pad", {"x": x}, opset=2, pads=[1, 0, 0, 1], mode="edge"), {"x": x})
    assert_same(y, np.pad(x, ((1, 0), (0, 1)), mode="edge"))


def test_pad_strings_and_bools_default_fill():
    # The spec fills strings with "" (onnx.reference pads them with the integer 0, onnxruntime refuses)
    feeds = {"x": np.array(["a", "b"], dtype=object), "pads": i64(1, 1)}
    (y,) = run_ours(node_model("Pad", feeds), feeds)
    assert y.dtype == object and y.tolist() == ["", "a", "b", ""]
    assert_matches_oracle("Pad", {"x": np.array([True, True]), "pads": i64(0, 2)})


# --- shape, size, identity, constants ---------------------------------------------------------

@pytest.mark.parametrize("start,end", [(None, None), (1, None), (-2, None), (0, -1), (-10, 10), (2, 1)])
def test_shape_start_end(start, end):
    kwargs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    (y,) = assert_matches_oracle("Shape", {"x": rand((2, 3, 4))}, opset=15, **kwargs)
    assert y.dtype == np.int64


def test_size():
    (y,) = assert_matches_oracle("Size", {"x": rand((2, 3, 4))})
    assert y.shape == () and y.dtype == np.int64
    assert_matches_oracle("Size", {"x": rand((0, 3))})


def test_identity_tensor_and_sequence():
    (y,) = assert_matches_oracle("Identity", {"x": rand((2, 3))})
    seq = [rand((2,)), rand((3,))]
    model = node_model("Identity", {"s": seq}, opset=16)
    model.graph.output[0].type.CopyFrom(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    ys = run_ours(model, {"s": seq})
    assert isinstance(ys[0], list) and len(ys[0]) == 2
    assert_same(ys[0][1], seq[1])


def _constant(**attrs):
    node = helper.make_node("Constant", [], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [], [helper.make_empty_tensor_value_info("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    from onnx import shape_inference

    return shape_inference.infer_shapes(model)


@pytest.mark.parametrize("attrs,expected", [
    ({"value": numpy_helper.from_array(np.array([[1, 2]], np.int32))}, np.array([[1, 2]], np.int32)),
    ({"value_float": 2.5}, np.array(2.5, np.float32)),
    ({"value_floats": [1.0, 2.0]}, np.array([1.0, 2.0], np.float32)),
    ({"value_int": 7}, np.array(7, np.int64)),
    ({"value_ints": [1, -2, 3]}, np.array([1, -2, 3], np.int64)),
    ({"value_string": "hi"}, np.array("hi", dtype=object)),
    ({"value_strings": ["a", "bc"]}, np.array(["a", "bc"], dtype=object)),
])
def test_constant_forms(attrs, expected):
    model = _constant(**attrs)
    (y,) = run_ours(model, {}, like=[expected])
    assert_same(y, expected)
    from onnx.reference import ReferenceEvaluator

    assert_same(y, np.asarray(ReferenceEvaluator(model).run(None, {})[0]))


def test_constant_sparse_value():
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([5.0, 6.0], np.float32), "v"),
                                       numpy_helper.from_array(np.array([1, 4], np.int64), "i"), [2, 3])
    model = _constant(sparse_value=sparse)
    expected = np.zeros((2, 3), np.float32)
    expected.reshape(-1)[[1, 4]] = [5.0, 6.0]
    (y,) = run_ours(model, {}, like=[expected])
    assert_same(y, expected)


@pytest.mark.parametrize("value", [None, np.array([3], np.int32), np.array([1.5], np.float16),
                                   np.array([True])])
def test_constant_of_shape(value):
    kwargs = {} if value is None else {"value": numpy_helper.from_array(value)}
    assert_matches_oracle("ConstantOfShape", {"s": i64(2, 3)}, **kwargs)
    assert_matches_oracle("ConstantOfShape", {"s": np.zeros(0, np.int64)}, **kwargs)  # a scalar


@pytest.mark.parametrize("start,limit,delta,dtype", [
    (3, 9, 3, np.int64), (10, 4, -2, np.int32), (0.0, 1.0, 0.1, np.float32), (1.0, -2.0, -0.3, np.float64),
    (5, 5, 1, np.int64), (1, 10, -1, np.int16), (0.5, 3.0, 0.25, np.float32)])
def test_range(start, limit, delta, dtype):
    feeds = {"s": np.array(start, dtype), "l": np.array(limit, dtype), "d": np.array(delta, dtype)}
    assert_matches_oracle("Range", feeds, oracle="ort" if dtype != np.int16 else "ref")


@pytest.mark.parametrize("k", [0, 1, -2, 5])
@pytest.mark.parametrize("dtype", [None, TensorProto.INT32, TensorProto.DOUBLE])
def test_eye_like(k, dtype):
    kwargs = {} if dtype is None else {"dtype": dtype}
    assert_matches_oracle("EyeLike", {"x": rand((3, 5))}, k=k, **kwargs)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 1, -1, 9])
def test_trilu_batched(upper, k):
    feeds = {"x": rand((2, 3, 4))}
    if k is not None:
        feeds["k"] = np.array(k, np.int64)
    assert_matches_oracle("Trilu", feeds, upper=upper)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_negative_and_out_of_range_indices(axis):
    idx = np.array([[0, -1, 3], [5, -4, 2]], np.int64)
    assert_matches_oracle("OneHot", {"i": idx, "d": np.array(4, np.int64), "v": np.array([-1.0, 2.0], np.float32)}, axis=axis)
    assert_matches_oracle("OneHot", {"i": idx.astype(np.float32), "d": np.array(4.0, np.float32),
                     "v": np.array([0, 7], np.int32)}, axis=axis)


def test_nonzero():
    x = np.array([[1, 0, 3], [0, 0, 2]], np.float32)
    assert_matches_oracle("NonZero", {"x": x})
    assert_matches_oracle("NonZero", {"x": np.zeros((2, 2), np.int32)})
    assert_matches_oracle("NonZero", {"x": np.array([True, False, True])})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    x = rand((3, 4))
    kwargs = {} if axis is None else {"axis": axis}
    assert_matches_oracle("Compress", {"x": x, "c": np.array([True, False, True])}, **kwargs)


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique_all_outputs(sorted_, axis):
    x = np.array([[2, 1, 2, 1], [0, 3, 0, 3], [2, 1, 2, 1]], np.float32)
    kwargs = {} if axis is None else {"axis": axis}
    assert_matches_oracle("Unique", {"x": x}, n_outputs=4, sorted=sorted_, **kwargs)


def test_unique_flat_input_order():
    x = np.array([2, 1, 1, 3, 4, 3], np.int64)
    ys = assert_matches_oracle("Unique", {"x": x}, n_outputs=4, sorted=0)
    np.testing.assert_array_equal(ys[0], [2, 1, 3, 4])


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis):
    x = rand((4, 4) if batch_axis == 1 else (4, 5, 2))
    lens = np.array([4, 3, 1, 2], np.int64)
    assert_matches_oracle("ReverseSequence", {"x": x, "l": lens}, batch_axis=batch_axis, time_axis=time_axis)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_det(shape):
    assert_matches_oracle("Det", {"x": rand(shape)}, rtol=1e-4, atol=1e-5)
    assert_matches_oracle("Det", {"x": rand(shape, np.float64)})


# --- ONNX backend node tests -----------------------------------------------------------------

SHAPE_OPS = frozenset(
    "Transpose Reshape Flatten Squeeze Unsqueeze Concat Split Slice Gather GatherElements GatherND "
    "ScatterElements ScatterND Scatter Expand Tile Pad Shape Size Identity Constant ConstantOfShape Range "
    "EyeLike Trilu OneHot NonZero Compress Unique ReverseSequence Det".split())
#: Ops the expanded (function-body) variants of these cases also use.
HELPER_OPS = frozenset("Add Sub Mul Div Cast CastLike Less Greater Equal Where ReduceSum Max Min Neg Abs "
                       "Floor Ceil Not And Or".split())


@pytest.mark.parametrize("op_type", sorted(SHAPE_OPS))
def test_backend_node_cases(op_type):
    cases = cases_for(op_type, SHAPE_OPS | HELPER_OPS)
    if not cases:
        pytest.skip(f"onnx has no backend node test for {op_type}")
    failed = failures(cases)
    assert not failed, "\n".join(f"{name}: {why}" for name, why in failed.items())
