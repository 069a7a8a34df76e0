"""Small tensors take shortcuts (numpy ufuncs, memoised and generated call plans): results must not change.

The numpy path of a single exact op is compared bit for bit with the compiled loop the same
program gets above the size limit (and with numpy written independently here), on edge values:
NaN, +-0, +-inf, integer extremes that wrap. Kernels whose calls are planned once per shape are run
again on new values of the same shapes and compared with onnxruntime (or numpy).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from numba_test_helpers import assert_close, node_model, run_numba, run_onnxruntime
from onnxplug_numba.fusion import calls, numpy_path
from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import Step
from onnxplug_numba.fusion.runner import ElementwiseRunner
from onnxplug_numba.threads import ThreadControl

_FLOAT_EDGES = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25, 3e38, -3e38, 1e-45]


def _edge_values(dtype: np.dtype, count: int, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "b":
        return rng.integers(0, 2, count).astype(bool)
    if dtype.kind == "f":
        return rng.choice(np.array(_FLOAT_EDGES, dtype=dtype), count)
    info = np.iinfo(dtype)
    return rng.choice(np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dtype=dtype), count)


def _program(op: str, dtype: str) -> Program:
    out_dtype = "bool" if op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                 "Xor", "Not", "IsNaN") else dtype
    if op == "Where":
        return Program(("c", "a", "b"), ("bool", dtype, dtype), (Step(op, ("c", "a", "b"), "y", dtype),), ("y",))
    if op in ("Abs", "Neg", "Not", "IsNaN"):
        return Program(("a",), (dtype,), (Step(op, ("a",), "y", out_dtype),), ("y",))
    return Program(("a", "b"), (dtype, dtype), (Step(op, ("a", "b"), "y", out_dtype),), ("y",))


CASES = [(op, t) for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")
         for t in ("float32", "float64", "int8", "uint64", "int64")] + \
    [("Equal", "bool"), ("And", "bool"), ("Or", "bool"), ("Xor", "bool"), ("Not", "bool"),
     ("IsNaN", "float32"), ("Abs", "float32"), ("Abs", "int8"), ("Abs", "uint8"), ("Neg", "float64"),
     ("Neg", "int32"), ("Add", "int8"), ("Add", "uint64"), ("Sub", "uint8"), ("Sub", "int64"),
     ("Mul", "int16"), ("Mul", "int64"), ("Where", "float32"), ("Where", "int64")]


@pytest.mark.parametrize("op,dtype", CASES)
def test_numpy_path_is_bit_identical_to_the_compiled_loop(rng, op, dtype):
    program = _program(op, dtype)
    runner = ElementwiseRunner(program, ThreadControl(1))
    big = numpy_path.NUMPY_MAX_ELEMENTS + 1
    inputs = [_edge_values(np.dtype(t), big, rng) for t in program.input_dtypes]
    if len(inputs) > 1 and inputs[-2].dtype == inputs[-1].dtype:
        inputs[-1][::3] = inputs[-2][::3]  # equal pairs too, for the comparisons
    compiled = runner(*inputs)[0]  # above the limit: the generated loop
    assert numpy_path.numpy_call(program, (big,)) is None
    for shape in [(), (7,), (3, 5)]:
        count = int(np.prod(shape))
        small = [x[:count].reshape(shape) for x in inputs]
        assert numpy_path.numpy_call(program, shape) is not None
        got = runner(*small)[0]
        assert isinstance(got, np.ndarray) and got.shape == shape and got.dtype == compiled.dtype
        np.testing.assert_array_equal(got.ravel().view(np.uint8), compiled[:count].view(np.uint8))


def test_numpy_path_broadcasts_and_reads_a_repeated_input_once(rng):
    program = Program(("a", "b"), ("int64", "int64"), (Step("Sub", ("b", "a"), "y", "int64"),), ("y",))
    runner = ElementwiseRunner(program, ThreadControl(1))
    a = rng.integers(-50, 50, (3, 1)).astype(np.int64)
    b = rng.integers(-50, 50, (4,)).astype(np.int64)
    np.testing.assert_array_equal(runner(a, b)[0], b[None, :] - a)
    square = Program(("a",), ("int32",), (Step("Mul", ("a", "a"), "y", "int32"),), ("y",))
    x = np.array([3, -4, 46341], dtype=np.int32)  # 46341**2 wraps in int32
    np.testing.assert_array_equal(ElementwiseRunner(square, ThreadControl(1))(x)[0], x * x)


def test_float_arithmetic_stays_on_the_compiled_loop():
    program = Program(("a", "b"), ("float32", "float32"), (Step("Add", ("a", "b"), "y", "float32"),), ("y",))
    assert numpy_path.numpy_call(program, (4,)) is None


@pytest.mark.parametrize("op", ["Less", "Add", "Abs"])
def test_scalar_nodes_match_onnxruntime_over_repeated_calls(rng, op):
    # the second and later calls take the memoised plan: they must give fresh, correct outputs
    feeds_list = [{"a": np.array(rng.integers(-5, 5), np.int64), "b": np.array(rng.integers(-5, 5), np.int64)}
                  for _ in range(3)]
    inputs = {"a": feeds_list[0]["a"]} if op == "Abs" else feeds_list[0]
    model = node_model(op, inputs)
    _, session = run_numba(model, {k: feeds_list[0][k] for k in inputs})
    results = []
    for feeds in feeds_list:
        feeds = {k: feeds[k] for k in inputs}
        got = session.run(None, feeds)
        np.testing.assert_array_equal(got[0], run_onnxruntime(model, feeds)[0])
        results.append(got[0])
    assert all(isinstance(r, np.ndarray) and r.shape == () for r in results)
    assert len({id(r) for r in results}) == len(results)


@pytest.mark.parametrize("axes,keepdims", [([1], 0), ([0, 2], 0), ([0, 2], 1), (None, 0)])
@pytest.mark.parametrize("opset", [13, 18])  # axes as an attribute (one input), then as an input
def test_reduction_plans_are_reused_correctly_across_calls(rng, axes, keepdims, opset):
    x0 = rng.standard_normal((3, 4, 5)).astype(np.float32)
    if opset < 18:
        model = node_model("ReduceMax", {"x": x0}, opset=opset, keepdims=keepdims,
                           **({"axes": axes} if axes is not None else {}))
    else:
        init = {"axes": np.array(axes, dtype=np.int64)} if axes is not None else {}
        model = node_model("ReduceMax", {"x": x0}, initializers=init, opset=18, keepdims=keepdims)
    _, session = run_numba(model, {"x": x0})
    for _ in range(3):  # same shape, new values: the memoised plan must read the new input
        x = rng.standard_normal((3, 4, 5)).astype(np.float32)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_with_scalar_and_negative_indices(rng, index_dtype, axis):
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    for index in (np.array(-1, index_dtype), np.array([[0, -2], [1, 2]], index_dtype)):
        model = node_model("Gather", {"x": x, "i": index}, axis=axis)
        _, session = run_numba(model, {"x": x, "i": index})
        for _ in range(2):  # a second call too: the kernel keeps what it worked out on the first
            feeds = {"x": rng.standard_normal(x.shape).astype(np.float32), "i": index}
            np.testing.assert_array_equal(session.run(None, feeds)[0], run_onnxruntime(model, feeds)[0])


def test_tiny_matmul_matches_onnxruntime_over_repeated_calls(rng):
    a0, w = rng.standard_normal((1, 32)).astype(np.float32), rng.standard_normal((32, 64)).astype(np.float32)
    model = node_model("MatMul", {"a": a0}, initializers={"w": w})
    _, session = run_numba(model, {"a": a0})
    for _ in range(3):
        a = rng.standard_normal((1, 32)).astype(np.float32)
        np.testing.assert_allclose(session.run(None, {"a": a})[0], run_onnxruntime(model, {"a": a})[0],
                                   rtol=1e-5, atol=1e-5)


def test_chain_output_copied_by_identity_is_not_written_twice(rng):
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Tanh", ["s"], ["h"]),
             helper.make_node("Identity", ["h"], ["h_copy"]), helper.make_node("Abs", ["h"], ["a"])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("h", "h_copy", "a")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [8])], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    _, session = run_numba(model, {"x": np.zeros((2, 8), np.float32), "b": np.zeros(8, np.float32)})
    (step,) = session.engine.plan.steps
    assert step.kind == "fused" and step.kernel.program.outputs == ("h", "a")
    for _ in range(2):
        feeds = {"x": rng.standard_normal((2, 8)).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32)}
        got = session.run(None, feeds)
        assert_close(got, run_onnxruntime(model, feeds))


@pytest.mark.parametrize("activation", ["Tanh", "Relu", "Sigmoid"])
def test_fused_matmul_activation_over_repeated_calls(rng, activation):
    # the activation is read once at kernel creation; numpy (written here) is the oracle
    a0, w = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    model = node_model("FusedMatMul", {"a": a0}, initializers={"w": w}, domain="com.onnxplug",
                       activation=activation)
    oracle = {"Tanh": np.tanh, "Relu": lambda y: np.maximum(y, 0), "Sigmoid": lambda y: 1 / (1 + np.exp(-y))}
    _, session = run_numba(model, {"a": a0})
    for _ in range(2):
        a = rng.standard_normal((3, 8)).astype(np.float32)
        expected = oracle[activation](a.astype(np.float64) @ w.astype(np.float64))
        np.testing.assert_allclose(session.run(None, {"a": a})[0], expected, rtol=1e-5, atol=1e-5)


def test_dispatcher_routes_new_shapes_and_non_arrays_to_the_first_call_only():
    seen = []
    table: dict = {}

    def first(*xs):
        seen.append(xs)
        table[calls.shape_key([np.asarray(x) for x in xs], with_dtypes=True)] = lambda *ys: ("planned",)
        return ("first",)

    dispatch = calls.dispatcher(2, table, first, with_dtypes=True)
    a, b = np.zeros((2, 3), np.float32), np.zeros(3, np.float32)
    assert dispatch(a, b) == ("first",) and dispatch(a, b) == ("planned",)
    assert dispatch(a, b.astype(np.float64)) == ("first",)  # another dtype: planned anew
    assert dispatch(1.5, b) == ("first",) and dispatch(1.5, b) == ("first",)  # no .shape: never looked up
    assert len(seen) == 4

    def failing(*xs):
        raise KeyError("inside the planned call")

    table[calls.shape_key([a, b], with_dtypes=True)] = failing
    with pytest.raises(KeyError, match="inside the planned call"):  # not mistaken for a missing plan
        dispatch(a, b)


@pytest.mark.parametrize("a_shape,b_shape", [((2, 4), (2, 4)), ((2, 4), (4,)), ((3, 1, 5), (1, 4, 1))])
def test_serial_call_returns_a_repeated_output_as_one_array(rng, a_shape, b_shape):
    # flat, then nd loop shapes (a broadcast bias; broadcasting on both sides)
    program = Program(("a", "b"), ("float32", "float32"),
                      (Step("Add", ("a", "b"), "s", "float32"), Step("Abs", ("s",), "y", "float32")), ("s", "y"))
    runner = ElementwiseRunner(program, ThreadControl(1), returned=(0, 1, 0))
    for _ in range(2):
        a, b = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
        s, y, s_again = runner(a, b)
        np.testing.assert_array_equal(s, a + b)
        np.testing.assert_array_equal(y, np.abs(a + b))
        assert s_again is s


def test_clip_with_an_omitted_bound_over_repeated_calls(rng):
    x0 = rng.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("Clip", ["x", "", "hi"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "hi")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    _, session = run_numba(model, {"x": x0})
    for _ in range(2):
        x = rng.standard_normal((3, 4)).astype(np.float32)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])
