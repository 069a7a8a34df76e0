"""Faults inside a provider: a kernel that raises, returns the wrong shape, rank or dtype, a
non-array or a host array, or keeps a device buffer. Each gives KernelError naming node and
provider; the device allocator's live count is back to zero after the failed run, and the next
run of the same session matches onnxruntime."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.errors import KernelError
from onnxplug.plugins import get_catalog
from onnxplug.testing.model_suite import build, sample_inputs
from tests.conftest import make_model
from tests.hardening.faulty_provider import FAULTS, FaultyProvider
from tests.oracle import assert_close, ort_outputs


pytestmark = pytest.mark.filterwarnings("ignore:.*declined:RuntimeWarning")


@pytest.fixture(scope="module", autouse=True)
def registered():
    get_catalog().register(FaultyProvider, "tests")
    yield
    get_catalog().providers.pop("faulty", None)


def _model(batch="batch"):
    """x -> Add -> Relu (faulty) -> MatMul -> Relu (faulty) -> y, on numpy between."""
    rng = np.random.default_rng(0)
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    w = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "w")
    nodes = [helper.make_node("Add", ["x", "b"], ["h"], name="add"),
             helper.make_node("Relu", ["h"], ["r"], name="relu_in"),
             helper.make_node("MatMul", ["r", "w"], ["m"], name="matmul"),
             helper.make_node("Relu", ["m"], ["y"], name="relu_out")]
    return make_model(nodes, [("x", TensorProto.FLOAT, [batch, 8])], [("y", TensorProto.FLOAT, [batch, 5])],
                      [b, w])


_FEEDS = {"x": np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)}

#: what each fault's message says besides node and provider
_SAYS = {"raise": "injected fault", "shape": "shape [3, 7]", "rank": "shape [24]",
         "dtype": "element type float64", "none": "a NoneType", "list": "a list",
         "host_array": "a ndarray, not a FaultArray", "leak": "left 1 device buffer"}


def _session(model):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["faulty"])
    provider = sess.engine.providers[0]
    assert provider.name == "faulty"
    assert {a.provider for a in sess.get_node_assignments() if a.op_type == "Relu"} == {"faulty"}
    return sess, provider


@pytest.mark.parametrize("fault", [f for f in FAULTS if f != "shape"])
def test_fault_is_a_kernel_error_naming_node_and_provider_and_the_session_recovers(fault):
    model = _model(batch=3)  # static shapes: the whole shape is checked
    expected = ort_outputs(model, _FEEDS)
    sess, provider = _session(model)
    assert_close(sess.run(None, _FEEDS), expected)
    gc.collect()
    assert provider.allocator.live == 0
    provider.fault = fault
    with pytest.raises(KernelError) as info:
        sess.run(None, _FEEDS)
    message = str(info.value)
    assert "'relu_in'" in message and "Relu" in message and "'faulty'" in message, message
    assert _SAYS[fault] in message, message
    # buffers of the failed run are released while the error is still held (no gc.collect())
    assert provider.allocator.live == 0
    provider.fault = None
    for _ in range(2):
        assert_close(sess.run(None, _FEEDS), expected)
    assert provider.allocator.live == 0
    del info


@pytest.mark.parametrize("fault", ["rank", "dtype", "none", "host_array"])
def test_fault_with_symbolic_batch_is_caught_by_rank_and_dtype(fault):
    model = _model()
    expected = ort_outputs(model, _FEEDS)
    sess, provider = _session(model)
    provider.fault = fault
    with pytest.raises(KernelError, match="relu_in.*'faulty'"):
        sess.run(None, _FEEDS)
    assert provider.allocator.live == 0
    provider.fault = None
    assert_close(sess.run(None, _FEEDS), expected)


def test_wrong_dimension_against_a_static_shape_is_a_warning_naming_node_and_provider():
    """A dimension that differs from a static inferred one is reported as onnxruntime does (a
    warning: shape inference is wrong for some ceil_mode pools), and the next node's error follows."""
    model = _model(batch=3)
    expected = ort_outputs(model, _FEEDS)
    sess, provider = _session(model)
    provider.fault = "shape"
    with pytest.warns(RuntimeWarning, match=r"'relu_in'.*'faulty'.*shape \[3, 7\] where shape inference gives float32\[3, 8\]"):
        with pytest.raises(KernelError, match="'matmul'"):
            sess.run(None, _FEEDS)
    assert provider.allocator.live == 0
    provider.fault = None
    assert_close(sess.run(None, _FEEDS), expected)
    assert provider.allocator.live == 0


