"""MatMulInteger, QLinearMatMul and com.microsoft MatMulIntegerToFloat, DynamicQuantizeMatMul and
QGemm on the numba provider against onnxruntime: uint8 and int8 operands, zero points absent, per
tensor or per column, odd sizes and several packed column groups, batched A (and B), B constant
or fed, bias and C, transposes, float and requantized outputs, rows over threads; the products
with AVX-512 VNNI (where the CPU has it) and without. Integer products are exact and the float
steps are onnxruntime's, so outputs are compared bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numba_test_helpers import ELEM, run_numba, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper
from onnxplug_numba.kernels import vnni

U8, I8 = np.uint8, np.int8


@pytest.fixture(params=["vnni", "int16"])
def products(request, monkeypatch):  # type: ignore[no-untyped-def]
    """Kernels made in the test use VNNI products (skipped on CPUs without) or the portable ones."""
    if request.param == "vnni" and not vnni.AVAILABLE:
        pytest.skip("the CPU has no AVX-512 VNNI")
    monkeypatch.setattr(vnni, "AVAILABLE", request.param == "vnni")


def _q(rng, dtype, shape):  # type: ignore[no-untyped-def]
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _model(op: str, inputs: list[tuple[str, np.ndarray | None]], constant: set[str], out_type: int,
           domain: str = "", **attrs) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:  # type: ignore[no-untyped-def]
    """One node reading ``inputs`` in order (None: omitted), those in ``constant`` initializers."""
    names = [name if value is not None else "" for name, value in inputs]
    node = helper.make_node(op, names, ["y"], domain=domain or None, **attrs)
    feeds = {n: v for n, v in inputs if v is not None and n not in constant}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, ELEM[v.dtype], v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(v, n) for n, v in inputs if v is not None and n in constant])
    imports = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=imports, ir_version=8), feeds


def _assert_same(model: onnx.ModelProto, feeds: dict[str, np.ndarray], op: str, threads: int = 1) -> np.ndarray:
    """The node on numba (no fallback), its output bitwise onnxruntime's."""
    got, session = run_numba(model, feeds, threads=threads)
    assert [(a.op_type, a.provider) for a in session.get_node_assignments()] == [(op, "numba")]
    expected = run_onnxruntime(model, feeds)[0]
    assert got[0].dtype == expected.dtype and got[0].shape == expected.shape, (got[0].dtype, got[0].shape,
                                                                                expected.shape)
    np.testing.assert_array_equal(got[0], expected)
    return got[0]


def _zero_point(rng, dtype, kind: str, n: int) -> np.ndarray | None:  # type: ignore[no-untyped-def]
    return None if kind == "none" else _q(rng, dtype, () if kind == "tensor" else (n,))


@pytest.mark.parametrize("a_type, b_type", [(U8, I8), (U8, U8), (I8, I8), (I8, U8)])
@pytest.mark.parametrize("b_zp", ["none", "tensor", "column"])
@pytest.mark.parametrize("a_shape, n, constant", [((5, 7), 3, True), ((2, 3, 19), 70, False), ((33, 300), 130, True),
                                                   ((1, 1), 1, False), ((7,), 5, True)])
def test_matmul_integer(products, rng, a_type, b_type, b_zp, a_shape, n, constant):
    a, b = _q(rng, a_type, a_shape), _q(rng, b_type, (a_shape[-1], n))
    inputs = [("a", a), ("b", b), ("a_zp", _q(rng, a_type, ())), ("b_zp", _zero_point(rng, b_type, b_zp, n))]
    model, feeds = _model("MatMulInteger", inputs, {"b", "b_zp"} if constant else set(), TensorProto.INT32)
    _assert_same(model, feeds, "MatMulInteger")


def test_matmul_integer_extremes(products):
    """The largest magnitudes: every product (0 - 255) * (127 - -128), summed over 300."""
    a, b = np.zeros((3, 300), U8), np.full((300, 5), -128, I8)
    inputs = [("a", a), ("b", b), ("a_zp", np.array(255, U8)), ("b_zp", np.array(127, I8))]
    model, feeds = _model("MatMulInteger", inputs, {"b", "b_zp"}, TensorProto.INT32)
    assert (_assert_same(model, feeds, "MatMulInteger") == 300 * 255 * 255).all()


