"""Feeds as onnxruntime takes them: each form run on onnxruntime and on onnxplug in the same test.

Either both runs give the same outputs (element type, shape and values), or both refuse the feed;
onnxplug's refusal is a typed error naming the input.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug import errors
from tests.conftest import make_model

T = TensorProto


def _identity(elem_type: int, shape) -> object:
    return make_model([helper.make_node("Identity", ["x"], ["y"], name="id")], [("x", elem_type, shape)],
                      [("y", elem_type, shape)])


def _outcome(run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow warning, in both runtimes
        try:
            return "ok", run()
        except Exception as e:  # the outcome compared: which runtimes refuse the feed
            return "refused", e


def _compare(model, feeds, oracle_feeds=None):
    """Run ``feeds`` on both runtimes (``oracle_feeds`` on onnxruntime, when given) and compare."""
    oracle = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    sess = ort.InferenceSession(model, providers=["numpy"])
    expected = _outcome(lambda: oracle.run(None, dict(oracle_feeds if oracle_feeds is not None else feeds)))
    actual = _outcome(lambda: sess.run(None, dict(feeds)))
    assert actual[0] == expected[0], f"onnxplug: {actual[1]!r}; onnxruntime: {expected[1]!r}"
    if expected[0] == "refused":
        assert isinstance(actual[1], errors.InvalidInputError), repr(actual[1])
        assert "'x'" in str(actual[1]), str(actual[1])
        return actual[1]
    for mine, ref in zip(actual[1], expected[1]):
        assert mine.dtype == ref.dtype and mine.shape == ref.shape, (mine, ref)
        if ref.dtype == object:
            assert mine.tolist() == ref.tolist()
        else:
            np.testing.assert_array_equal(mine, ref)
    return actual[1]


LIST_CASES = [
    # (id, declared element type, declared shape, list fed)
    ("ints-to-float", T.FLOAT, [2], [1, 2]),
    ("floats-to-float", T.FLOAT, [2], [1.5, 2]),
    ("bools-to-float", T.FLOAT, [2], [True, False]),
    ("numeric-strings-to-float", T.FLOAT, [2], ["1", "2.5"]),
    ("none-to-float", T.FLOAT, [2], [1, None]),
    ("overflow-to-float", T.FLOAT, [2], [1e40, 1]),
    ("numpy-scalars-in-list", T.FLOAT, [2], [np.float64(1.5), np.float32(2)]),
    ("arrays-in-list", T.FLOAT, [2, 2], [np.array([1, 2], np.float32), np.array([3, 4], np.float32)]),
    ("nested", T.FLOAT, [2, 3], [[1, 2, 3], [4, 5, 6]]),
    ("ragged", T.FLOAT, [2, 2], [[1, 2], [3]]),
    ("empty-for-0", T.FLOAT, [0], []),
    ("empty-for-2", T.FLOAT, [2], []),
    ("wrong-rank", T.FLOAT, [1], [[1]]),
    ("floats-to-int64", T.INT64, [2], [1.5, 2.7]),
    ("negative-floats-to-int32", T.INT32, [2], [-2.5, 3.9999]),
    ("ints-to-int64", T.INT64, [2], [1, 2]),
    ("bools-to-int64", T.INT64, [2], [True, 2]),
    ("nan-to-int64", T.INT64, [1], [float("nan")]),
    ("too-big-for-int64", T.INT64, [2], [1, 2**63]),
    ("too-big-for-uint8", T.UINT8, [2], [1, 300]),
    ("negative-to-uint8", T.UINT8, [2], [-1, 2]),
    ("float-out-of-uint8", T.UINT8, [1], [300.0]),
    ("fits-uint64", T.UINT64, [2], [1, 2**63]),
    ("not-a-number-string-to-int64", T.INT64, [1], ["1.5"]),
    ("ints-to-double", T.DOUBLE, [2], [1, 2]),
    ("ints-to-float16", T.FLOAT16, [2], [1, 2]),
    ("ints-to-int8", T.INT8, [2], [1, 2]),
    ("bools-to-bool", T.BOOL, [2], [True, False]),
    ("ints-to-bool", T.BOOL, [2], [2, 0]),
    ("strings-to-bool", T.BOOL, [2], ["a", ""]),
    ("strings", T.STRING, [2], ["a", "b"]),
    ("ints-to-string", T.STRING, [2], [1, 2]),
    ("mixed-to-string", T.STRING, [2], [1.5, True]),
    ("bytes-and-none-to-string", T.STRING, [2], [b"a", None]),
    ("ragged-strings", T.STRING, [2], [["a"], ["b", "c"]]),
]


@pytest.mark.parametrize("elem_type,shape,value", [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_list_feed_as_onnxruntime(elem_type, shape, value):
    _compare(_identity(elem_type, shape), {"x": value})


ARRAY_CASES = [
    ("float32", T.FLOAT, [2], lambda: np.array([1, 2], np.float32)),
    ("float64-to-float", T.FLOAT, [2], lambda: np.array([1, 2], np.float64)),
    ("int64-to-float", T.FLOAT, [2], lambda: np.array([1, 2], np.int64)),
    ("int32-to-int64", T.INT64, [2], lambda: np.array([1, 2], np.int32)),
    ("uint64-to-int64", T.INT64, [2], lambda: np.array([1, 2], np.uint64)),
    ("float32-to-double", T.DOUBLE, [2], lambda: np.array([1, 2], np.float32)),
    ("uint8-to-bool", T.BOOL, [2], lambda: np.array([1, 0], np.uint8)),
    ("object-to-float", T.FLOAT, [2], lambda: np.array([1, 2], object)),
    ("float16", T.FLOAT16, [2], lambda: np.array([1, 2], np.float16)),
    ("0-d", T.FLOAT, [], lambda: np.array(3.0, np.float32)),
    ("0-d-unranked", T.FLOAT, None, lambda: np.array(3.0, np.float32)),
    ("reversed", T.FLOAT, [3], lambda: np.arange(3, dtype=np.float32)[::-1]),
    ("strided", T.FLOAT, [2, 2], lambda: np.arange(8, dtype=np.float32).reshape(2, 4)[:, ::2]),
    ("fortran-order", T.FLOAT, [2, 3], lambda: np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))),
    ("broadcast-view", T.FLOAT, [3], lambda: np.broadcast_to(np.float32(1), (3,))),
    ("matrix-subclass", T.FLOAT, [1, 2], lambda: np.matrix([[1, 2]], np.float32)),
    ("unicode-strings", T.STRING, [2], lambda: np.array(["a", "bc"])),
    ("object-strings", T.STRING, [2], lambda: np.array(["a", "b"], object)),
    ("object-ints-to-string", T.STRING, [2], lambda: np.array(["a", 1], object)),
    ("ints-to-string", T.STRING, [2], lambda: np.array([1, 2])),
]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
@pytest.mark.parametrize("elem_type,shape,make", [c[1:] for c in ARRAY_CASES], ids=[c[0] for c in ARRAY_CASES])
def test_array_feed_as_onnxruntime(elem_type, shape, make):
    _compare(_identity(elem_type, shape), {"x": make()})


SCALAR_CASES = [
    ("python-int", T.INT64, [], 3),
    ("python-float", T.FLOAT, [], 3.5),
    ("python-float-to-1", T.FLOAT, [1], 3.0),
    ("numpy-float32", T.FLOAT, [], np.float32(3)),
    ("numpy-int64", T.INT64, [], np.int64(3)),
    ("python-str", T.STRING, [], "abc"),
    ("tuple", T.FLOAT, [2], (1.0, 2.0)),
    ("dict", T.FLOAT, [2], {"a": 1.0}),
    ("none", T.FLOAT, [2], None),
]


@pytest.mark.parametrize("elem_type,shape,value", [c[1:] for c in SCALAR_CASES], ids=[c[0] for c in SCALAR_CASES])
def test_scalars_and_tuples_are_refused_as_onnxruntime_refuses_them(elem_type, shape, value):
    error = _compare(_identity(elem_type, shape), {"x": value})
    assert isinstance(error, errors.InputTypeError)


def test_a_scalar_refusal_says_how_to_feed_it():
    error = _compare(_identity(T.FLOAT, []), {"x": 2.0})
    assert "0-d array" in str(error)


def test_list_feed_becomes_a_fresh_array_of_the_declared_type():
    model = make_model([helper.make_node("Mul", ["x", "x"], ["y"], name="square")], [("x", T.FLOAT, ["N", 2])],
                       [("y", T.FLOAT, ["N", 2])])
    (y,) = _compare(model, {"x": [[1, 2], [3, 4]]})
    assert y.dtype == np.float32


def test_ortvalue_feed_as_onnxruntime():
    model = _identity(T.FLOAT, [2, 2])
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    _compare(model, {"x": ort.OrtValue.ortvalue_from_numpy(x)},
             oracle_feeds={"x": onnxruntime.OrtValue.ortvalue_from_numpy(x)})


def test_non_contiguous_feed_is_read_as_its_values_by_every_kernel():
    model = make_model([helper.make_node("MatMul", ["x", "x"], ["y"], name="mm")], [("x", T.FLOAT, [3, 3])],
                       [("y", T.FLOAT, [3, 3])])
    x = np.arange(18, dtype=np.float32).reshape(3, 6)[:, ::2]
    _compare(model, {"x": x})


def test_big_endian_array_is_read_by_value():
    # onnxruntime reinterprets the bytes of a non-native array (its result is garbage); onnxplug
    # converts to native order, which gives onnxruntime's result for the native array
    x = np.array([1.5, -2], np.float32)
    y = _compare(_identity(T.FLOAT, [2]), {"x": x.astype(x.dtype.newbyteorder())}, oracle_feeds={"x": x})
    np.testing.assert_array_equal(y[0], x)


def test_bytes_array_to_string_input_is_decoded():
    # onnxruntime reads a bytes ('S') array past its items (garbage); onnxplug decodes UTF-8 text,
    # which gives onnxruntime's result for the same text as str
    _compare(_identity(T.STRING, [2]), {"x": np.array([b"ab", "\u00e9".encode()])},
             oracle_feeds={"x": np.array(["ab", "\u00e9"])})


def test_optional_input_may_be_left_out_or_none():
    optional = helper.make_value_info("x", helper.make_optional_type_proto(helper.make_tensor_type_proto(T.FLOAT, [2])))
    graph = helper.make_graph([helper.make_node("OptionalHasElement", ["x"], ["y"], name="has")], "g", [optional],
                              [helper.make_tensor_value_info("y", T.BOOL, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    for feeds in ({}, {"x": None}, {"x": np.ones(2, np.float32)}, {"x": [1.0, 2.0]}):
        _compare(model, feeds)


def test_missing_and_unknown_inputs_are_refused_as_onnxruntime_refuses_them():
    model = _identity(T.FLOAT, [2])
    oracle = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    sess = ort.InferenceSession(model, providers=["numpy"])
    x = np.ones(2, np.float32)
    for feeds, error in (({}, errors.MissingInputError), ({"x": x, "z": x}, errors.UnknownInputError)):
        with pytest.raises(Exception):
            oracle.run(None, feeds)
        with pytest.raises(error):
            sess.run(None, feeds)


def test_feeds_are_not_modified():
    x = [[1.0, 2.0]]
    arr = np.array(["a", 1], object)
    sess = ort.InferenceSession(_identity(T.STRING, [2]), providers=["numpy"])
    sess.run(None, {"x": arr})
    assert arr.tolist() == ["a", 1]
    ort.InferenceSession(_identity(T.FLOAT, [1, 2]), providers=["numpy"]).run(None, {"x": x})
    assert x == [[1.0, 2.0]]
