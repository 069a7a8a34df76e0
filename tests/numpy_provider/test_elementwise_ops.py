"""Elementwise, cast and reduction kernels of the numpy provider against onnxruntime / onnx.reference."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto

from tests.numpy_provider.backend_node_cases import cases_for, failures
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, assert_same, node_model, run_ours

RNG = np.random.default_rng(0)


def rand(shape, dtype=np.float32, low=-3.0, high=3.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


# --- unary math ------------------------------------------------------------------------------

FLOAT_UNARY = {
    "Abs": (-3, 3), "Neg": (-3, 3), "Reciprocal": (0.5, 3), "Sqrt": (0, 9), "Exp": (-5, 5),
    "Log": (0.01, 9), "Ceil": (-3, 3), "Floor": (-3, 3), "Sign": (-3, 3), "Erf": (-4, 4),
    "Sin": (-6, 6), "Cos": (-6, 6), "Tan": (-1.4, 1.4), "Asin": (-1, 1), "Acos": (-1, 1),
    "Atan": (-5, 5), "Sinh": (-4, 4), "Cosh": (-4, 4), "Asinh": (-5, 5), "Acosh": (1, 9),
    "Atanh": (-0.99, 0.99), "Round": (-5, 5),
}


@pytest.mark.parametrize("op_type", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_unary_float_ops_match_onnxruntime(op_type, dtype):
    if dtype == np.float16 and op_type in ("Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
                                             "Acosh", "Atanh", "Reciprocal", "Log", "Exp", "Sqrt", "Erf"):
        oracle = "ref"  # onnxruntime has no float16 kernel for these
    else:
        oracle = "ort"
    low, high = FLOAT_UNARY[op_type]
    x = rand((3, 4, 5), dtype, low, high)
    assert_matches_oracle(op_type, {"x": x}, oracle=oracle, rtol=2e-3 if dtype == np.float16 else 2e-6, atol=1e-6)


@pytest.mark.parametrize("op_type,value", [("Sqrt", -1.0), ("Log", 0.0), ("Log", -1.0), ("Acos", 2.0),
                                           ("Reciprocal", 0.0), ("Exp", 1000.0)])
def test_unary_domain_edges_give_nan_or_inf_without_warnings(op_type, value):
    x = np.array([value, 1.0, np.nan, np.inf], np.float32)
    with np.errstate(all="raise"):
        assert_matches_oracle(op_type, {"x": x})


def test_round_is_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -0.0, np.nan], np.float32)
    (y,) = assert_matches_oracle("Round", {"x": x})
    np.testing.assert_array_equal(y, [-2, -2, -0, 0, 2, 2, 2, -0, np.nan])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_matches_math_erf(dtype):
    x = np.concatenate([np.linspace(-7, 7, 4001), np.geomspace(1e-30, 3, 200), [0.0, np.inf, -np.inf]])
    x = x.astype(dtype)
    (y,) = run_ours(node_model("Erf", {"x": x}), {"x": x})
    expected = np.array([math.erf(float(v)) for v in x])
    # within 8 ulp: float32 erf from a rational fit, float64 from a series / continued fraction
    ulp = np.spacing(np.abs(expected).astype(dtype)).astype(np.float64)
    assert y.dtype == dtype
    assert np.max(np.abs(y.astype(np.float64) - expected) / ulp) <= 8


@pytest.mark.parametrize("op_type", ["Abs", "Neg", "Sign"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_unary_ops(op_type, dtype):
    assert_matches_oracle(op_type, {"x": RNG.integers(-50, 50, (4, 6)).astype(dtype)})


def test_unsigned_abs_and_sign():
    x = np.array([0, 1, 200, 255], np.uint8)
    assert_matches_oracle("Abs", {"x": x})
    assert_matches_oracle("Sign", {"x": x})


def test_bfloat16_unary_keeps_dtype():
    x = rand((8,), np.float32).astype(ml_dtypes.bfloat16)
    assert_matches_oracle("Abs", {"x": x}, oracle="ref")
    assert_matches_oracle("Neg", {"x": x}, oracle="ref")


@pytest.mark.parametrize("positive,negative", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf_detect_flags(positive, negative):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, 1e38], np.float32)
    assert_matches_oracle("IsInf", {"x": x}, detect_positive=positive, detect_negative=negative)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_isnan(dtype):
    assert_matches_oracle("IsNaN", {"x": np.array([np.nan, 0.0, -np.inf, 3.0], dtype)})


def test_not_and_bitwise_not():
    assert_matches_oracle("Not", {"x": RNG.integers(0, 2, (3, 4)).astype(np.bool_)})
    for dtype in (np.int8, np.uint8, np.int32, np.uint16, np.int64, np.uint64):
        assert_matches_oracle("BitwiseNot", {"x": RNG.integers(0, 100, (3, 4)).astype(dtype)}, opset=18)


# --- binary and variadic ---------------------------------------------------------------------

BROADCASTS = [((3, 4, 5), (3, 4, 5)), ((3, 4, 5), (5,)), ((3, 1, 5), (4, 1)), ((), (2, 3)), ((2, 0, 3), (3,))]


@pytest.mark.parametrize("op_type", ["Sub", "Mul", "Div", "Add"])
@pytest.mark.parametrize("shapes", BROADCASTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_arithmetic_broadcasting(op_type, shapes, dtype):
    a = rand(shapes[0], np.float64, -20, 20).astype(dtype)
    b = rand(shapes[1], np.float64, 1, 9).astype(dtype) * np.where(rand(shapes[1]) > 0, 1, -1).astype(dtype)
    assert_matches_oracle(op_type, {"a": a, "b": b})


@pytest.mark.parametrize("op_type,reference", [("Mul", np.multiply), ("Sub", np.subtract), ("Div", np.divide),
                                               ("Pow", np.power), ("Greater", np.greater)])
def test_opset_6_legacy_broadcast_aligns_b_at_axis(op_type, reference):
    a, b = rand((2, 3, 4, 5), np.float32, 0.5, 2), rand((3, 4), np.float32, 0.5, 2)
    feeds = {"a": a, "b": b}
    expected = reference(a, b.reshape(3, 4, 1))
    model = node_model(op_type, feeds, opset=6, broadcast=1, axis=1)
    (y,) = run_ours(model, feeds, like=[expected])
    assert_same(y, expected)
    tail = rand((5,), np.float32, 0.5, 2)  # without axis: trailing alignment, as numpy does
    feeds = {"a": a, "b": tail}
    (y,) = run_ours(node_model(op_type, feeds, opset=6, broadcast=1), feeds, like=[expected])
    assert_same(y, reference(a, tail))


def test_cast_opset_1_takes_the_type_name():
    x = np.array([1.7, -2.2], np.float32)
    (y,) = run_ours(node_model("Cast", {"x": x}, opset=1, to="INT32"), {"x": x}, like=[x.astype(np.int32)])
    assert_same(y, np.array([1, -2], np.int32))


def test_integer_division_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 1, -1, 0, -9], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 5, 3], np.int32)
    (q,) = assert_matches_oracle("Div", {"a": a, "b": b})
    np.testing.assert_array_equal(q, [3, -3, -3, 3, 0, 0, 0, -3])
    assert_matches_oracle("Div", {"a": a.astype(np.int8), "b": b.astype(np.int8)}, oracle="ref")
    assert_matches_oracle("Div", {"a": np.array([200, 7], np.uint8), "b": np.array([3, 2], np.uint8)}, oracle="ref")


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_integer_mod_sign_rules(fmod, dtype):
    a = np.array([7, -7, 7, -7, 0, 5, -4], dtype)
    b = np.array([3, 3, -3, -3, 2, -5, 2], dtype)
    assert_matches_oracle("Mod", {"a": a, "b": b}, fmod=fmod, oracle="ort" if dtype != np.int8 else "ref")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_fmod_broadcast(dtype):
    a = rand((3, 4), dtype, -10, 10)
    b = np.array([1.5, -2.5, 3.0, -0.75], dtype)
    assert_matches_oracle("Mod", {"a": a, "b": b}, fmod=1, rtol=1e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("base,exponent", [
    (np.float32, np.float32), (np.float32, np.int64), (np.float32, np.int32), (np.float64, np.float32),
    (np.int32, np.int32), (np.int64, np.int64), (np.int32, np.float32), (np.int64, np.float64),
])
def test_pow_output_has_the_base_type(base, exponent):
    a = np.array([[1, 2, 3, -2], [0, 4, 5, 1]]).astype(base)
    b = np.array([2, 3, 0, 3]).astype(exponent)
    (y,) = assert_matches_oracle("Pow", {"a": a, "b": b})
    assert y.dtype == base


def test_pow_float_base_fractional_exponent_and_negative_integer_exponents():
    assert_matches_oracle("Pow", {"a": rand((3, 4), np.float32, 0.1, 4), "b": rand((4,), np.float32, -2, 2)})
    # onnx.reference cannot raise integers to negative powers; onnxruntime truncates like C
    base, exponent = np.array([2, -1, 1, -1, 3, -2], np.int64), np.array([-1, -3, -5, -2, 2, -1], np.int64)
    (y,) = assert_matches_oracle("Pow", {"a": base, "b": exponent})
    np.testing.assert_array_equal(y, [0, -1, 1, 1, 9, 0])


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_variadic_ops_broadcast(op_type, dtype):
    if op_type == "Mean" and dtype in (np.int32, np.int64):
        dtype = np.float16
    feeds = {"a": rand((2, 3, 4), np.float64, -9, 9).astype(dtype), "b": rand((4,), np.float64, -9, 9).astype(dtype),
             "c": rand((3, 1), np.float64, -9, 9).astype(dtype)}
    assert_matches_oracle(op_type, feeds, rtol=1e-3 if dtype == np.float16 else 1e-6)
    assert_matches_oracle(op_type, {"a": feeds["a"]})  # one input: a copy


def test_max_min_propagate_nan_like_onnxruntime():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    b = np.array([np.nan, 2.0, 1.0], np.float32)
    assert_matches_oracle("Max", {"a": a, "b": b})
    assert_matches_oracle("Min", {"a": a, "b": b})


@pytest.mark.parametrize("op_type", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.float64])
def test_comparisons_broadcast_to_bool(op_type, dtype):
    a = RNG.integers(-3, 3, (3, 4)).astype(dtype)
    b = RNG.integers(-3, 3, (4,)).astype(dtype)
    (y,) = assert_matches_oracle(op_type, {"a": a, "b": b})
    assert y.dtype == np.bool_


def test_equal_on_strings_and_bools():
    a = np.array([["a", "bc"], ["", "x"]], dtype=object)
    b = np.array(["a", "x"], dtype=object)
    assert_matches_oracle("Equal", {"a": a, "b": b})
    assert_matches_oracle("Equal", {"a": np.array([True, False]), "b": np.array([True, True])})


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logical_ops_broadcast(op_type):
    a = RNG.integers(0, 2, (2, 3, 4)).astype(np.bool_)
    b = RNG.integers(0, 2, (3, 1)).astype(np.bool_)
    assert_matches_oracle(op_type, {"a": a, "b": b})


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitshift_unsigned(direction, dtype):
    a = np.array([[1, 16, 255], [7, 128, 3]], np.uint64).astype(dtype)
    b = np.array([1, 2, 3], dtype)
    assert_matches_oracle("BitShift", {"a": a, "b": b}, direction=direction)


def test_bitshift_signed_and_oversized_shifts_follow_opset_28():
    a = np.array([-8, -8, 5, -1, 64, 3], np.int8)
    b = np.array([1, 9, 8, 3, 1, -1], np.int8)
    model = node_model("BitShift", {"a": a, "b": b}, opset=28, direction="RIGHT")
    np.testing.assert_array_equal(run_ours(model, {"a": a, "b": b})[0], [-4, -1, 0, -1, 32, 0])
    model = node_model("BitShift", {"a": a, "b": b}, opset=28, direction="LEFT")
    np.testing.assert_array_equal(run_ours(model, {"a": a, "b": b})[0], [-16, 0, 0, -8, -128, 0])


@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint64])
def test_bitwise_binary(op_type, dtype):
    a = RNG.integers(0, 120, (3, 4)).astype(dtype)
    b = RNG.integers(0, 120, (4,)).astype(dtype)
    assert_matches_oracle(op_type, {"a": a, "b": b}, opset=18)


def test_where_broadcasts_numbers_and_strings():
    cond = RNG.integers(0, 2, (3, 1, 4)).astype(np.bool_)
    assert_matches_oracle("Where", {"c": cond, "x": rand((2, 4)), "y": rand((3, 2, 1))})
    assert_matches_oracle("Where", {"c": np.array([True, False]), "x": np.array(["yes", "yes"], dtype=object),
                    "y": np.array(["no"], dtype=object)})


# --- Cast ------------------------------------------------------------------------------------

NUMERIC = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.uint16, np.int32,
           np.uint32, np.int64, np.uint64, np.bool_]


@pytest.mark.parametrize("src", NUMERIC, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("dst", NUMERIC, ids=lambda t: np.dtype(t).name)
def test_cast_between_standard_types_matches_onnxruntime(src, dst):
    values = np.array([0, 1, 2, 3, 100, 7, 0, 1], np.float64)
    if np.dtype(src).kind == "f":
        values = np.array([0.0, 1.5, -2.25, 3.75, 100.5, -7.0, -0.0, 1e-3])
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "ui":  # out-of-range float -> int is UB
        values = np.abs(values) if np.dtype(dst).kind == "u" else values
    x = values.astype(src)
    assert_matches_oracle("Cast", {"x": x}, to=int(TensorProto.DataType.Value(_onnx_name(dst))))


def _onnx_name(dtype) -> str:
    from onnx import helper
    return TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


def test_cast_integer_wraps_and_bool():
    assert_matches_oracle("Cast", {"x": np.array([200, -56, 300, 65535], np.int32)}, to=TensorProto.INT8)
    assert_matches_oracle("Cast", {"x": np.array([np.nan, 0.0, -0.0, 2.0], np.float32)}, to=TensorProto.BOOL)


def test_cast_to_and_from_bfloat16():
    x = np.array([1.0, -2.5, 3.14159, 1e30, np.nan, np.inf, 65504.0, 1e-20], np.float32)
    # onnxruntime's Python API cannot hand over bfloat16 arrays: onnx.reference is the oracle
    assert_matches_oracle("Cast", {"x": x}, to=TensorProto.BFLOAT16, oracle="ref")
    b = x[:4].astype(ml_dtypes.bfloat16)
    for to in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16):
        assert_matches_oracle("Cast", {"x": b}, to=to, oracle="ref")
    assert_matches_oracle("Cast", {"x": np.array([1, -3, 1000], np.int32)}, to=TensorProto.BFLOAT16, oracle="ref")
    assert_matches_oracle("Cast", {"x": b}, to=TensorProto.INT32, oracle="ref")


def test_cast_strings_to_numbers():
    s = np.array(["3.14", "1000", "-1e-5", "1E8", "+INF", "-inf", "NaN", "0"], dtype=object)
    for to in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16):
        assert_matches_oracle("Cast", {"x": s}, to=to)
    ints = np.array(["12", "-7", "9223372036854775807", "0"], dtype=object)
    (y,) = assert_matches_oracle("Cast", {"x": ints}, to=TensorProto.INT64)
    assert y[2] == 2**63 - 1  # exact, not through float64
    # "100.5" -> INT is undefined in the spec ("may yield 100"); we truncate like that example
    text = np.array(["100.5", "-3.9"], dtype=object)
    (y,) = run_ours(node_model("Cast", {"x": text}, to=TensorProto.INT32), {"x": text})
    assert y.dtype == np.int32 and y.tolist() == [100, -3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_cast_floats_to_strings_like_onnxruntime(dtype):
    # onnxruntime writes %.8g and NaN / INF / -INF (onnx.reference uses numpy's repr instead)
    x = np.array([1.5, -2.0, 0.1, 1e-5, 123456789.0, 1 / 3, -0.0, 100.0, np.nan, np.inf, -np.inf], dtype)
    assert_matches_oracle("Cast", {"x": x}, to=TensorProto.STRING)


def test_cast_integers_and_bools_to_strings():
    assert_matches_oracle("Cast", {"x": np.array([[1, -20], [300, 0]], np.int64)}, to=TensorProto.STRING)
    assert_matches_oracle("Cast", {"x": np.array([2**62, 0], np.uint64)}, to=TensorProto.STRING)
    assert_matches_oracle("Cast", {"x": np.array([True, False])}, to=TensorProto.STRING)
    (y,) = assert_matches_oracle("Cast", {"x": np.array(["a", "b"], dtype=object)}, to=TensorProto.STRING)
    assert y.dtype == object


FLOAT8 = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ]


@pytest.mark.parametrize("to", FLOAT8, ids=TensorProto.DataType.Name)
@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("src", [np.float32, np.float16, np.float64])
def test_cast_to_float8_saturate(to, saturate, src):
    x = np.array([0.4789, -0.0, 1e6, -1e6, 500.0, 300.0, np.nan, np.inf, -np.inf, 1e-7, 0.01, 60000.0], np.float64)
    with np.errstate(over="ignore"):
        x = x.astype(src)
        assert_matches_oracle("Cast", {"x": x}, to=to, saturate=saturate, oracle="ref")


def test_cast_integers_saturate_into_float8():
    (y,) = assert_matches_oracle("Cast", {"x": np.array([3, 300, -7, 100000], np.int32)}, to=TensorProto.FLOAT8E4M3FN,
                 oracle="ref")
    assert float(y[3].astype(np.float32)) == 448.0


@pytest.mark.parametrize("to", [TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1, TensorProto.INT2,
                                TensorProto.UINT2, TensorProto.FLOAT6E2M3, TensorProto.FLOAT6E3M2],
                         ids=TensorProto.DataType.Name)
def test_cast_to_narrow_types(to):
    x = np.array([-9, -8, -3, -1, 0, 1, 2, 3, 7, 8, 15, 16, 0.3, -1.7, 100], np.float32)
    assert_matches_oracle("Cast", {"x": x}, to=to, oracle="ref", opset=28)
    (narrow,) = run_ours(node_model("Cast", {"x": x}, to=to, opset=28), {"x": x})
    assert_matches_oracle("Cast", {"x": narrow}, to=TensorProto.FLOAT, oracle="ref", opset=28)
    assert_matches_oracle("Cast", {"x": narrow}, to=TensorProto.FLOAT16, oracle="ref", opset=28)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [0, 1])
def test_cast_to_float8e8m0_rounding(round_mode, saturate):
    x = np.array([0.0, 0.124, 0.25, 0.75, 1.1, 1.5, 2.0, 3.0, 4.0, 1e38, 3.3e38, np.inf, np.nan, 1e-40], np.float32)
    assert_matches_oracle("Cast", {"x": x}, to=TensorProto.FLOAT8E8M0, saturate=saturate, round_mode=round_mode,
          oracle="ref", opset=25)


def test_castlike_follows_the_target_dtype():
    assert_matches_oracle("CastLike", {"x": np.array([1.7, -2.2], np.float32), "like": np.zeros(1, np.int32)})
    assert_matches_oracle("CastLike", {"x": np.array([1.7, 1e6], np.float32), "like": np.zeros(1, ml_dtypes.float8_e5m2)},
          oracle="ref", saturate=0)
    assert_matches_oracle("CastLike", {"x": np.array([3, 4], np.int64), "like": np.zeros(1, np.float16)})


# --- reductions ------------------------------------------------------------------------------

REDUCE_OPS = ["ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ReduceSum"]


def _reduce_check(op_type, x, axes, keepdims, opset, **kwargs):
    input_since = 13 if op_type == "ReduceSum" else 18
    if axes is not None and opset < input_since:
        return assert_matches_oracle(op_type, {"x": x}, opset=opset, axes=axes, keepdims=keepdims, **kwargs)
    feeds = {"x": x} if axes is None else {"x": x, "axes": np.array(axes, np.int64)}
    return assert_matches_oracle(op_type, feeds, opset=opset, keepdims=keepdims, **kwargs)


@pytest.mark.parametrize("op_type", REDUCE_OPS)
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("axes", [None, [1], [-1, 0], [0, 1, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_match_onnxruntime(op_type, opset, axes, keepdims):
    low = 0.1 if op_type == "ReduceLogSum" else -2.0
    _reduce_check(op_type, rand((3, 4, 5), np.float32, low, 2.0), axes, keepdims, opset, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1",
                                     "ReduceSumSquare", "ReduceMean"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_reductions(op_type, dtype):
    x = RNG.integers(-4, 5, (3, 4, 2)).astype(dtype)
    _reduce_check(op_type, x, [1], 1, 18)


@pytest.mark.parametrize("op_type,identity", [
    ("ReduceMax", -np.inf), ("ReduceMin", np.inf), ("ReduceProd", 1.0), ("ReduceSum", 0.0), ("ReduceL1", 0.0),
    ("ReduceL2", 0.0), ("ReduceSumSquare", 0.0), ("ReduceLogSum", -np.inf), ("ReduceLogSumExp", -np.inf)])
def test_reducing_an_empty_axis_gives_the_identity(op_type, identity):
    x = np.zeros((2, 0, 4), np.float32)
    (y,) = _reduce_check(op_type, x, [1], 1, 18, oracle="ref")
    assert y.shape == (2, 1, 4)
    np.testing.assert_array_equal(y, np.full((2, 1, 4), identity, np.float32))


def test_reduce_max_over_empty_bool_and_int_axes():
    (y,) = _reduce_check("ReduceMax", np.zeros((2, 0), np.bool_), [1], 0, 20, oracle="ref")
    np.testing.assert_array_equal(y, [False, False])
    (y,) = _reduce_check("ReduceMin", np.zeros((0, 3), np.int32), [0], 0, 18, oracle="ref")
    np.testing.assert_array_equal(y, np.full(3, np.iinfo(np.int32).max))


@pytest.mark.parametrize("op_type", REDUCE_OPS)
def test_empty_axes_input_with_noop_reduces_each_element_alone(op_type):
    # noop_with_empty_axes keeps the shape; onnxruntime and onnx.reference still apply the
    # per-element part (ReduceSumSquare gives x*x, ReduceLogSum log x, ReduceL1 |x|)
    x = rand((2, 3), np.float32, 0.5, 2.0) * np.array([1, -1, 1], np.float32)
    feeds = {"x": x, "axes": np.zeros(0, np.int64)}
    (y,) = assert_matches_oracle(op_type, feeds, opset=18, noop_with_empty_axes=1)
    assert y.shape == x.shape
    (y,) = assert_matches_oracle(op_type, feeds, opset=18, noop_with_empty_axes=0, keepdims=0, rtol=1e-5)  # reduce all
    assert y.shape == ()


def test_reduce_log_sum_exp_is_stable_for_large_values():
    x = np.array([[1000.0, 1000.0], [-1000.0, -np.inf]], np.float32)
    (y,) = _reduce_check("ReduceLogSumExp", x, [1], 0, 18, oracle="ref")
    np.testing.assert_allclose(y, [1000 + math.log(2), -1000], rtol=1e-6)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_argmax_argmin_ties(op_type, axis, keepdims, last):
    x = RNG.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    assert_matches_oracle(op_type, {"x": x}, axis=axis, keepdims=keepdims, select_last_index=last)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.float64])
def test_cumsum(exclusive, reverse, axis, dtype):
    x = rand((3, 4, 2), np.float64, -5, 5).astype(dtype)
    assert_matches_oracle("CumSum", {"x": x, "axis": np.array(axis, np.int32)}, exclusive=exclusive, reverse=reverse)
    assert_matches_oracle("CumSum", {"x": x, "axis": np.array([axis], np.int64)}, exclusive=exclusive, reverse=reverse)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumprod(exclusive, reverse):
    x = rand((3, 4), np.float32, 0.5, 1.5)
    assert_matches_oracle("CumProd", {"x": x, "axis": np.array(1, np.int64)}, exclusive=exclusive, reverse=reverse,
          oracle="ref", opset=26)


# --- ONNX backend node tests -----------------------------------------------------------------

ELEMENTWISE_OPS = frozenset(
    "Abs Neg Reciprocal Sqrt Exp Log Ceil Floor Round Sign Erf Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh "
    "Acosh Atanh IsNaN IsInf Not BitwiseNot Sub Mul Div Pow Mod Max Min Sum Mean Equal Less Greater "
    "LessOrEqual GreaterOrEqual And Or Xor BitShift BitwiseAnd BitwiseOr BitwiseXor Where Cast CastLike "
    "ReduceMax ReduceMin ReduceMean ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp "
    "ReduceSumSquare ArgMax ArgMin CumSum CumProd".split())
#: Ops the expanded (function-body) variants of these cases also use.
HELPER_OPS = frozenset("Add ReduceSum Constant ConstantOfShape Shape Reshape Identity Unsqueeze Squeeze Size "
                       "Gather Concat Slice Range Expand".split())


@pytest.mark.parametrize("op_type", sorted(ELEMENTWISE_OPS))
def test_backend_node_cases(op_type):
    cases = cases_for(op_type, ELEMENTWISE_OPS | HELPER_OPS)
    if not cases:
        pytest.skip(f"onnx has no backend node test for {op_type}")
    failed = failures(cases)
    assert not failed, "\n".join(f"{name}: {why}" for name, why in failed.items())
