"""RunOptions.terminate set from another thread stops a run promptly, inside Loop and Scan bodies
too, and IOBinding runs; the session then runs again and matches onnxruntime."""

from __future__ import annotations

import threading
import time

import numpy as np
import onnx
import onnxplug as ort
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnxplug.errors import RunTerminatedError

from tests.hardening.fuzz import add_one_loop_body


def _long_loop(trip: int) -> bytes:
    """y = x + trip (a Loop adding one per iteration): 10^12 iterations never end on their own."""
    f = TensorProto.FLOAT
    body = add_one_loop_body()
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)], "g",
                          [helper.make_tensor_value_info("x", f, [4])], [helper.make_tensor_value_info("y", f, [4])],
                          initializer=[onnx.numpy_helper.from_array(np.array(trip, np.int64), "trip"),
                                       onnx.numpy_helper.from_array(np.array(True), "cond")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _cancel_after(options: ort.RunOptions, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, setattr, (options, "terminate", True))
    timer.start()
    return timer


@pytest.mark.parametrize("profiled", [False, True])
def test_terminate_from_another_thread_stops_a_loop_of_10_to_the_12(profiled, tmp_path):
    so = ort.SessionOptions()
    if profiled:
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / "p")
    sess = ort.InferenceSession(_long_loop(10**12), so, providers=["numpy"])
    ro = ort.RunOptions()
    timer = _cancel_after(ro, 0.3)
    start = time.perf_counter()
    with pytest.raises(RunTerminatedError, match="Loop body"):
        sess.run(None, {"x": np.zeros(4, np.float32)}, ro)
    timer.join()
    assert time.perf_counter() - start < 10  # promptly: the Loop checks at every iteration
    # the session stays usable: a short loop gives the right answer
    short = ort.InferenceSession(_long_loop(5), providers=["numpy"])
    np.testing.assert_array_equal(short.run(None, {"x": np.zeros(4, np.float32)})[0], [5, 5, 5, 5])
    ro.terminate = False
    np.testing.assert_array_equal(
        ort.InferenceSession(_long_loop(3), providers=["numpy"]).run(None, {"x": np.ones(4, np.float32)}, ro)[0],
        [4, 4, 4, 4])


def test_terminate_on_one_run_leaves_a_concurrent_run_alone():
    sess = ort.InferenceSession(_long_loop(10**12), providers=["numpy"])
    ro_stop, ro_other = ort.RunOptions(), ort.RunOptions()
    results: dict[str, object] = {}

    def run(name, ro):
        try:
            sess.run(None, {"x": np.zeros(4, np.float32)}, ro)
            results[name] = "finished"
        except RunTerminatedError:
            results[name] = "terminated"

    threads = [threading.Thread(target=run, args=("stop", ro_stop)),
               threading.Thread(target=run, args=("other", ro_other))]
    for t in threads:
        t.start()
    time.sleep(0.3)
    ro_stop.terminate = True
    threads[0].join(10)
    assert results.get("stop") == "terminated"
    assert threads[1].is_alive()  # still looping: its own options were not set
    ro_other.terminate = True
    threads[1].join(10)
    assert results.get("other") == "terminated"


def _provider(name: str) -> str:
    if name == "numba":
        pytest.importorskip("onnxplug_numba")
    elif name == "opencl":
        pytest.importorskip("onnxplug_opencl")
    return name


