"""Shortcuts of the kernels a Loop body or an If predicate calls on tiny tensors give the oracle's results.

Covered: 0-d comparisons and logic computed on Python values, generated call functions sharing one
code object per source (each with its own bound shapes), Gather of one slice of the first axis as a
view, and small Gemm/MatMul products that skip the BLAS thread check. onnxruntime is the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from numba_test_helpers import assert_close, node_model, run_numba, run_onnxruntime
from onnxplug_numba.fusion import calls
from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import Step
from onnxplug_numba.fusion.runner import ElementwiseRunner
from onnxplug_numba.threads import ThreadControl

_FLOAT_PAIRS = [(1.5, 1.5), (-0.0, 0.0), (np.nan, 1.0), (1.0, np.nan), (np.nan, np.nan), (np.inf, 3e38),
                (-np.inf, -np.inf), (1e-45, 0.0), (-2.0, 3.0)]
_INT_PAIRS = [(np.iinfo(np.int64).max, np.iinfo(np.int64).min), (-1, -1), (0, 1), (np.iinfo(np.int64).min, 0)]


def _session_calls(model, feeds_list):
    """Outputs of one session over successive feeds (the first call plans, later ones reuse it)."""
    _, session = run_numba(model, feeds_list[0])
    return [session.run(None, feeds)[0] for feeds in feeds_list]


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_zero_d_comparisons_match_onnxruntime(op, dtype):
    pairs = _INT_PAIRS if np.dtype(dtype).kind == "i" else _FLOAT_PAIRS
    feeds_list = [{"a": np.array(a, dtype), "b": np.array(b, dtype)} for a, b in pairs]
    model = node_model(op, feeds_list[0])
    got = _session_calls(model, feeds_list)
    for feeds, result in zip(feeds_list, got):
        expected = run_onnxruntime(model, feeds)[0]
        assert isinstance(result, np.ndarray) and result.shape == () and result.dtype == np.bool_
        assert bool(result) == bool(expected), (op, feeds)
    assert len({id(r) for r in got}) == len(got)  # a fresh array per call


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Not"])
def test_zero_d_logic_matches_onnxruntime(op):
    pairs = [(False, False), (False, True), (True, False), (True, True)]
    feeds_list = [{"a": np.array(a)} if op == "Not" else {"a": np.array(a), "b": np.array(b)} for a, b in pairs]
    model = node_model(op, feeds_list[0])
    for feeds, result in zip(feeds_list, _session_calls(model, feeds_list)):
        assert result.shape == () and result.dtype == np.bool_
        assert bool(result) == bool(run_onnxruntime(model, feeds)[0]), (op, feeds)


def test_zero_d_is_nan_matches_onnxruntime():
    feeds_list = [{"a": np.array(v, np.float32)} for v in (np.nan, 0.0, np.inf, -np.nan)]
    model = node_model("IsNaN", feeds_list[0])
    for feeds, result in zip(feeds_list, _session_calls(model, feeds_list)):
        assert bool(result) == bool(run_onnxruntime(model, feeds)[0])


def test_zero_d_comparison_of_a_repeated_input():
    # Less(a, a) and Equal(a, a): the input is passed once; NaN is not equal to itself
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Equal", ["a", "a"], ["e"]), helper.make_node("Less", ["a", "a"], ["l"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info(n, TensorProto.BOOL, []) for n in ("e", "l")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    _, session = run_numba(model, {"a": np.array(1.0, np.float32)})
    for value in (1.0, np.nan, -0.0):
        feeds = {"a": np.array(value, np.float32)}
        got = session.run(None, feeds)
        expected = run_onnxruntime(model, feeds)
        assert [bool(g) for g in got] == [bool(e) for e in expected], value


def test_generated_calls_share_code_but_not_their_bound_shapes(rng):
    program = Program(("a", "b"), ("float32", "float32"), (Step("Mul", ("a", "b"), "y", "float32"),), ("y",))
    runner = ElementwiseRunner(program, ThreadControl(1))
    small = runner.call_for(((3,), (3,)))
    large = runner.call_for(((5000,), (5000,)))  # the same generated source, other shape and extent
    assert small.__code__ is large.__code__ and small.__globals__ is not large.__globals__
    for n in (3, 5000, 3):
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        (y,) = runner(a, b)
        assert y.shape == (n,)
        np.testing.assert_array_equal(y, a * b)


@pytest.mark.parametrize("index", [0, 3, -1, -4])
def test_gather_of_one_leading_slice_matches_onnxruntime(rng, index):
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    model = node_model("Gather", {"x": x, "i": np.array(index, np.int64)}, axis=0)
    _, session = run_numba(model, {"x": x, "i": np.array(index, np.int64)})
    for _ in range(2):
        feeds = {"x": rng.standard_normal(x.shape).astype(np.float32), "i": np.array(index, np.int64)}
        got = session.run(None, feeds)[0]
        np.testing.assert_array_equal(got, run_onnxruntime(model, feeds)[0])
        assert got.flags.c_contiguous


def test_gather_of_a_vector_element_is_a_zero_d_array(rng):
    x = np.array([7, 8, 9], np.int64)
    model = node_model("Gather", {"x": x, "i": np.array(-2, np.int64)}, axis=0)
    got, _ = run_numba(model, {"x": x, "i": np.array(-2, np.int64)})
    assert isinstance(got[0], np.ndarray) and got[0].shape == () and int(got[0]) == 8


@pytest.mark.parametrize("index", [4, -5])
def test_gather_out_of_range_scalar_index_is_an_error(rng, index):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    model = node_model("Gather", {"x": x, "i": np.array(index, np.int64)}, axis=0)
    with pytest.raises(Exception, match="out of bounds|out of range"):
        run_numba(model, {"x": x, "i": np.array(index, np.int64)})


@pytest.mark.parametrize("m,k,n", [(1, 32, 64), (8, 64, 64), (96, 64, 64), (1, 128, 128), (80, 80, 80)])
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_small_gemm_matches_onnxruntime(rng, m, k, n, trans_a, trans_b):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    for c_shape, alpha, beta in [((n,), 1.0, 1.0), ((m, n), 0.5, 2.0), ((1, n), 1.0, 0.0), (None, 1.5, 1.0)]:
        inits = {"b": b} if c_shape is None else {"b": b, "c": rng.standard_normal(c_shape).astype(np.float32)}
        model = node_model("Gemm", {"a": a}, initializers=inits, transA=trans_a, transB=trans_b,
                           alpha=alpha, beta=beta)
        _, session = run_numba(model, {"a": a})
        for _ in range(2):
            feeds = {"a": rng.standard_normal(a.shape).astype(np.float32)}
            assert_close(session.run(None, feeds), run_onnxruntime(model, feeds), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,k,n", [(8, 64, 64), (64, 64, 64), (1, 96, 97), (100, 64, 64)])
def test_small_matmul_matches_onnxruntime(rng, m, k, n):
    a0, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    model = node_model("MatMul", {"a": a0}, initializers={"w": w})
    _, session = run_numba(model, {"a": a0})
    for _ in range(2):
        feeds = {"a": rng.standard_normal((m, k)).astype(np.float32)}
        assert_close(session.run(None, feeds), run_onnxruntime(model, feeds), rtol=1e-4, atol=1e-4)



@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMean", "ReduceSum", "ReduceLogSumExp"])
@pytest.mark.parametrize("shape,axes,keepdims", [((1, 64), None, 0), ((3, 7), [1], 0), ((3, 7), [-1], 1)])
def test_reductions_of_matrix_rows_match_onnxruntime(rng, op, shape, axes, keepdims):
    # a Loop body's max|h| over (batch, hidden): the input is reduced as it is, without a reshape
    x0 = rng.standard_normal(shape).astype(np.float32)
    init = {} if axes is None else {"axes": np.array(axes, np.int64)}
    model = node_model(op, {"x": x0}, initializers=init, opset=18, keepdims=keepdims)
    _, session = run_numba(model, {"x": x0})
    for layout in ("C", "F", "C"):  # a Fortran-ordered input of the same shape is made contiguous first
        x = np.asarray(rng.standard_normal(shape).astype(np.float32), order=layout)
        assert_close(session.run(None, {"x": x}), run_onnxruntime(model, {"x": np.ascontiguousarray(x)}))
