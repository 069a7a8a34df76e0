"""Fused elementwise chains and Conv groups: claimed as one step, compiled once, correct."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from numba_test_helpers import assert_close, run_numba, run_onnxruntime


def chain_model(x_shape, b_shape, *, extra_output: str = "") -> onnx.ModelProto:
    """y = Sigmoid(Relu(x + b) * 2) - x, plus optionally an intermediate as a second output."""
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Mul", ["r", "two"], ["m"]), helper.make_node("Sigmoid", ["m"], ["g"]),
             helper.make_node("Sub", ["g", "x"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info(extra_output, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                                               helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
                              outputs, [onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("x_shape,b_shape", [((2, 3, 4, 5), (3, 1, 1)), ((4, 5), (4, 5)), ((64, 70), (70,)),
                                             ((3, 1, 5), (1, 4, 1)), ((), ())])
def test_chain_is_one_fused_step_and_matches_onnxruntime(rng, x_shape, b_shape):
    model = chain_model(x_shape, b_shape, extra_output="s")
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32), "b": rng.standard_normal(b_shape).astype(np.float32)}
    got, session = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds))
    steps = session.engine.plan.steps
    assert [s.kind for s in steps] == ["fused"], [s.kind for s in steps]
    assert sorted(steps[0].outputs) == ["s", "y"]


def test_chain_with_symbolic_shapes_falls_back_step_by_step_when_an_output_is_smaller(rng):
    # b's intermediate output "s" only has x's shape when x is the larger; feed a broadcasting b
    model = chain_model(["n", 4], ["n", 4], extra_output="s")
    feeds = {"x": rng.standard_normal((1, 4)).astype(np.float32), "b": rng.standard_normal((3, 4)).astype(np.float32)}
    got, _ = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds))


def _mask_then_scores_model() -> onnx.ModelProto:
    """An exported attention's additive mask, Where(mask, 0, lowest), read by every layer: a chain
    with layer 0's scores * scale + mask, the mask's output smaller than the scores when fed."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Where", ["mask", "zero", "lowest"], ["additive"]),
             helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
             helper.make_node("Add", ["scaled", "additive"], ["y"])]
    inits = {"zero": np.array(0.0, np.float32), "lowest": np.array(np.finfo(np.float32).min, np.float32),
             "scale": np.array(0.35, np.float32)}
    graph = helper.make_graph(
        nodes, "mask", [helper.make_tensor_value_info("mask", TensorProto.BOOL, ["b", 1, "s", "s"]),
                        helper.make_tensor_value_info("scores", f, ["b", "h", "s", "s"])],
        [helper.make_tensor_value_info("y", f, None), helper.make_tensor_value_info("additive", f, None)],
        [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("heads", [1, 4])
def test_chain_with_an_output_smaller_than_the_loop_runs_each_shape_as_one_loop(rng, heads):
    model = _mask_then_scores_model()
    feeds = {"mask": rng.random((2, 1, 7, 7)) > 0.3, "scores": rng.standard_normal((2, heads, 7, 7)).astype(np.float32)}
    got, session = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds))
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]
    assert got[1].shape == (2, 1, 7, 7)


def test_large_chain_runs_the_parallel_variant(rng):
    model = chain_model((8, 64, 32, 32), (64, 1, 1))
    feeds = {"x": rng.standard_normal((8, 64, 32, 32)).astype(np.float32),
             "b": rng.standard_normal((64, 1, 1)).astype(np.float32)}
    got, _ = run_numba(model, feeds, threads=2)
    assert_close(got, run_onnxruntime(model, feeds))


def test_conv_batchnorm_add_relu_is_one_step(rng):
    c = 4
    init = {"w": rng.standard_normal((c, c, 3, 3)).astype(np.float32) * 0.3,
            "scale": rng.standard_normal(c).astype(np.float32), "bias": rng.standard_normal(c).astype(np.float32),
            "mean": rng.standard_normal(c).astype(np.float32), "var": rng.random(c).astype(np.float32) + 0.5}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
             helper.make_node("Add", ["n", "x"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, c, 6, 6))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(v, k) for k, v in init.items()])
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    feeds = {"x": rng.standard_normal((2, c, 6, 6)).astype(np.float32)}
    got, session = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds))
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]


def test_unfusable_dtype_is_not_chained(rng):
    """float16 chains are not claimed: with fallback allowed they run on the default provider."""
    nodes = [helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "f16", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, (3,))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = np.array([-1.5, 0.25, 3.0], dtype=np.float16)
    got, session = run_numba(model, {"x": x}, fallback=True)
    assert {a.provider for a in session.get_node_assignments()} == {"numpy"}
    np.testing.assert_array_equal(got[0], np.maximum(x + x, 0))