@pytest.mark.parametrize("a_shape, b_shape", [((2, 5, 8), (2, 8, 3)), ((5, 8), (3, 8, 4)), ((3, 1, 4, 6), (2, 6, 5)),
                                              ((8,), (2, 8, 3))])
@pytest.mark.parametrize("constant", [True, False])
def test_matmul_integer_batched_b(products, rng, a_shape, b_shape, constant):
    inputs = [("a", _q(rng, U8, a_shape)), ("b", _q(rng, I8, b_shape)), ("a_zp", np.array(3, U8))]
    model, feeds = _model("MatMulInteger", inputs, {"b"} if constant else set(), TensorProto.INT32)
    _assert_same(model, feeds, "MatMulInteger")


def test_matmul_integer_per_row_a_zero_point(products, rng):
    """A 1-D a_zero_point is per row of each matrix of A (onnxruntime computes only one value:
    compared with an int64 product)."""
    a, b, azp = _q(rng, U8, (2, 4, 9)), _q(rng, I8, (9, 6)), _q(rng, U8, (4,))
    model, feeds = _model("MatMulInteger", [("a", a), ("b", b), ("a_zp", azp)], {"b"}, TensorProto.INT32)
    got, _ = run_numba(model, feeds)
    np.testing.assert_array_equal(got[0], (a.astype(np.int64) - azp[:, None]) @ b.astype(np.int64))


