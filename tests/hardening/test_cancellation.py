"""RunOptions.terminate set from another thread stops a run promptly, inside Loop bodies too."""

from __future__ import annotations

import threading
import time

import numpy as np
import onnx
import onnxplug as ort
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
