"""session.onnxplug.max_allocation_bytes: a node that would allocate more fails with
AllocationLimitError naming the node, shape and bytes, before allocating, on every provider; a
request just under the limit runs and matches onnxruntime."""

from __future__ import annotations

import os
import time

import numpy as np
import onnx
import onnxplug as ort
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnxplug.errors import AllocationLimitError, OptionValueError

LIMIT = 2**20  # 1 MiB: the refused requests cost nothing, the accepted ones little
KEY = "session.onnxplug.max_allocation_bytes"
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _provider(name: str) -> str:
    if name == "numba":
        pytest.importorskip("onnxplug_numba")
    elif name == "opencl":
        pytest.importorskip("onnxplug_opencl")
    return name


PROVIDERS = ["numpy", "numba", "opencl"]


def _options(limit: int = LIMIT) -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.add_session_config_entry(KEY, str(limit))
    return so


def _model(nodes, inputs, opset: int = 17, inits=()) -> bytes:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", F, None)],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def _a(*values, dtype=np.int64):
    return np.array(values, dtype)


# op: (model, feeds just under the limit, feeds far over it, the shape the refusal names)
CASES = {
    "Expand": (_model([helper.make_node("Expand", ["x", "s"], ["y"], name="the_node")],
                      [("x", F, [1, 1]), ("s", I64, [2])]),
               {"x": np.full((1, 1), 2, np.float32), "s": _a(512, 511)},
               {"x": np.full((1, 1), 2, np.float32), "s": _a(2**20, 2**20)}, "float32[1048576, 1048576]"),
    "ConstantOfShape": (_model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="the_node",
                                                 value=helper.make_tensor("v", F, [1], [3.0]))],
                               [("s", I64, [2])]),
                        {"s": _a(512, 511)}, {"s": _a(10**6, 10**6)}, "float32[1000000, 1000000]"),
    "Tile": (_model([helper.make_node("Tile", ["x", "r"], ["y"], name="the_node")], [("x", F, [2, 3]), ("r", I64, [2])]),
             {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "r": _a(200, 100)},
             {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "r": _a(10**6, 10**6)}, "float32[2000000, 3000000]"),
    "Resize": (_model([helper.make_node("Resize", ["x", "", "sc"], ["y"], name="the_node")],
                      [("x", F, [1, 1, 4, 4]), ("sc", F, [4])], opset=13),
               {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), "sc": _a(1, 1, 64, 64, dtype=np.float32)},
               {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), "sc": _a(1, 1, 1e6, 1e6, dtype=np.float32)},
               "float32[1, 1, 4000000, 4000000]"),
    "Resize-sizes": (_model([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="the_node")],
                            [("x", F, [1, 1, 4, 4]), ("sz", I64, [4])], opset=13),
                     {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), "sz": _a(1, 1, 300, 200)},
                     {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), "sz": _a(1, 1, 10**6, 10**6)},
                     "float32[1, 1, 1000000, 1000000]"),
    "Upsample": (_model([helper.make_node("Upsample", ["x", "sc"], ["y"], name="the_node")],
                        [("x", F, [1, 1, 4, 4]), ("sc", F, [4])], opset=9),
                 {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), "sc": _a(1, 1, 64, 64, dtype=np.float32)},
                 {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), "sc": _a(1, 1, 1e6, 1e6, dtype=np.float32)},
                 "float32[1, 1, 4000000, 4000000]"),
    "Range": (_model([helper.make_node("Range", ["a", "b", "d"], ["y"], name="the_node")],
                     [("a", F, []), ("b", F, []), ("d", F, [])]),
              {"a": np.array(0, np.float32), "b": np.array(200000, np.float32), "d": np.array(1, np.float32)},
              {"a": np.array(0, np.float32), "b": np.array(1e12, np.float32), "d": np.array(1, np.float32)},
              "float32[999999995904]"),
    "Pad": (_model([helper.make_node("Pad", ["x", "p"], ["y"], name="the_node")], [("x", F, [2, 2]), ("p", I64, [4])]),
            {"x": np.arange(4, dtype=np.float32).reshape(2, 2), "p": _a(0, 0, 500, 200)},
            {"x": np.arange(4, dtype=np.float32).reshape(2, 2), "p": _a(0, 0, 10**6, 10**6)}, "float32[1000002, 1000002]"),
}