@pytest.mark.parametrize("a_type, b_type", [(U8, I8), (U8, U8), (I8, I8)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias, a_zp, constant", [(True, True, True), (False, True, False), (True, False, True)])
def test_matmul_integer_to_float(products, rng, a_type, b_type, per_column, bias, a_zp, constant):
    k, n = 37, 70
    params = (n,) if per_column else ()
    inputs = [("a", _q(rng, a_type, (2, 9, k))), ("b", _q(rng, b_type, (k, n))),
              ("a_scale", np.array(rng.uniform(0.001, 0.1), np.float32)),
              ("b_scale", rng.uniform(0.001, 0.1, params).astype(np.float32)),
              ("a_zp", _q(rng, a_type, ()) if a_zp else None), ("b_zp", _q(rng, b_type, params)),
              ("bias", rng.standard_normal(n).astype(np.float32) if bias else None)]
    model, feeds = _model("MatMulIntegerToFloat", inputs, {"b", "b_scale", "b_zp", "bias"} if constant else set(),
                          TensorProto.FLOAT, "com.microsoft")
    _assert_same(model, feeds, "MatMulIntegerToFloat")


@pytest.mark.parametrize("b_type", [U8, I8])
@pytest.mark.parametrize("per_column, bias", [(False, False), (True, True)])
@pytest.mark.parametrize("values", ["normal", "negative", "zeros"])
def test_dynamic_quantize_matmul(products, rng, b_type, per_column, bias, values):
    k, n = 64, 192
    a = {"normal": rng.standard_normal((2, 8, k)), "negative": -rng.uniform(0.1, 3, (2, 8, k)),
         "zeros": np.zeros((2, 8, k))}[values].astype(np.float32)
    params = (n,) if per_column else ()
    inputs = [("a", a), ("b", _q(rng, b_type, (k, n))), ("b_scale", rng.uniform(0.001, 0.1, params).astype(np.float32)),
              ("b_zp", _q(rng, b_type, params)), ("bias", rng.standard_normal(n).astype(np.float32) if bias else None)]
    model, feeds = _model("DynamicQuantizeMatMul", inputs, {"b", "b_scale", "b_zp", "bias"}, TensorProto.FLOAT,
                          "com.microsoft")
    _assert_same(model, feeds, "DynamicQuantizeMatMul")


@pytest.mark.parametrize("q_type", [U8, I8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("a_shape, b_shape", [((4, 13), (13, 9)), ((2, 3, 32), (32, 32)), ((2, 3, 8), (2, 8, 5))])
def test_qlinear_matmul(products, rng, q_type, per_column, a_shape, b_shape):
    n = b_shape[-1]
    params = (n,) if per_column and len(b_shape) == 2 else ()
    inputs = [("a", _q(rng, q_type, a_shape)), ("a_scale", np.array(0.02, np.float32)), ("a_zp", _q(rng, q_type, ())),
              ("b", _q(rng, q_type, b_shape)), ("b_scale", rng.uniform(0.001, 0.02, params).astype(np.float32)),
              ("b_zp", _q(rng, q_type, params) if q_type == U8 else np.zeros(params, I8)),
              ("y_scale", np.array(0.05, np.float32)), ("y_zp", _q(rng, q_type, ()))]
    model, feeds = _model("QLinearMatMul", inputs, {"b", "b_scale", "b_zp"} if len(b_shape) == 2 else set(),
                          ELEM[np.dtype(q_type)])
    _assert_same(model, feeds, "QLinearMatMul")


@pytest.mark.parametrize("q_type", [U8, I8])
@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (0, 1), (1, 0)])
@pytest.mark.parametrize("c_shape, requantized", [(None, True), ((10,), False), ((7, 10), True), ((1, 1), False),
                                                  ((10,), True)])
def test_qgemm(products, rng, q_type, trans_a, trans_b, c_shape, requantized):
    m, k, n = 7, 32, 10
    per_column = c_shape == (10,)
    params = (n,) if per_column else ()
    inputs = [("a", _q(rng, q_type, (k, m) if trans_a else (m, k))), ("a_scale", np.array(0.03, np.float32)),
              ("a_zp", _q(rng, q_type, ())), ("b", _q(rng, I8, (n, k) if trans_b else (k, n))),
              ("b_scale", rng.uniform(0.001, 0.02, params).astype(np.float32)), ("b_zp", np.zeros(params, I8)),
              ("c", None if c_shape is None else rng.integers(-3000, 3000, c_shape).astype(np.int32)),
              ("y_scale", np.array(0.07, np.float32) if requantized else None),
              ("y_zp", _q(rng, q_type, ()) if requantized else None)]
    out_type = ELEM[np.dtype(q_type)] if requantized else TensorProto.FLOAT
    model, feeds = _model("QGemm", inputs, {"b", "b_scale", "b_zp", "c"}, out_type, "com.microsoft",
                          transA=trans_a, transB=trans_b, alpha=0.75)
    _assert_same(model, feeds, "QGemm")


@pytest.mark.parametrize("threads", [2, 3])
def test_rows_over_threads(products, rng, monkeypatch, threads):
    from onnxplug_numba.ops import op_integer_matmul

    monkeypatch.setattr(op_integer_matmul, "THREADED_MIN_MACS", 0)
    a, b = _q(rng, U8, (3, 45, 40)), _q(rng, I8, (40, 77))
    inputs = [("a", a), ("b", b), ("a_zp", np.array(7, U8)), ("b_zp", _q(rng, I8, (77,)))]
    model, feeds = _model("MatMulInteger", inputs, {"b", "b_zp"}, TensorProto.INT32)
    _assert_same(model, feeds, "MatMulInteger", threads=threads)


def test_declines_float16_scales(rng):
    """QLinearMatMul with float16 scales (opset 21) is left to the numpy provider."""
    inputs = [("a", _q(rng, U8, (2, 4))), ("a_scale", np.array(0.02, np.float16)), ("a_zp", np.array(1, U8)),
              ("b", _q(rng, U8, (4, 3))), ("b_scale", np.array(0.02, np.float16)), ("b_zp", np.array(1, U8)),
              ("y_scale", np.array(0.05, np.float16)), ("y_zp", np.array(1, U8))]
    model, feeds = _model("QLinearMatMul", inputs, set(), TensorProto.UINT8)
    model.opset_import[0].version = 21
    _, session = run_numba(model, feeds, fallback=True)
    assert [a.provider for a in session.get_node_assignments()] != ["numba"]
