"""Memory: pooled buffers, values kept on the device between OpenCL nodes, copies only at
partition boundaries (and in the profile), device outputs through IOBinding."""

from __future__ import annotations

import json

import numpy as np
from opencl_helpers import helper, make_model

import onnxplug as ort


def _profiled(model: bytes, tmp_path, providers):
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    return ort.InferenceSession(model, so, providers=providers)


def _copies(session):
    """The copy steps of the profile (onnxruntime's MemcpyFromHost/MemcpyToHost Node events), by step name."""
    with open(session.end_profiling()) as f:
        events = json.load(f)
    return [e["name"].removesuffix("_kernel_time") for e in events
            if e["cat"] == "Node" and e["args"].get("op_name") in ("MemcpyFromHost", "MemcpyToHost")]


def test_copies_only_at_partition_boundaries(tmp_path, rng):
    """opencl -> (numpy-only op) -> opencl: one upload, one download per boundary, none inside."""
    x = rng.standard_normal((4, 6)).astype(np.float32)
    nodes = [helper.make_node("Exp", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Transpose", ["b"], ["c"]),
             helper.make_node("CumSum", ["c", "axis"], ["d"]),  # not an OpenCL op: runs on numpy
             helper.make_node("Neg", ["d"], ["e"]), helper.make_node("Abs", ["e"], ["y"])]
    model = make_model(nodes, {"x": x}, ["y"], {"axis": np.array(0, np.int64)})
    session = _profiled(model, tmp_path, ["opencl"])
    placed = {a.op_type: a.provider for a in session.get_node_assignments()}
    assert placed["CumSum"] == "numpy" and placed["Transpose"] == "opencl" and placed["Abs"] == "opencl"
    y = session.run(None, {"x": x})[0]
    want = np.abs(-np.cumsum(np.maximum(np.exp(x), 0).T, axis=0))
    np.testing.assert_allclose(y, want, rtol=1e-5)
    copies = sorted(_copies(session))
    assert copies == ["copy c opencl:0->cpu", "copy d cpu->opencl:0", "copy x cpu->opencl:0",
                      "copy y opencl:0->cpu"]


def test_values_between_opencl_nodes_are_device_arrays(rng):
    import pyopencl.array as cla

    x = rng.standard_normal((3, 3)).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "x"], ["a"]), helper.make_node("Transpose", ["a"], ["y"])],
                       {"x": x}, ["y"])
    session = ort.InferenceSession(model, providers=["opencl"])
    seen = []
    for step in session.engine.plan.steps:
        if step.kind != "copy":
            original = step.kernel.compute
            step.kernel.compute = lambda *a, _o=original: (seen.append([type(v) for v in a]), _o(*a))[1]
    np.testing.assert_allclose(session.run(None, {"x": x})[0], (x @ x).T, rtol=1e-5)
    assert seen and all(t is cla.Array for types in seen for t in types)


def test_buffers_come_from_the_pool(rt, rng):
    x = rng.standard_normal((256, 256)).astype(np.float32)
    model = make_model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Exp", ["a"], ["y"])], {"x": x}, ["y"])
    session = ort.InferenceSession(model, providers=["opencl"])
    session.run(None, {"x": x})
    allocated = rt.pool.active_blocks + rt.pool.held_blocks
    for _ in range(5):
        session.run(None, {"x": x})
    assert rt.pool.held_blocks > 0  # freed buffers wait in the pool
    assert rt.pool.active_blocks + rt.pool.held_blocks <= allocated + 1  # and are reused, not re-allocated


def test_iobinding_keeps_outputs_on_device_and_pipelines_sessions(tmp_path, rng):
    import pyopencl.array as cla

    x = rng.standard_normal((2, 5)).astype(np.float32)
    first = _profiled(make_model([helper.make_node("Exp", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])],
                                 {"x": x}, ["y"]), tmp_path, ["opencl"])
    second = _profiled(make_model([helper.make_node("Abs", ["x"], ["t"]), helper.make_node("Sqrt", ["t"], ["y"])],
                                  {"x": x}, ["y"]), tmp_path, ["opencl"])
    b1 = first.io_binding()
    b1.bind_cpu_input("x", x)
    b1.bind_output("y", "opencl", 0)
    first.run_with_iobinding(b1)
    middle = b1.get_outputs()[0]
    assert middle.device_name() == "opencl" and isinstance(middle.value(), cla.Array)
    b2 = second.io_binding()
    b2.bind_input("x", middle.value())  # found on the OpenCL device by the provider's transfer (adopt)
    b2.bind_output("y", "opencl", 0)
    second.run_with_iobinding(b2)
    out = b2.get_outputs()[0]
    assert isinstance(out.value(), cla.Array)
    np.testing.assert_allclose(b2.copy_outputs_to_cpu()[0], np.sqrt(np.exp(x)), rtol=1e-5)
    assert _copies(first) == ["copy x cpu->opencl:0"]
    assert _copies(second) == []


def test_iobinding_raw_buffer_pointer_and_output_buffer(rt, rng):
    """onnxruntime's pointer spelling: a cl_mem handle as input, and a bound output buffer."""
    import onnxplug_opencl

    x = rng.standard_normal((3, 4)).astype(np.float32)
    session = ort.InferenceSession(make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"]),
                                   providers=["opencl"])
    dx = onnxplug_opencl.to_device(x)
    target = rt.empty((3, 4), np.float32)
    binding = session.io_binding()
    binding.bind_input("x", "opencl", 0, np.float32, [3, 4], dx.base_data.int_ptr)
    binding.bind_output("y", "opencl", 0, np.float32, [3, 4], target.base_data.int_ptr)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(target.get(), np.maximum(x, 0))


def test_opencl_ortvalues_round_trip_and_bind_without_copies(rt, tmp_path, rng):
    import pyopencl.array as cla

    x = rng.standard_normal((3, 4)).astype(np.float32)
    device_id = rt.device.index
    value = ort.OrtValue.ortvalue_from_numpy(x, "opencl", device_id)
    assert value.device_name() == "opencl" and isinstance(value.value(), cla.Array)
    assert value.value().context == rt.context  # the runtime sessions on this device share
    assert (value.shape(), value.data_type(), value.tensor_size_in_bytes()) == ([3, 4], "tensor(float)", x.nbytes)
    assert value.data_ptr() == value.value().data.int_ptr  # the cl_mem handle bind_input takes
    np.testing.assert_array_equal(value.numpy(), x)
    value.update_inplace(-x)
    np.testing.assert_array_equal(value.value().get(), -x)

    session = _profiled(make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"]), tmp_path, ["opencl"])
    target = ort.OrtValue.ortvalue_from_shape_and_type([3, 4], np.float32, "opencl", device_id)
    binding = session.io_binding()
    binding.bind_ortvalue_input("x", value)
    binding.bind_ortvalue_output("y", target)
    session.run_with_iobinding(binding)
    assert binding.get_outputs()[0].value() is target.value()
    np.testing.assert_array_equal(target.numpy(), np.maximum(-x, 0))
    (y,) = session.run_with_ort_values(None, {"x": value})
    np.testing.assert_array_equal(y.numpy(), np.maximum(-x, 0))
    # x was fed on the device both times: the only copy is run_with_ort_values' host output
    assert _copies(session) == ["copy y opencl:0->cpu"]
