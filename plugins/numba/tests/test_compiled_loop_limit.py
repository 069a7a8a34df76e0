"""The allocation limit (session.onnxplug.max_allocation_bytes) inside the compiled Loop: scan
outputs of a loop whose condition is computed in its body (no trip count known before it runs) are
counted as the compiled loop fills them, in one compiled call or across the pieces of a long loop;
a loop whose scan values would pass the limit is refused with AllocationLimitError naming the
Loop node, one just under it matches onnxruntime, and the session runs on.
"""

from __future__ import annotations

import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from numba_test_helpers import assert_close, run_onnxruntime
import onnxplug as ort
from onnxplug.errors import AllocationLimitError

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
LIMIT = 2**20
KEY = "session.onnxplug.max_allocation_bytes"


def counting_loop(width: int) -> onnx.ModelProto:
    """acc += 1 (float[width]) while max(acc) < stop, at most ``trip`` times; the scan output keeps
    every acc, ``width`` x 4 bytes per iteration."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "one"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["s"]),
         helper.make_node("ReduceMax", ["acc_out"], ["m"], keepdims=0),
         helper.make_node("Less", ["m", "stop"], ["c_out"])],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c", B, []),
         helper.make_tensor_value_info("acc", F, [width])],
        [helper.make_tensor_value_info("c_out", B, []), helper.make_tensor_value_info("acc_out", F, [width]),
         helper.make_tensor_value_info("s", F, [width])],
        initializer=[numpy_helper.from_array(np.ones(width, np.float32), "one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip", "cond", "x"], ["y", "scans"], body=body, name="the_loop")],
        "g", [helper.make_tensor_value_info("trip", I64, []), helper.make_tensor_value_info("x", F, [width]),
              helper.make_tensor_value_info("stop", F, [])],
        [helper.make_tensor_value_info("y", F, [width]), helper.make_tensor_value_info("scans", F, None)],
        initializer=[numpy_helper.from_array(np.array(True), "cond")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def session(model: onnx.ModelProto, *, limit: int = LIMIT, profile_dir=None) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.add_session_config_entry(KEY, str(limit))
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if profile_dir is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(profile_dir / "p")
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["numba"])
    assert [a.provider for a in sess.get_node_assignments() if a.op_type == "Loop"] == ["numba"]
    return sess


def feeds(width: int, trip: int, stop: int) -> dict[str, np.ndarray]:
    return {"trip": np.array(trip, np.int64), "x": np.zeros(width, np.float32), "stop": np.array(stop, np.float32)}


REFUSED = r"node 'the_loop' \(ai\.onnx::Loop.*scan outputs of (\d+) bytes after (\d+) iterations.*over the limit " \
          r"of 1048576 bytes"

# (scan width, trip count): one compiled call (trip count within a piece), a long loop refused in
# its first piece, a long loop whose scan values fill two pieces
CASES = [(64, 5000), (64, 10**12), (2, 10**12)]


@pytest.mark.parametrize("width,trip", CASES)
def test_scan_outputs_past_the_limit_are_refused_in_the_compiled_loop(width, trip, generic_calls):
    fit = LIMIT // (4 * width)  # iterations whose scan values the limit holds
    model = counting_loop(width)
    sess = session(model)
    with pytest.raises(AllocationLimitError, match=REFUSED) as info:
        sess.run(None, feeds(width, trip, fit + 1))
    nbytes, iterations = (int(v) for v in
                          str(info.value).split("scan outputs of ")[1].split(" iterations")[0].split(" bytes after "))
    assert (nbytes, iterations) == ((fit + 1) * 4 * width, fit + 1)
    assert not generic_calls  # the compiled loop refused it, not the generic path

    under = feeds(width, trip, fit)  # exactly the limit: allowed
    got = sess.run(None, under)
    expected = run_onnxruntime(model, under)
    assert got[1].shape == (fit, width) and got[1].nbytes == LIMIT
    assert_close(got, expected)
    small = feeds(width, trip, 7)
    assert_close(sess.run(None, small), run_onnxruntime(model, small))
    assert not generic_calls


def test_an_endless_loop_growing_its_scan_outputs_is_refused_soon(generic_calls):
    """Trip count 10^12 and a condition that holds for 10^9 iterations: refused once the scan
    values would pass the limit, not after running the loop."""
    model = counting_loop(16)
    sess = session(model)
    t0 = time.process_time()
    with pytest.raises(AllocationLimitError, match=REFUSED):
        sess.run(None, feeds(16, 10**12, 10**9))
    assert time.process_time() - t0 < 10
    assert not generic_calls
    small = feeds(16, 10**12, 3)
    assert_close(sess.run(None, small), run_onnxruntime(model, small))


def test_without_a_limit_the_compiled_loop_keeps_every_scan_value(generic_calls):
    model = counting_loop(64)
    values = feeds(64, 10**12, 5000)  # 1.2 MiB of scan values
    got = session(model, limit=0).run(None, values)
    assert got[1].shape == (5000, 64)
    assert_close(got, run_onnxruntime(model, values))
    assert not generic_calls


def test_the_generic_path_counts_scan_outputs_as_they_grow(generic_calls, tmp_path):
    """A profiled run takes the generic path (an event per body node per iteration): its scan
    values are counted every eighth more iterations."""
    model = counting_loop(64)
    sess = session(model, profile_dir=tmp_path)
    with pytest.raises(AllocationLimitError, match=REFUSED) as info:
        sess.run(None, feeds(64, 10**12, 10**9))
    counted = int(str(info.value).split("scan outputs of ")[1].split(" ")[0])
    assert LIMIT < counted <= LIMIT + LIMIT // 8 + 256
    assert generic_calls
    small = feeds(64, 10**12, 9)
    assert_close(sess.run(None, small), run_onnxruntime(model, small))