def _oracle(model: bytes, feeds):
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_over_the_limit_is_refused_before_allocating_and_under_it_matches_onnxruntime(case, provider):
    model, under, over, shape = CASES[case]
    sess = ort.InferenceSession(model, _options(), providers=[_provider(provider)])
    t0 = time.process_time()
    with pytest.raises(AllocationLimitError) as info:
        sess.run(None, over)
    assert time.process_time() - t0 < 5  # refused, not computed
    message = str(info.value)
    op = case.split("-")[0]
    assert f"node 'the_node' (ai.onnx::{op}" in message
    assert shape in message and f"limit of {LIMIT} bytes" in message and KEY in message
    assert isinstance(info.value, MemoryError)
    # the same session then runs a request just under the limit, as onnxruntime computes it
    expected = _oracle(model, under)[0]
    assert expected.nbytes <= LIMIT
    got = sess.run(None, under)[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_the_limit_counts_bytes_of_the_element_type():
    """float32[512, 512] is exactly 1 MiB: at the limit it runs; one more row is refused."""
    model = CASES["ConstantOfShape"][0]
    sess = ort.InferenceSession(model, _options())
    assert sess.run(None, {"s": _a(512, 512)})[0].shape == (512, 512)
    with pytest.raises(AllocationLimitError, match=r"float32\[513, 512\]: 1050624 bytes"):
        sess.run(None, {"s": _a(513, 512)})


def test_nodes_that_cannot_blow_up_get_no_check():
    model = _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Expand", ["r", "s"], ["y"])],
                   [("x", F, [1, 1]), ("s", I64, [2])])
    steps = ort.InferenceSession(model, _options()).engine.plan.steps
    assert [s.guard is not None for s in steps] == [False, True]
    # with no limit ('0'), no step has one
    steps = ort.InferenceSession(model, _options(0)).engine.plan.steps
    assert all(s.guard is None for s in steps)


def test_no_limit_runs_what_a_small_limit_refuses():
    model, under, _, _ = CASES["Expand"]
    with pytest.raises(AllocationLimitError):
        ort.InferenceSession(model, _options(1000)).run(None, under)
    np.testing.assert_array_equal(ort.InferenceSession(model, _options(0)).run(None, under)[0], _oracle(model, under)[0])


def test_a_statically_known_oversized_output_is_refused_when_the_node_runs():
    """The shape is an initializer: shape inference knows the output; the node still fails only
    when it runs, with the same error."""
    shape = onnx.numpy_helper.from_array(_a(1024, 1024), "s")
    model = _model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="big"),
                    helper.make_node("Add", ["c", "x"], ["y"])], [("x", F, [1])], inits=[shape])
    sess = ort.InferenceSession(model, _options())
    with pytest.raises(AllocationLimitError, match=r"node 'big' .*float32\[1024, 1024\]: 4194304 bytes"):
        sess.run(None, {"x": np.ones(1, np.float32)})