def test_costly_chain_is_shared_in_a_prange_region_from_fewer_elements(rng):
    # Gelu(x + b) over 128 x 1024 values: half the size at which an Add chain is shared, but ~13
    # Adds' work per value, so it runs as one part per thread in the module's prange region
    import math

    from onnxplug_numba.fusion.codegen import Program
    from onnxplug_numba.fusion.ops import Step, relative_cost
    from onnxplug_numba.fusion.runner import ElementwiseRunner
    from onnxplug_numba.kernels import native_parallel
    from onnxplug_numba.threads import PARALLEL_MIN_ELEMENTS, ThreadControl

    if not native_parallel.PRANGE_AVAILABLE:
        pytest.skip("numba has no thread-safe threading layer here")
    steps = (Step("Add", ("x", "b"), "s", "float32"), Step("Gelu", ("s",), "y", "float32", (("approximate", "none"),)))
    assert relative_cost(steps) == 13 and relative_cost(steps[:1]) == 1
    x = rng.standard_normal((1, 128, 1024)).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    assert x.size < PARALLEL_MIN_ELEMENTS
    program = Program(("x", "b"), ("float32", "float32"), steps, ("y",))
    shared = ElementwiseRunner(program, ThreadControl(2))
    (got,) = shared(x, b)
    assert shared.module("nd", ("c", "c")).kernel_shared.signatures, "the prange variant did not run"
    (alone,) = ElementwiseRunner(program, ThreadControl(1))(x, b)
    np.testing.assert_array_equal(got, alone)
    s = x.astype(np.float64) + b
    expected = 0.5 * s * (1 + np.vectorize(math.erf)(s / math.sqrt(2)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shapes", [((3, 5, 4, 7), (1, 5, 1, 7), (3, 1, 4, 1)), ((2, 9, 3, 3), (1, 9, 1, 1), ()),
                                    ((4, 6, 5), (6, 1), (4, 1, 5))])
def test_broadcast_loop_started_at_any_row_walks_every_position(rng, shapes):
    """The nd loop divides its first row's position out and steps the rest: every split of the
    rows into [lo, hi) parts gives numpy's broadcast result."""
    from onnxplug_numba.fusion.codegen import Program
    from onnxplug_numba.fusion.ops import Step
    from onnxplug_numba.fusion.runner import ElementwiseRunner, plan_layout
    from onnxplug_numba.threads import ThreadControl

    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    program = Program(("x", "a", "b"), ("float32",) * 3,
                      (Step("Mul", ("x", "a"), "m", "float32"), Step("Add", ("m", "b"), "y", "float32")), ("y",))
    out_shape = np.broadcast_shapes(*shapes)
    layout = plan_layout(shapes, out_shape)
    assert layout.mode == "nd" and len(layout.shape) >= 2
    kernel = ElementwiseRunner(program, ThreadControl(1)).module(layout.mode, layout.kinds).kernel
    rows = int(np.prod(layout.shape[:-1]))
    expected = arrays[0] * arrays[1] + arrays[2]
    for cuts in ([0, rows], [0, 1, rows], [0, rows // 3, rows // 2 + 1, rows - 1, rows]):
        out = np.full(out_shape, np.nan, np.float32)
        args = [layout.shape]
        for x, st in zip(arrays, layout.strides):
            args += [x.ravel(), st]
        for lo, hi in itertools.pairwise(cuts):
            kernel(lo, hi, *args, out.ravel())
        np.testing.assert_array_equal(out, expected)


def test_large_broadcast_chain_split_over_threads_matches_onnxruntime(rng):
    model = chain_model((3, 96, 5, 7), (96, 1, 7))
    feeds = {"x": rng.standard_normal((3, 96, 5, 7)).astype(np.float32),
             "b": rng.standard_normal((96, 1, 7)).astype(np.float32)}
    got, _ = run_numba(model, feeds, threads=2)
    assert_close(got, run_onnxruntime(model, feeds))
    one, _ = run_numba(model, feeds, threads=1)
    np.testing.assert_array_equal(got[0], one[0])


@pytest.mark.parametrize("rows", [7, 4000])  # one chunk on the calling thread; the threads' row blocks
def test_rms_norm_spelled_out_runs_as_the_fused_op(rng, rows):
    """Llama's RMSNorm as exported (Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Mul by gamma) is one
    com.onnxplug RMSNormalization step on numba, with onnxruntime's result."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Pow", ["x", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["ms", "eps"], ["se"]), helper.make_node("Sqrt", ["se"], ["std"]),
             helper.make_node("Div", ["one", "std"], ["inv"]), helper.make_node("Mul", ["x", "inv"], ["n"]),
             helper.make_node("Mul", ["gamma", "n"], ["y"])]
    inits = {"two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32), "one": np.array(1.0, np.float32),
             "gamma": rng.standard_normal(64).astype(np.float32)}
    graph = helper.make_graph(nodes, "rms", [helper.make_tensor_value_info("x", f, ["b", "s", 64])],
                              [helper.make_tensor_value_info("y", f, None)],
                              [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": (3 * rng.standard_normal((1, rows, 64))).astype(np.float32)}
    got, session = run_numba(model, feeds, threads=2, level=None)
    assert_close(got, run_onnxruntime(model, feeds))
    assert [(a.op_type, a.provider) for a in session.get_node_assignments()] == [("RMSNormalization", "numba")]
