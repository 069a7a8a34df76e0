"""Gemm's and MatMul's few-row products with a large weight (classifier heads): kernels/gemv.py,
against onnxruntime, with a spy proving the path ran."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from numba_test_helpers import assert_node_on_numba_matches, run_numba

FLOAT = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


@pytest.fixture
def calls(monkeypatch) -> dict:
    """How many products took the few-row kernel."""
    from onnxplug_numba.ops import op_matmul

    counts = {"few_rows": 0}
    original = op_matmul.few_rows_product

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        counts["few_rows"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(op_matmul, "few_rows_product", spy)
    return counts


def gemm_model(m: int, k: int, n: int, dtype=np.float32, trans_a: int = 0, trans_b: int = 1,
               alpha: float = 1.0, beta: float = 1.0, bias_shape: tuple | None = (-1,),
               constant_b: bool = True, seed: int = 0) -> tuple[onnx.ModelProto, dict]:
    rng = np.random.default_rng(seed)
    elem = FLOAT[dtype]
    a_shape = [k, m] if trans_a else [m, k]
    b_shape = [n, k] if trans_b else [k, n]
    b = (rng.standard_normal(b_shape) / np.sqrt(k)).astype(dtype)
    feeds = {"a": rng.standard_normal(a_shape).astype(dtype)}
    inputs = [helper.make_tensor_value_info("a", elem, a_shape)]
    inits = []
    if constant_b:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", elem, b_shape))
        feeds["b"] = b
    names = ["a", "b"]
    if bias_shape is not None:
        shape = tuple(n if d == -1 else d for d in bias_shape)
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), "c"))
        names.append("c")
    node = helper.make_node("Gemm", names, ["y"], transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", elem, [m, n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), feeds


@pytest.mark.parametrize("m,k,n,kwargs,threads", [
    (1, 1280, 1000, {}, 2),  # efficientnet-b0's head
    (2, 2048, 1000, {}, 2),  # batch 2
    (3, 300, 257, {"alpha": 0.5, "beta": 2.0, "bias_shape": (1, -1)}, 2),  # odd N, scaled terms
    (8, 256, 301, {"bias_shape": None}, 2),
    (1, 1024, 1000, {}, 1),  # one session thread
    (2, 256, 300, {"trans_a": 1, "trans_b": 0}, 2),  # a constant (K, N) weight, laid out once
    (1, 512, 130, {"dtype": np.float64}, 2),
    (1, 500, 160, {"constant_b": False}, 2),  # a fed (N, K) weight
])
def test_few_rows_gemm_matches_onnxruntime(calls, m, k, n, kwargs, threads) -> None:
    model, feeds = gemm_model(m, k, n, **kwargs)
    dtype = kwargs.get("dtype", np.float32)
    assert_node_on_numba_matches(model, feeds, "Gemm", threads=threads, atol=1e-5 if dtype == np.float32 else 1e-12)
    assert calls["few_rows"] == 1


@pytest.mark.parametrize("m,k,n,kwargs", [
    (9, 1024, 1000, {}),  # more rows than FEW_ROWS: BLAS
    (2, 1024, 1000, {"bias_shape": (2, -1)}),  # a full C matrix
    (2, 1024, 1000, {"bias_shape": (2, 1)}),  # a column
    (1, 64, 100, {}),  # a small weight: one BLAS call
    (2, 256, 300, {"trans_b": 0, "constant_b": False}),  # a fed (K, N) weight
])
def test_other_gemms_take_the_general_path(calls, m, k, n, kwargs) -> None:
    model, feeds = gemm_model(m, k, n, **kwargs)
    assert_node_on_numba_matches(model, feeds, "Gemm", threads=2)
    assert calls["few_rows"] == 0


def test_nan_and_inf_propagate() -> None:
    model, feeds = gemm_model(2, 1024, 1000)
    feeds["a"][0, 3] = np.nan
    feeds["a"][1, 5] = np.inf
    ours = assert_node_on_numba_matches(model, feeds, "Gemm", threads=2)
    assert np.isnan(ours[0][0]).all()


def matmul_model(a_shape: tuple, k: int, n: int, dtype=np.float32, constant_b: bool = True,
                 seed: int = 0) -> tuple[onnx.ModelProto, dict]:
    rng = np.random.default_rng(seed)
    elem = FLOAT[dtype]
    b = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype)
    feeds = {"a": rng.standard_normal(a_shape).astype(dtype)}
    inputs = [helper.make_tensor_value_info("a", elem, list(a_shape))]
    inits = [numpy_helper.from_array(b, "b")] if constant_b else []
    if not constant_b:
        inputs.append(helper.make_tensor_value_info("b", elem, [k, n]))
        feeds["b"] = b
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", elem, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), feeds


@pytest.mark.parametrize("a_shape,k,n,dtype,threads", [
    ((1, 512), 512, 214, np.float32, 2),  # magika's head
    ((4, 512), 512, 214, np.float32, 2),
    ((2, 3, 300), 300, 257, np.float32, 2),  # leading axes of 6 rows
    ((300,), 300, 257, np.float32, 2),  # a 1-D left operand
    ((1, 256), 256, 300, np.float64, 1),
])
def test_few_rows_matmul_with_a_constant_weight(calls, a_shape, k, n, dtype, threads) -> None:
    model, feeds = matmul_model(a_shape, k, n, dtype)
    ours = assert_node_on_numba_matches(model, feeds, "MatMul", threads=threads,
                                        atol=1e-5 if dtype == np.float32 else 1e-12)
    assert calls["few_rows"] == 1
    _, session = run_numba(model, feeds, fallback=True, threads=threads)  # the laid-out weight, run twice
    np.testing.assert_array_equal(session.run(None, feeds)[0], session.run(None, feeds)[0])
    np.testing.assert_array_equal(session.run(None, feeds)[0], ours[0])


@pytest.mark.parametrize("a_shape,kwargs", [
    ((9, 512), {}),  # more rows than FEW_ROWS
    ((2, 512), {"constant_b": False}),  # a fed weight
])
def test_other_matmuls_take_the_general_path(calls, a_shape, kwargs) -> None:
    model, feeds = matmul_model(a_shape, 512, 214, **kwargs)
    assert_node_on_numba_matches(model, feeds, "MatMul", threads=2)
    assert calls["few_rows"] == 0


@pytest.mark.parametrize("m,kwargs", [
    (12, {}),  # an OCR model's time steps through its classifier
    (40, {"alpha": 0.5, "beta": 2.0}),
    (16, {"bias_shape": None, "dtype": np.float64}),  # float64: BLAS on the laid-out weight
])
def test_many_rows_with_a_constant_trans_b_weight_share_the_product(monkeypatch, m, kwargs) -> None:
    """torch's Linear exports Gemm(transB=1): a constant weight is laid out (K, N) once and a large
    product runs on the threads' prange path (float32) as a contiguous one would."""
    from onnxplug_numba.ops import _base

    shared = {"calls": 0}
    original = _base._native_matmul

    def spy(*args, **kw):  # type: ignore[no-untyped-def]
        shared["calls"] += 1
        return original(*args, **kw)

    monkeypatch.setattr(_base, "_native_matmul", spy)
    model, feeds = gemm_model(m, 1024, 1000, **kwargs)
    dtype = kwargs.get("dtype", np.float32)
    assert_node_on_numba_matches(model, feeds, "Gemm", threads=2, atol=1e-5 if dtype == np.float32 else 1e-12)
    assert shared["calls"] == (1 if dtype == np.float32 and _base.native_parallel.AVAILABLE else 0)
