"""Loops compiled whole (ops/op_loop.py, fusion/loop_codegen.py) against onnxruntime.

Every model here is run with the numba provider alone; a spy on the generic path tells whether the
compiled loop ran or the loop fell back.
"""

from __future__ import annotations

import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from numba_test_helpers import assert_close, run_numba, run_onnxruntime
import onnxplug as ort
from onnxplug.testing.model_suite import build, sample_inputs

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def loop_model(nodes, carried, scans, inputs, *, trips="n", cond="c", initializers=(), opset=17,
               carried_shapes=None):
    """One Loop: ``carried`` (outer name, body in, body out), ``scans`` body outputs, ``nodes`` the
    body (whose inputs are i, cond_in and the carried ``body in`` names)."""
    shapes = carried_shapes or [None] * len(carried)
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, [])]
        + [helper.make_tensor_value_info(b_in, F, s) for (_, b_in, _), s in zip(carried, shapes)],
        [helper.make_tensor_value_info("cond_out", B, [])]
        + [helper.make_tensor_value_info(b_out, F, None) for _, _, b_out in carried]
        + [helper.make_tensor_value_info(s, TensorProto.UNDEFINED, None) for s in scans])
    outs = [f"final_{k}" for k in range(len(carried))] + [f"scan_{k}" for k in range(len(scans))]
    graph = helper.make_graph(
        [helper.make_node("Loop", [trips, cond] + [c[0] for c in carried], outs, body=body, name="the_loop")],
        "g", inputs, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
        list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def scalar(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def float_in(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def check(model, feeds, generic_calls, *, compiled=True, **tol):
    got, session = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds), **tol)
    loop = [a for a in session.get_node_assignments() if a.op_type == "Loop"]
    assert [a.provider for a in loop] == ["numba"]
    assert len(generic_calls) == (0 if compiled else 1)
    return got


KEEP_GOING = [scalar("n", 3, np.int64), scalar("c", True, np.bool_), scalar("k", 0.9)]


UNARY = ["Identity", "Abs", "Neg", "Tanh", "Exp", "Log", "Sqrt", "Sin", "Cos", "Floor", "Ceil", "Relu",
         "Sigmoid", "Reciprocal"]
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal"]


def test_unary_ops(rng, generic_calls):
    """Every unary op on a carried value, one scan output each (one model: one compilation)."""
    body = [helper.make_node("Mul", ["x_in", "k"], ["t"]), helper.make_node("Abs", ["t"], ["positive"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body += [helper.make_node(op, ["positive" if op in ("Log", "Sqrt") else "t"], [f"y_{op}"]) for op in UNARY]
    model = loop_model(body, [("x", "x_in", "t")], [f"y_{op}" for op in UNARY], [float_in("x", [3, 4])],
                       initializers=KEEP_GOING)
    x = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32) * np.sign(rng.standard_normal((3, 4))).astype(np.float32)
    x[0, :2] = [0.3, -0.2]  # tanh's and sigmoid's small-argument branches
    check(model, {"x": x}, generic_calls)


@pytest.mark.parametrize("w_shape", [[4]])
def test_binary_ops_broadcast(w_shape, rng, generic_calls):
    """Every binary op and comparison against an outer value broadcast against the carried one.
    (One shape: numba takes 20-120 s to compile such a body cold; other shapes broadcast in
    test_logical_ops and test_gemm_attributes.)"""
    body = [helper.make_node("Mul", ["x_in", "k"], ["t"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body += [helper.make_node(op, ["t", "w"], [f"y_{op}"]) for op in BINARY]
    model = loop_model(body, [("x", "x_in", "t")], [f"y_{op}" for op in BINARY],
                       [float_in("x", [3, 4]), float_in("w", w_shape)], initializers=KEEP_GOING)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, w_shape).astype(np.float32)
    x.flat[::3] = np.asarray(w).flat[0]  # some equal elements in the first iteration
    check(model, {"x": x, "w": w}, generic_calls)


def test_logical_ops(rng, generic_calls):
    body = [helper.make_node("Mul", ["x_in", "k"], ["t"]), helper.make_node("Less", ["t", "w"], ["a"]),
            helper.make_node("Greater", ["t", "v"], ["b"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body += [helper.make_node(op, ["a", "b"], [f"y_{op}"]) for op in ("And", "Or", "Xor")]
    body += [helper.make_node("Not", ["y_And"], ["z"])]
    model = loop_model(body, [("x", "x_in", "t")], ["y_And", "y_Or", "y_Xor", "z"],
                       [float_in("x", [3, 4]), float_in("w", [4]), float_in("v", [3, 1])], initializers=KEEP_GOING)
    feeds = {"x": rng.uniform(-2, 2, (3, 4)).astype(np.float32), "w": rng.uniform(-1, 1, 4).astype(np.float32),
             "v": rng.uniform(-1, 1, (3, 1)).astype(np.float32)}
    check(model, feeds, generic_calls)


def test_reductions_to_scalar_scans(rng, generic_calls):
    ops = ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"]
    body = [helper.make_node("Mul", ["x_in", "k"], ["t"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body += [helper.make_node(op, ["t"], [f"y_{op}"], keepdims=0) for op in ops]
    model = loop_model(body, [("x", "x_in", "t")], [f"y_{op}" for op in ops], [float_in("x", [3, 5])],
                       initializers=KEEP_GOING)
    got = check(model, {"x": rng.standard_normal((3, 5)).astype(np.float32)}, generic_calls)
    assert [g.shape for g in got[1:]] == [(3,)] * 4


def test_matmul_of_every_rank_pair(rng, generic_calls):
    """matrix @ matrix, vector @ matrix, matrix @ vector and vector @ vector (a 0-d value)."""
    body = [helper.make_node("MatMul", ["m_in", "w"], ["p1"]), helper.make_node("MatMul", ["v_in", "w"], ["p2"]),
            helper.make_node("MatMul", ["w", "v_in"], ["p3"]), helper.make_node("MatMul", ["v_in", "u"], ["d"]),
            helper.make_node("Tanh", ["p1"], ["m_out"]), helper.make_node("Tanh", ["p2"], ["v_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    model = loop_model(body, [("m", "m_in", "m_out"), ("v", "v_in", "v_out")], ["p3", "d"],
                       [float_in("m", [2, 4]), float_in("v", [4]), float_in("w", [4, 4]), float_in("u", [4])],
                       initializers=KEEP_GOING)
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in
             [("m", (2, 4)), ("v", (4,)), ("w", (4, 4)), ("u", (4,))]}
    got = check(model, feeds, generic_calls)
    assert got[3].shape == (3,)


GEMMS = [(0, 0, 1.0, 1.0, "c4"), (1, 0, 0.5, 1.0, "c14"), (0, 1, 1.0, 2.0, "c44"), (1, 1, 1.5, 0.25, "c41"),
         (0, 0, 1.0, 1.0, None)]


def test_gemm_attributes(rng, generic_calls):
    """transA, transB, alpha, beta, C of every broadcast shape or none; carried value first or second."""
    body = [helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    scans = []
    for k, (trans_a, trans_b, alpha, beta, c) in enumerate(GEMMS):
        for order, pair in enumerate((["h_in", "a"], ["a", "h_in"])):
            scans.append(f"g{k}_{order}")
            body.append(helper.make_node("Gemm", pair + ([c] if c else []), [scans[-1]], transA=trans_a,
                                         transB=trans_b, alpha=alpha, beta=beta))
    body.append(helper.make_node("Tanh", [scans[0]], ["h_out"]))
    shapes = {"h": [4, 4], "a": [4, 4], "c4": [4], "c14": [1, 4], "c44": [4, 4], "c41": [4, 1]}
    model = loop_model(body, [("h", "h_in", "h_out")], scans, [float_in(k, v) for k, v in shapes.items()],
                       initializers=KEEP_GOING)
    check(model, {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}, generic_calls)


def test_gather_by_iteration_and_negative_index(rng, generic_calls):
    body = [helper.make_node("Gather", ["xs", "i"], ["row"], axis=0),
            helper.make_node("Gather", ["xs", "back"], ["last"], axis=0),
            helper.make_node("Add", ["h_in", "row"], ["s"]), helper.make_node("Mul", ["s", "last"], ["h_out"]),
            helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.float32(2.0))),
            helper.make_node("Mul", ["row", "two"], ["twice"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    inits = [scalar("n", 5, np.int64), scalar("c", True, np.bool_), scalar("back", -1, np.int64)]
    model = loop_model(body, [("h", "h_in", "h_out")], ["twice"], [float_in("xs", [5, 2, 3]), float_in("h", [2, 3])],
                       initializers=inits)
    check(model, {"xs": rng.standard_normal((5, 2, 3)).astype(np.float32),
                  "h": rng.standard_normal((2, 3)).astype(np.float32)}, generic_calls)


def _growing_body():
    """h <- 1.1 h; cond = max(h) < limit; scans h and max(h)."""
    return [helper.make_node("Mul", ["h_in", "rate"], ["h_out"]),
            helper.make_node("ReduceMax", ["h_out"], ["peak"], keepdims=0),
            helper.make_node("Less", ["peak", "limit"], ["cond_out"])]


@pytest.mark.parametrize("trips, use_cond", [("", True), ("n", True), ("n", False)])
def test_condition_and_trip_count(trips, use_cond, rng, generic_calls):
    """Stopping on the condition after 40 iterations (scan buffers grow past their first 16 rows),
    on the trip count first (10), or on the trip count with the condition input omitted (60)."""
    n = 10 if use_cond else 60
    # Without a condition input, the spec ignores the body's condition, onnxruntime stops on it
    # (and onnx.reference runs no iteration): the body's stays true there.
    limit = 1.1 ** 40 - 1e-3 if use_cond else 1e30
    inits = [scalar("n", n, np.int64), scalar("c", True, np.bool_), scalar("rate", 1.1), scalar("limit", limit)]
    model = loop_model(_growing_body(), [("h", "h_in", "h_out")], ["h_out", "peak"], [float_in("h", [2, 3])],
                       trips=trips, cond="c" if use_cond else "", initializers=inits)
    h = np.full((2, 3), 1.0, np.float32)
    h[0, 0] = 1.0 + 1e-6
    got = check(model, {"h": h}, generic_calls, rtol=1e-5)
    expected = 40 if trips == "" else n
    assert got[1].shape == (expected, 2, 3) and got[2].shape == (expected,)


@pytest.mark.parametrize("trips, cond", [(0, True), (5, False)])
def test_no_iteration_runs_generic_path(trips, cond, generic_calls):
    inits = [scalar("n", trips, np.int64), scalar("c", cond, np.bool_), scalar("rate", 1.1), scalar("limit", 9.0)]
    model = loop_model(_growing_body(), [("h", "h_in", "h_out")], ["h_out", "peak"], [float_in("h", [2, 3])],
                       initializers=inits, carried_shapes=[[2, 3]])
    got = check(model, {"h": np.ones((2, 3), np.float32)}, generic_calls, compiled=False)
    assert got[1].shape[0] == 0


def test_scalar_carried_value(generic_calls):
    """A 0-d carried value is a numba scalar inside and a 0-d array again outside."""
    body = [helper.make_node("Mul", ["s_in", "rate"], ["s_out"]), helper.make_node("Less", ["s_out", "limit"],
                                                                                  ["cond_out"])]
    inits = [scalar("n", 100, np.int64), scalar("c", True, np.bool_), scalar("rate", 1.5), scalar("limit", 50.0)]
    model = loop_model(body, [("s", "s_in", "s_out")], ["s_out"], [float_in("s", [])], initializers=inits,
                       carried_shapes=[[]])
    got = check(model, {"s": np.asarray(1.0, np.float32)}, generic_calls)
    assert got[0].shape == () and got[0].dtype == np.float32 and got[1].shape == (10,)


def test_unsupported_rank_falls_back(rng, generic_calls):
    """A batched MatMul is not compiled: the Loop stays on numba and runs the generic path."""
    body = [helper.make_node("MatMul", ["h_in", "w"], ["p"]), helper.make_node("Tanh", ["p"], ["h_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    model = loop_model(body, [("h", "h_in", "h_out")], [], [float_in("h", [2, 3, 4]), float_in("w", [4, 4])],
                       initializers=KEEP_GOING)
    check(model, {"h": rng.standard_normal((2, 3, 4)).astype(np.float32),
                  "w": rng.standard_normal((4, 4)).astype(np.float32)}, generic_calls, compiled=False)


def test_error_names_the_body_node(rng, generic_calls):
    """An index out of range inside the compiled loop: the rerun on the generic path names the node."""
    body = [helper.make_node("Gather", ["xs", "where"], ["row"], axis=0, name="pick_row"),
            helper.make_node("Add", ["h_in", "row"], ["h_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    inits = [scalar("n", 3, np.int64), scalar("c", True, np.bool_)]
    model = loop_model(body, [("h", "h_in", "h_out")], [], [float_in("xs", [4, 3]), float_in("h", [3]),
                                                            helper.make_tensor_value_info("where", I64, [])],
                       initializers=inits)
    feeds = {"xs": rng.standard_normal((4, 3)).astype(np.float32), "h": np.zeros(3, np.float32)}
    got, _ = run_numba(model, {**feeds, "where": np.asarray(-4, np.int64)})
    np.testing.assert_allclose(got[0], 3 * feeds["xs"][0], rtol=1e-6)
    with pytest.raises(ort.OnnxplugError, match="pick_row"):
        run_numba(model, {**feeds, "where": np.asarray(4, np.int64)})
    assert len(generic_calls) == 1


def test_float64_body_is_left_to_the_default_provider(rng):
    body = [helper.make_node("Mul", ["h_in", "h_in"], ["h_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body_graph = helper.make_graph(
        body, "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
                       helper.make_tensor_value_info("h_in", TensorProto.DOUBLE, [3])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("h_out", TensorProto.DOUBLE, [3])])
    graph = helper.make_graph([helper.make_node("Loop", ["n", "c", "h"], ["y"], body=body_graph)], "g",
                              [helper.make_tensor_value_info("h", TensorProto.DOUBLE, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3])],
                              [scalar("n", 3, np.int64), scalar("c", True, np.bool_)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    h = rng.uniform(0.5, 1.5, 3)
    got, session = run_numba(model, {"h": h}, fallback=True)
    assert_close(got, run_onnxruntime(model, {"h": h}))
    assert [a.provider for a in session.get_node_assignments()] == ["numpy"]


@pytest.mark.parametrize("batch", [1, 3])
def test_suite_loop_model_compiles(batch, generic_calls):
    """The suite's RNN-cell Loop (after the optimizer's hoisting) runs compiled and matches."""
    model = build("loop_model")
    feeds = sample_inputs("loop_model", batch)
    got, session = run_numba(model, feeds, level=None)
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-4, atol=1e-5)
    assert [a.provider for a in session.get_node_assignments() if a.op_type == "Loop"] == ["numba"]
    assert not generic_calls


def test_threads_compile_and_run_one_session(generic_calls):
    """Four threads making one session's first calls at once get the serial results."""
    model = build("loop_model")
    feeds = [sample_inputs("loop_model", b, seed=b) for b in (1, 2, 3, 4)]
    _, session = run_numba(model, feeds[0], level=None)
    serial = [session.run(None, f) for f in feeds]
    fresh, _ = run_numba(model, feeds[0], level=None)
    _, session = run_numba(model, feeds[0], level=None)
    results: dict[int, list] = {}

    def work(k):
        results[k] = [session.run(None, feeds[k]) for _ in range(20)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        for got in results[k]:
            for g, s in zip(got, serial[k]):
                np.testing.assert_array_equal(g, s)
    assert not generic_calls


@pytest.mark.parametrize("opset", [11, 17])
def test_data_movement(opset, rng, generic_calls):
    """Unsqueeze and Squeeze (axes as attribute before opset 13, as a Constant input after), Concat
    and Transpose: an RNN step that stacks its state with the input row, as exported loops do."""
    def axes_node(op, data, out, axes):
        if opset < 13:
            return [helper.make_node(op, [data], [out], axes=axes)]
        name = f"{out}_axes"
        return [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(axes, np.int64))),
                helper.make_node(op, [data, name], [out])]

    body = [helper.make_node("Gather", ["xs", "i"], ["row"], axis=0),  # (3,)
            *axes_node("Unsqueeze", "row", "row2", [0]),  # (1, 3)
            helper.make_node("Concat", ["row2", "h_in"], ["both"], axis=-1),  # (1, 7)
            helper.make_node("MatMul", ["both", "w"], ["p"]),  # (1, 4)
            helper.make_node("Tanh", ["p"], ["h_out"]),
            *axes_node("Squeeze", "h_out", "flat", [0]),  # (4,)
            *axes_node("Unsqueeze", "flat", "col", [-1]),  # (4, 1)
            helper.make_node("Transpose", ["col"], ["back"], perm=[1, 0]),  # (1, 4)
            helper.make_node("ReduceSum", ["back"], ["total"], keepdims=0),
            *axes_node("Unsqueeze", "total", "total1", [0]),  # (1,): a 0-d value unsqueezed
            *axes_node("Squeeze", "total1", "total0", [0]),  # () again
            helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    inits = [scalar("n", 4, np.int64), scalar("c", True, np.bool_)]
    model = loop_model(body, [("h", "h_in", "h_out")], ["flat", "back", "total0"],
                       [float_in("xs", [4, 3]), float_in("h", [1, 4]), float_in("w", [7, 4])],
                       initializers=inits, opset=opset)
    feeds = {"xs": rng.standard_normal((4, 3)).astype(np.float32), "h": rng.standard_normal((1, 4)).astype(np.float32),
             "w": rng.standard_normal((7, 4)).astype(np.float32)}
    got = check(model, feeds, generic_calls)
    assert [g.shape for g in got[1:]] == [(4, 4), (4, 1, 4), (4,)]


def test_outputs_do_not_share_memory_with_weights(rng, generic_calls):
    """A carried value that is a weight passed through: changing the output in place must not change
    the weight the next run reads."""
    body = [helper.make_node("Identity", ["w"], ["h_out"]), helper.make_node("Add", ["h_in", "w"], ["s"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    inits = [scalar("n", 2, np.int64), scalar("c", True, np.bool_),
             numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")]
    model = loop_model(body, [("h", "h_in", "h_out")], ["s"], [float_in("h", [4])], initializers=inits)
    _, session = run_numba(model, {"h": np.zeros(4, np.float32)})
    first = session.run(None, {"h": np.zeros(4, np.float32)})
    first[0][...] = -100.0
    second = session.run(None, {"h": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(second[0], np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(second[1], [np.arange(4), 2 * np.arange(4)])
    assert not generic_calls


@pytest.mark.parametrize("activation", ["Relu", "Tanh", "Sigmoid"])
def test_cell_gemm_fused_with_its_activation_compiles(activation, rng, generic_calls, tmp_path):
    """At the default optimization level a cell's Gemm + activation becomes the optimizer's
    com.onnxplug FusedGemm inside the body; the body still compiles, with onnxruntime's values."""
    body = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Gemm", ["h_in", "w", "bias"], ["pre"]), helper.make_node(activation, ["pre"], ["h_out"])]
    model = loop_model(body, [("h", "h_in", "h_out")], [], [float_in("h", [2, 4])],
                       initializers=[scalar("n", 3, np.int64), scalar("c", True, np.bool_)])
    model.graph.initializer.extend([numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w"),
                                    numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "bias")])
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["numba"])
    feeds = {"h": rng.standard_normal((2, 4)).astype(np.float32)}
    assert_close(session.run(None, feeds), run_onnxruntime(model, feeds))
    saved = onnx.load(options.optimized_model_filepath)
    loop_body = next(n for n in saved.graph.node if n.op_type == "Loop").attribute[0].g
    assert [(n.domain, n.op_type) for n in loop_body.node if n.op_type != "Identity"] == [("com.onnxplug", "FusedGemm")]
    assert [a.provider for a in session.get_node_assignments() if a.op_type == "Loop"] == ["numba"]
    assert not generic_calls