def _loop_with_trip_input() -> bytes:
    """y = x + trip, the trip count fed: one session runs an endless loop and then a short one."""
    f = TensorProto.FLOAT
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=add_one_loop_body())], "g",
                          [helper.make_tensor_value_info("trip", TensorProto.INT64, []),
                           helper.make_tensor_value_info("x", f, [4])],
                          [helper.make_tensor_value_info("y", f, [4])],
                          initializer=[onnx.numpy_helper.from_array(np.array(True), "cond")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _scan_model() -> bytes:
    """A running sum over the sequence axis (Scan, one state, one scan output)."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
        [helper.make_tensor_value_info("s", f, [2]), helper.make_tensor_value_info("x_t", f, [2])],
        [helper.make_tensor_value_info("s_out", f, [2]), helper.make_tensor_value_info("y_t", f, [2])])
    g = helper.make_graph([helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)], "g",
                          [helper.make_tensor_value_info("s0", f, [2]), helper.make_tensor_value_info("xs", f, ["T", 2])],
                          [helper.make_tensor_value_info("s", f, [2]), helper.make_tensor_value_info("ys", f, ["T", 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _oracle(model: bytes, feeds):
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("provider", ["numpy", "numba", "opencl"])
def test_terminate_stops_a_loop_of_10_to_the_12_on_each_provider(provider):
    model = _loop_with_trip_input()
    sess = ort.InferenceSession(model, providers=[_provider(provider)])
    feeds = {"trip": np.array(7), "x": np.arange(4, dtype=np.float32)}
    sess.run(None, feeds)  # compiles the loop first: the bound below is for stopping, not compiling
    ro = ort.RunOptions()
    timer = _cancel_after(ro, 0.3)
    start = time.perf_counter()
    with pytest.raises(RunTerminatedError):
        sess.run(None, {"trip": np.array(10**12), "x": np.zeros(4, np.float32)}, ro)
    timer.join()
    assert time.perf_counter() - start < 10
    np.testing.assert_array_equal(sess.run(None, feeds, ort.RunOptions())[0], _oracle(model, feeds)[0])


@pytest.mark.parametrize("provider", ["numpy", "numba"])
def test_terminate_stops_a_long_scan(provider):
    model = _scan_model()
    sess = ort.InferenceSession(model, providers=[_provider(provider)])
    ro = ort.RunOptions()
    xs = np.ones((2_000_000, 2), np.float32)  # tens of seconds of body calls when not stopped
    timer = _cancel_after(ro, 0.3)
    start = time.perf_counter()
    with pytest.raises(RunTerminatedError, match="Scan body"):
        sess.run(None, {"s0": np.zeros(2, np.float32), "xs": xs}, ro)
    timer.join()
    assert time.perf_counter() - start < 10
    feeds = {"s0": np.array([1, -1], np.float32), "xs": np.arange(10, dtype=np.float32).reshape(5, 2)}
    for got, expected in zip(sess.run(None, feeds, ort.RunOptions()), _oracle(model, feeds)):
        np.testing.assert_array_equal(got, expected)


def test_terminate_stops_an_iobinding_run():
    model = _loop_with_trip_input()
    sess = ort.InferenceSession(model, providers=["numpy"])
    binding = sess.io_binding()
    binding.bind_cpu_input("trip", np.array(10**12))
    binding.bind_cpu_input("x", np.zeros(4, np.float32))
    binding.bind_output("y")
    ro = ort.RunOptions()
    timer = _cancel_after(ro, 0.3)
    start = time.perf_counter()
    with pytest.raises(RunTerminatedError, match="Loop body"):
        sess.run_with_iobinding(binding, ro)
    timer.join()
    assert time.perf_counter() - start < 10
    # already set: refused before it starts
    with pytest.raises(RunTerminatedError):
        sess.run_with_iobinding(binding, ro)
    feeds = {"trip": np.array(9), "x": np.arange(4, dtype=np.float32)}
    binding.bind_cpu_input("trip", feeds["trip"])
    binding.bind_cpu_input("x", feeds["x"])
    sess.run_with_iobinding(binding, ort.RunOptions())
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], _oracle(model, feeds)[0])


@pytest.mark.parametrize("provider", ["numpy", "numba"])
def test_a_long_loop_run_in_pieces_matches_onnxruntime(provider):
    """200000 iterations with a scan output: the numba provider runs them in compiled pieces
    (RunOptions.terminate checked between them); the carried value and every scan value match."""
    f = TensorProto.FLOAT
    body = add_one_loop_body()
    body.output.append(helper.make_tensor_value_info("acc_out", f, [4]))  # also a scan output
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], ["y", "ys"], body=body)], "g",
                          [helper.make_tensor_value_info("trip", TensorProto.INT64, []),
                           helper.make_tensor_value_info("x", f, [4])],
                          [helper.make_tensor_value_info("y", f, [4]), helper.make_tensor_value_info("ys", f, None)],
                          initializer=[onnx.numpy_helper.from_array(np.array(True), "cond")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = m.SerializeToString()
    feeds = {"trip": np.array(200_000), "x": np.linspace(0, 1, 4, dtype=np.float32)}
    got = ort.InferenceSession(model, providers=[_provider(provider)]).run(None, feeds, ort.RunOptions())
    for g_, e in zip(got, _oracle(model, feeds)):
        np.testing.assert_array_equal(g_, e)



def _counting_loop(table: np.ndarray | None, limit: float) -> bytes:
    """acc += table[i] (or + 1 without a table) while sum(acc) < limit: the body computes its own
    condition and, with a table, reads the iteration number (Gather) and has acc as a scan output."""
    f = TensorProto.FLOAT
    step = [helper.make_node("Gather", ["table", "i"], ["row"])] if table is not None else []
    body = helper.make_graph(
        [*step, helper.make_node("Add", ["acc", "row" if table is not None else "one"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"]),
         *([helper.make_node("Identity", ["acc_out"], ["acc_scan"])] if table is not None else [])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", f, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, [4]),
         *([helper.make_tensor_value_info("acc_scan", f, [4])] if table is not None else [])])
    outputs = [helper.make_tensor_value_info("y", f, [4])]
    if table is not None:
        outputs.append(helper.make_tensor_value_info("ys", f, None))
    extra = [onnx.numpy_helper.from_array(table, "table")] if table is not None else \
        [onnx.numpy_helper.from_array(np.ones(4, np.float32), "one")]
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], [o.name for o in outputs], body=body)],
                          "g", [helper.make_tensor_value_info("trip", TensorProto.INT64, []),
                                helper.make_tensor_value_info("x", f, [4])], outputs,
                          initializer=[onnx.numpy_helper.from_array(np.array(True), "cond"),
                                       onnx.numpy_helper.from_array(np.array(limit, np.float32), "limit"), *extra])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def test_a_long_loop_reading_its_iteration_and_computing_its_condition_runs_in_pieces():
    """numba's compiled loop numbers the iterations of each piece on from the last and carries the
    condition across pieces: it stops where onnxruntime stops (past the first piece), same values."""
    pytest.importorskip("onnxplug_numba")
    table = np.tile((np.arange(200_000) % 7).astype(np.float32)[:, None], (1, 4))
    model = _counting_loop(table, 1.8e6)  # the sum passes the limit near iteration 150,000
    feeds = {"trip": np.array(200_000), "x": np.zeros(4, np.float32)}
    sess = ort.InferenceSession(model, providers=["numba"])
    assert {a.provider for a in sess.get_node_assignments() if a.op_type == "Loop"} == {"numba"}
    got, expected = sess.run(None, feeds, ort.RunOptions()), _oracle(model, feeds)
    assert 65_536 < expected[1].shape[0] < 200_000
    for g_, e in zip(got, expected):
        np.testing.assert_array_equal(g_, e)


def test_terminate_stops_a_compiled_loop_that_computes_its_condition():
    """acc += 1 while sum(acc) < 1e30 never ends (float32 sums stop growing at 2^24 steps); the
    numba provider's compiled loop still stops on terminate, and the session then runs short loops."""
    pytest.importorskip("onnxplug_numba")
    model = _counting_loop(None, 1e30)
    sess = ort.InferenceSession(model, providers=["numba"])
    assert {a.provider for a in sess.get_node_assignments() if a.op_type == "Loop"} == {"numba"}
    short = {"trip": np.array(5), "x": np.zeros(4, np.float32)}
    sess.run(None, short)  # compiles the loop first: the bound below is for stopping, not compiling
    ro = ort.RunOptions()
    timer = _cancel_after(ro, 0.3)
    start = time.perf_counter()
    with pytest.raises(RunTerminatedError):
        sess.run(None, {"trip": np.array(10**12), "x": np.zeros(4, np.float32)}, ro)
    timer.join()
    assert time.perf_counter() - start < 10
    np.testing.assert_array_equal(sess.run(None, short)[0], _oracle(model, short)[0])