def test_a_pool_whose_inferred_shape_is_wrong_runs_as_in_onnxruntime():
    """onnx's shape inference gives 6x6 for this ceil_mode MaxPool; onnxruntime and the kernels give
    5x5 (the last window would start in the padding) and run on with a warning."""
    model = make_model([helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                                         pads=[1, 1, 1, 1], ceil_mode=1, name="pool"),
                        helper.make_node("Relu", ["p"], ["y"], name="relu")],
                       [("x", TensorProto.FLOAT, [1, 1, 9, 9])], [("y", TensorProto.FLOAT, None)])
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 1, 9, 9)).astype(np.float32)}
    expected = ort_outputs(model, feeds)
    assert expected[0].shape == (1, 1, 5, 5)
    for provider in ("numpy", "numba"):
        if provider == "numba":
            pytest.importorskip("onnxplug_numba")
        sess = ort.InferenceSession(model.SerializeToString(), providers=[provider])
        with pytest.warns(RuntimeWarning, match=r"'pool'.*shape \[1, 1, 5, 5\] where shape inference"):
            assert_close(sess.run(None, feeds), expected)


def test_wrong_dimension_with_symbolic_shape_is_not_checked():
    """Where inference leaves a dimension unknown only the rank is checked: the wrong row count of
    a Relu under a symbolic batch reaches the MatMul, whose own error names it."""
    sess, provider = _session(_model())
    provider.fault = "shape"
    with pytest.raises(KernelError, match="'matmul'"):
        sess.run(None, _FEEDS)
    assert provider.allocator.live == 0


def test_faults_in_a_loop_body_are_named_and_released():
    model = build("loop_model")
    feeds = sample_inputs("loop_model", batch=2)
    sess = ort.InferenceSession(model.SerializeToString(), providers=[("faulty", {"claim": "Abs"})])
    provider = sess.engine.providers[0]
    expected = ort_outputs(model, feeds)
    assert_close(sess.run(None, feeds), expected)
    assert provider.calls > 0  # the body's Abs ran on the faulty provider
    for fault in ("raise", "dtype", "leak"):
        provider.fault = fault
        with pytest.raises(KernelError, match="'faulty'"):
            sess.run(None, feeds)
        assert provider.allocator.live == 0, fault
        provider.fault = None
        assert_close(sess.run(None, feeds), expected)


def test_faults_while_other_threads_run_correctly():
    """A faulty run does not disturb concurrent good runs on their own session of the same model,
    nor the leak accounting of other threads (allocations are tracked per thread)."""
    import threading

    model = _model(batch=3)
    expected = ort_outputs(model, _FEEDS)
    bad, bad_provider = _session(model)
    good, good_provider = _session(model)
    bad_provider.fault = "leak"
    errors: list[BaseException] = []

    def good_runs():
        try:
            for _ in range(50):
                assert_close(good.run(None, _FEEDS), expected)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=good_runs) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(20):
        with pytest.raises(KernelError, match="left 1 device buffer"):
            bad.run(None, _FEEDS)
    for t in threads:
        t.join()
    assert not errors
    assert bad_provider.allocator.live == 0 and good_provider.allocator.live == 0


def test_correct_kernels_pass_the_output_checks_on_a_suite_model():
    model = build("transformer_encoder")
    feeds = sample_inputs("transformer_encoder", batch=2)
    sess = ort.InferenceSession(model.SerializeToString(), providers=[("faulty", {"claim": "Add"})])
    provider = sess.engine.providers[0]
    constants = provider.allocator.live  # initializers copied to the device once
    assert constants == sum(1 for k in sess.engine.plan.constants if not isinstance(k, str))
    for _ in range(3):
        assert_close(sess.run(None, feeds), ort_outputs(model, feeds))
    assert provider.calls > 0
    assert provider.allocator.live == constants


def test_a_graph_output_declared_with_another_shape_runs_as_in_onnxruntime():
    """The checks hold kernels to shape inference, not to a model's output declarations, which
    onnxruntime only warns about (real models declare [1, ?] for a [16, 1, 8210] output)."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [("x", TensorProto.FLOAT, [3, 8])], [("y", TensorProto.FLOAT, [1, 8, 1])])
    expected = ort_outputs(model, _FEEDS)
    for providers in (["numpy"], ["faulty"]):
        sess = ort.InferenceSession(model.SerializeToString(), providers=providers)
        assert_close(sess.run(None, _FEEDS), expected)


def test_a_failed_run_does_not_keep_its_intermediates_while_the_error_is_held():
    """A 40 MB intermediate read by the failing node is freed when the error leaves run, though
    the caller keeps the error (and with it the traceback)."""
    import tracemalloc

    model = make_model([helper.make_node("Expand", ["x", "big"], ["e"], name="expand"),
                        helper.make_node("Relu", ["e"], ["r"], name="relu"),
                        helper.make_node("Reshape", ["r", "s"], ["y"], name="reshape")],
                       [("x", TensorProto.FLOAT, [1]), ("s", TensorProto.INT64, [2])],
                       [("y", TensorProto.FLOAT, None)],
                       [numpy_helper.from_array(np.array([1000, 10000], np.int64), "big")])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["numpy"])
    feeds = {"x": np.ones(1, np.float32), "s": np.array([7, 7], np.int64)}  # 49 != 10^7 elements
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with pytest.raises(KernelError, match="'reshape'") as info:
            sess.run(None, feeds)
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert info.value.__cause__ is not None  # the traceback is still held
    assert held < 4_000_000, f"{held} bytes still allocated after the failed run"
