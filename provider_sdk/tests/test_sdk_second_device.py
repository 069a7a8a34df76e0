"""An SDK-built provider on a NullDevice "second device", partitioned with the default numpy provider."""

from __future__ import annotations

import gc

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import helper
from sdk_support import SecondDeviceProvider, make_model, plain_session, run_onnxruntime

from onnxplug.testing.model_suite import build

CLAIMED = {"Relu", "Add"}


def _expected_copies(model: onnx.ModelProto) -> int:
    """Copies a correct plan needs: one per (value, other device) pair a node or the caller reads."""
    graph = model.graph
    home = {vi.name: "cpu" for vi in graph.input}
    home.update({t.name: "cpu" for t in graph.initializer})
    constants = {t.name for t in graph.initializer}
    needed = set()
    for node in graph.node:
        device = "null" if node.op_type in CLAIMED else "cpu"
        for name in node.input:
            if name and home[name] != device and name not in constants:
                needed.add((name, device))
        for name in node.output:
            home[name] = device
    needed.update((vi.name, "cpu") for vi in graph.output if home[vi.name] != "cpu")
    return len(needed)


def _check_session(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float, atol: float) -> None:
    session = plain_session(model, [SecondDeviceProvider.name])
    assert session.get_providers() == [SecondDeviceProvider.name, "numpy"]
    for assignment in session.get_node_assignments():
        want = SecondDeviceProvider.name if assignment.op_type in CLAIMED else "numpy"
        assert assignment.provider == want, assignment
    assert session.engine.plan.copy_count == _expected_copies(model) > 0
    memory = session.engine.providers[0].memory
    expected = run_onnxruntime(model, feeds)
    for _ in range(2):  # a second run must give the same (the kernels keep no state)
        got = session.run(None, feeds)
        for g, w in zip(got, expected):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    assert memory.bytes_in > 0 and memory.bytes_out > 0
    del got
    gc.collect()
    # What stays is the initializers copied to the device once, at session creation.
    resident = {t.name: onnx.numpy_helper.to_array(t).nbytes for t in model.graph.initializer}
    on_device = {name for n in model.graph.node if n.op_type in CLAIMED for name in n.input if name in resident}
    assert memory.live_bytes == sum(resident[name] for name in on_device), "device buffers outlived the run"


def test_small_residual_block(register_provider) -> None:  # type: ignore[no-untyped-def]
    register_provider(SecondDeviceProvider)
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", onnx.TensorProto.FLOAT, [4, 4], rng.standard_normal(16).astype(np.float32))
    bias = helper.make_tensor("bias", onnx.TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32))
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
        helper.make_node("Add", ["h", "bias"], ["hb"], name="add_bias"),  # initializer copied once, at creation
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "x"], ["res"], name="residual"),  # x crosses to the device
        helper.make_node("Sigmoid", ["res"], ["s"], name="sigmoid"),
        helper.make_node("Add", ["s", "r"], ["y"], name="out"),  # r is still on the device; s comes back
    ]
    model = make_model(nodes, {"x": [3, 4]}, {"y": [3, 4], "r": [3, 4]}, initializers=[w, bias])
    _check_session(model, {"x": rng.standard_normal((3, 4)).astype(np.float32)}, 1e-6, 1e-6)


def test_resnet18_from_the_model_suite(register_provider) -> None:  # type: ignore[no-untyped-def]
    register_provider(SecondDeviceProvider)
    model = build("resnet18", seed=0)
    model.ir_version = 8
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    _check_session(model, {"input": x}, 1e-4, 1e-4)
