"""Integer products with a constant right operand (MatMulInteger, QLinearMatMul; com.microsoft QGemm,
MatMulIntegerToFloat, DynamicQuantizeMatMul), whose centered B is prepared once per kernel and
kept, in float32 where every partial sum is exact there, else in float64: against onnxruntime, over
two runs each of two shapes (the later runs use the kept B)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix

RNG = np.random.default_rng(370)


def _ints(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return RNG.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, shape).astype(dtype)


def _check(op_type, a, inits, names, out_type, domain="", **attrs):
    graph = helper.make_graph(
        [helper.make_node(op_type, names, ["y"], domain=domain, **attrs)], "g",
        [helper.make_tensor_value_info("a", helper.np_dtype_to_tensor_dtype(a[0].dtype), ["m", a[0].shape[1]])],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    model = model.SerializeToString()
    ours = onnxplug.InferenceSession(model, providers=["numpy"])
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    for x in a:
        for _ in range(2):
            got, want = ours.run(None, {"a": x})[0], oracle.run(None, {"a": x})[0]
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def _b(dtype, k, n, far):
    """B of k x n; with ``far`` at least 100 from a zero zero point, so that k >= 1311 passes 2**24."""
    return (_ints(dtype, (k, n), 100) if far else _ints(dtype, (k, n))), \
        (np.zeros(n, dtype) if far else _ints(dtype, n, 0 if dtype == np.uint8 else -10, 10))


@pytest.mark.parametrize("a_dtype,b_dtype", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("k,far", [(24, False), (1400, True)])
def test_mat_mul_integer_kept_b(a_dtype, b_dtype, k, far):
    b, bzp = _b(b_dtype, k, 6, far)
    a = [_ints(a_dtype, (3, k)), _ints(a_dtype, (1, k))]
    _check("MatMulInteger", a, {"b": b, "azp": _ints(a_dtype, ()), "bzp": bzp}, ["a", "b", "azp", "bzp"],
           TensorProto.INT32)


@pytest.mark.parametrize("b_dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("k,far", [(24, False), (1400, True)])
def test_qlinear_mat_mul_kept_b(b_dtype, k, far):
    b, bzp = _b(b_dtype, k, 5, far)
    inits = {"as": np.float32(0.02), "azp": np.uint8(120), "b": b, "bs": RNG.uniform(0.001, 0.01, 5).astype(np.float32),
             "bzp": bzp, "ys": np.float32(2.0 if far else 0.3), "yzp": np.uint8(100)}
    a = [_ints(np.uint8, (4, k)), _ints(np.uint8, (2, k))]
    _check("QLinearMatMul", a, inits, ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], TensorProto.UINT8)


@pytest.mark.parametrize("k,far,c_hi", [(24, False, 3000), (1400, True, 3000), (24, False, 1 << 26)])
def test_qgemm_kept_transposed_b(k, far, c_hi):
    b, bzp = _b(np.int8, k, 7, far)
    inits = {"as": np.float32(0.02), "azp": np.uint8(128), "b": np.ascontiguousarray(b.T),
             "bs": RNG.uniform(0.001, 0.01, 7).astype(np.float32), "bzp": bzp,
             "c": RNG.integers(-c_hi, c_hi, 7).astype(np.int32), "ys": np.float32(0.5), "yzp": np.uint8(128)}
    a = [_ints(np.uint8, (3, k)), _ints(np.uint8, (5, k))]
    _check("QGemm", a, inits, ["a", "as", "azp", "b", "bs", "bzp", "c", "ys", "yzp"], TensorProto.UINT8,
           domain="com.microsoft", transB=1)
    del inits["ys"], inits["yzp"]
    _check("QGemm", a, inits, ["a", "as", "azp", "b", "bs", "bzp", "c"], TensorProto.FLOAT,
           domain="com.microsoft", transB=1)


@pytest.mark.parametrize("k,far", [(24, False), (1400, True)])
def test_matmul_integer_to_float_and_dynamic_quantize_matmul_kept_b(k, far):
    b, bzp = _b(np.int8, k, 6, far)
    bs, bias = RNG.uniform(0.001, 0.01, 6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
    a = [_ints(np.uint8, (3, k)), _ints(np.uint8, (2, k))]
    _check("MatMulIntegerToFloat", a, {"b": b, "as": np.float32(0.05), "bs": bs, "azp": np.uint8(3), "bzp": bzp,
                                       "bias": bias},
           ["a", "b", "as", "bs", "azp", "bzp", "bias"], TensorProto.FLOAT, domain="com.microsoft")
    x = [RNG.standard_normal((3, k)).astype(np.float32), RNG.standard_normal((2, k)).astype(np.float32) * 4]
    _check("DynamicQuantizeMatMul", x, {"b": b, "bs": bs, "bzp": bzp, "bias": bias}, ["a", "b", "bs", "bzp", "bias"],
           TensorProto.FLOAT, domain="com.microsoft")


def test_integer_matrix_chooses_float32_only_within_the_bound():
    b = np.full((10, 3), -128, np.int8)  # 1280 per unit of the left operand's range
    kept = IntegerMatrix(constant=True)
    assert kept.get(b, np.int8(0), 255.0).dtype == np.float32  # 326400 < 2**24
    assert kept.get(b, np.int8(0), 20000.0).dtype == np.float64
    assert kept.get(b, np.int8(0), 255.0, np.array([1 << 24], np.int32)).dtype == np.float64