def test_an_expand_inside_an_if_branch_is_checked_too():
    then = helper.make_graph([helper.make_node("Expand", ["x", "s"], ["t"], name="inner")], "then", [],
                             [helper.make_tensor_value_info("t", F, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", F, None)])
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                   [("c", TensorProto.BOOL, []), ("x", F, [1, 1]), ("s", I64, [2])])
    sess = ort.InferenceSession(model, _options())
    feeds = {"c": np.array(True), "x": np.ones((1, 1), np.float32), "s": _a(10**6, 10**6)}
    with pytest.raises(AllocationLimitError, match="node 'inner'"):
        sess.run(None, feeds)
    feeds["c"] = np.array(False)
    np.testing.assert_array_equal(sess.run(None, feeds)[0], _oracle(model, feeds)[0])


# --- Loop scan outputs --------------------------------------------------------------------------

def _scan_loop(scan_shape, cond_from_body: bool = False) -> bytes:
    """y = x + trips, s = the running values (one float[4] scan value per iteration); with
    ``cond_from_body`` the body stops once the value reaches 5. With ``scan_shape`` None the scan
    value is reshaped to the outer input ``shp``, which no shape inference knows."""
    scan = (helper.make_node("Reshape", ["acc_out", "shp"], ["s"]) if scan_shape is None
            else helper.make_node("Identity", ["acc_out"], ["s"]))
    nodes = [helper.make_node("Add", ["acc", "one"], ["acc_out"]), scan]
    if cond_from_body:
        nodes += [helper.make_node("ReduceMax", ["acc_out"], ["m"], keepdims=0),
                  helper.make_node("Less", ["m", "five"], ["c_out"])]
    else:
        nodes.append(helper.make_node("Identity", ["c"], ["c_out"]))
    body = helper.make_graph(
        nodes, "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                        helper.make_tensor_value_info("acc", F, [4])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("acc_out", F, [4]),
         helper.make_tensor_value_info("s", F, scan_shape)],
        initializer=[onnx.numpy_helper.from_array(np.ones(4, np.float32), "one"),
                     onnx.numpy_helper.from_array(np.array(5, np.float32), "five")])
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], ["y", "scans"], body=body, name="the_loop")],
                          "g", [helper.make_tensor_value_info("trip", I64, []), helper.make_tensor_value_info("x", F, [4]),
                                helper.make_tensor_value_info("shp", I64, [1])],
                          [helper.make_tensor_value_info("y", F, [4]), helper.make_tensor_value_info("scans", F, None)],
                          initializer=[onnx.numpy_helper.from_array(np.array(True), "cond")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_loop_of_10_to_the_12_iterations_with_scan_outputs_is_refused_before_it_runs(provider):
    model = _scan_loop([4])
    sess = ort.InferenceSession(model, _options(), providers=[_provider(provider)])
    t0 = time.process_time()
    with pytest.raises(AllocationLimitError, match=r"node 'the_loop' .*16 bytes per iteration for 1000000000000 "
                                                   r"iterations: 16000000000000 bytes"):
        sess.run(None, {"trip": np.array(10**12), "x": np.zeros(4, np.float32), "shp": _a(4)})
    assert time.process_time() - t0 < 5
    feeds = {"trip": np.array(1000), "x": np.zeros(4, np.float32), "shp": _a(4)}  # 16000 bytes of scan outputs
    for got, expected in zip(sess.run(None, feeds), _oracle(model, feeds)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("provider,profiled", [("numpy", False), ("numpy", True)])
def test_scan_outputs_of_unknown_shape_are_counted_as_they_grow(provider, profiled, tmp_path):
    model = _scan_loop(None)
    so = _options(2**16)
    if profiled:
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / "p")
    sess = ort.InferenceSession(model, so, providers=[_provider(provider)])
    t0 = time.process_time()
    with pytest.raises(AllocationLimitError, match=r"node 'the_loop' .*scan outputs of \d+ bytes after (\d+) "
                                                   r"iterations") as info:
        sess.run(None, {"trip": np.array(10**12), "x": np.zeros(4, np.float32), "shp": _a(4)})
    assert time.process_time() - t0 < 30
    counted = int(str(info.value).split("scan outputs of ")[1].split(" ")[0])
    assert 2**16 < counted <= 2**16 + 2**16 // 8 + 16  # refused soon after the limit is passed
    feeds = {"trip": np.array(100), "x": np.zeros(4, np.float32), "shp": _a(4)}
    for got, expected in zip(sess.run(None, feeds), _oracle(model, feeds)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_loop_stopped_by_its_condition_is_not_refused_for_its_trip_count(provider):
    """Trip count 10^12, but the body's condition stops it after 5 iterations: no refusal."""
    model = _scan_loop([4], cond_from_body=True)
    feeds = {"trip": np.array(10**12), "x": np.zeros(4, np.float32), "shp": _a(4)}
    got = ort.InferenceSession(model, _options(), providers=[_provider(provider)]).run(None, feeds)
    for g, e in zip(got, _oracle(model, feeds)):
        np.testing.assert_array_equal(g, e)


# --- the config entry ----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["lots", "-1", "1.5", ""])
def test_a_bad_limit_is_refused_when_set(value):
    with pytest.raises(OptionValueError, match=KEY):
        ort.SessionOptions().add_session_config_entry(KEY, value)


def test_the_default_limit_is_half_of_physical_memory():
    half = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    model = CASES["Expand"][0]
    assert ort.InferenceSession(model).engine.allocation_limit == half
    assert ort.InferenceSession(model, _options(12345)).engine.allocation_limit == 12345


@pytest.mark.parametrize("op", ["Range", "Expand", "Tile", "ConstantOfShape", "Pad"])
def test_fast_byte_counts_are_never_below_the_exact_ones(op):
    """A guard's fast path (Python numbers from host inputs) may over-count, which only sends the
    step to the full computation, but never under-count, which would let an allocation through."""
    from onnxplug import allocation_limit
    from onnxplug.ir.loader import load_model

    rng = np.random.default_rng(3)
    if op == "Range":
        node = helper.make_node("Range", ["s", "l", "d"], ["y"])
        inputs = [(n, F, []) for n in "sld"]
        cases = [tuple(np.array(v, np.float32) for v in (rng.integers(-50, 50), rng.integers(-500, 500),
                                                           rng.choice([-3.5, -1, 0.25, 2, 7])))
                 for _ in range(200)]
    elif op in ("Expand", "Tile"):
        node = helper.make_node(op, ["x", "r"], ["y"])
        inputs = [("x", F, None), ("r", I64, None)]
        cases = []
        for _ in range(200):
            shape = tuple(int(d) for d in rng.integers(0, 4, rng.integers(1, 4)))
            rank = len(shape) if op == "Tile" else int(rng.integers(1, 5))
            cases.append((np.zeros(shape, np.float32), rng.integers(0, 6, rank).astype(np.int64)))
    elif op == "Pad":
        node = helper.make_node(op, ["x", "r"], ["y"])
        inputs = [("x", F, None), ("r", I64, None)]
        cases = []
        for _ in range(200):
            shape = tuple(int(d) for d in rng.integers(0, 5, rng.integers(1, 4)))
            cases.append((np.zeros(shape, np.float32), rng.integers(-3, 6, 2 * len(shape)).astype(np.int64)))
    else:
        node = helper.make_node(op, ["r"], ["y"], value=helper.make_tensor("v", TensorProto.DOUBLE, [1], [1.0]))
        inputs = [("r", I64, None)]
        cases = [(rng.integers(0, 9, rng.integers(0, 4)).astype(np.int64),) for _ in range(200)]
    graph = load_model(_model([node], inputs)).graph
    guard = allocation_limit.guard_for("m", graph, graph.nodes, LIMIT, None)
    assert guard.fast is not None
    checked = 0
    for args in cases:
        fast = guard.fast(guard, args)
        try:
            exact = guard.shape_of(graph.nodes[0], allocation_limit._Inputs(args, {}, None))
        except ValueError:
            exact = None
        if exact is None or fast is None:
            continue
        shape, dtype = exact
        assert fast >= int(np.prod(shape)) * np.dtype(dtype).itemsize, (args, fast, exact)
        checked += 1
    assert checked > 50
