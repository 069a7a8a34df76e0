"""OrtValue (onnxplug.ort_value) and the session/IOBinding methods that use it, checked against the
installed onnxruntime: the same calls give the same shapes, types, devices, values and memory
sharing. Device values run on the repo's test device (tests/mixing_provider.py)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.errors import (
    BindingError,
    InvalidOutputError,
    MissingInputError,
    OnnxplugError,
    OrtValueError,
    UnknownInputError,
    UnsupportedOptionError,
)
from onnxplug.plugins import get_catalog
from tests.conftest import make_model
from tests.mixing_provider import TEST_DEVICE, BindingProvider, BindingTransfer, DeviceValue

F = TensorProto.FLOAT


@pytest.fixture(scope="module", autouse=True)
def registered():
    get_catalog().register(BindingProvider, "tests")
    yield
    get_catalog().providers.pop("binding_test", None)


def _model() -> onnx.ModelProto:
    """y = Relu(x + b) (Add and Relu run on the test device), z = Identity(x) (on the host)."""
    return make_model([helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"]),
                       helper.make_node("Identity", ["x"], ["z"])],
                      [("x", F, [2, 3]), ("b", F, [3])], [("y", F, [2, 3]), ("z", F, [2, 3])])


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    return (np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32), np.array([0.5, -0.5, 1.0], np.float32))


def _sessions(model: onnx.ModelProto | None = None, providers: tuple[str, ...] = ("numpy",)):
    model = model if model is not None else _model()
    return (ort.InferenceSession(model, providers=list(providers)),
            onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]))


def _device_transfer() -> BindingTransfer:
    """The transfer of the provider that OrtValues on the test device use."""
    from onnxplug.ort_value import provider_for_device

    return provider_for_device(TEST_DEVICE).data_transfer


# --- host values: the same answers as onnxruntime's ---------------------------------------------------

_BASE = np.arange(24, dtype=np.float32).reshape(4, 6)
ARRAYS: dict[str, Callable[[], np.ndarray]] = {
    "float32 2x3": lambda: np.arange(6, dtype=np.float32).reshape(2, 3),
    "float64 scalar": lambda: np.array(2.5),
    "int64 vector": lambda: np.array([3, -1, 7], np.int64),
    "bool": lambda: np.array([[True, False]]),
    "uint8 empty": lambda: np.zeros((0, 3), np.uint8),
    "float16": lambda: np.linspace(0, 1, 5).astype(np.float16),
    "int8 strided view": lambda: np.arange(20, dtype=np.int8).reshape(4, 5)[:, ::2],
    "fortran order": lambda: np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
}


@pytest.mark.parametrize("make", ARRAYS.values(), ids=ARRAYS.keys())
def test_from_numpy_answers_as_onnxruntime(make: Callable[[], np.ndarray]) -> None:
    ours_src, theirs_src = make(), make()
    ours = ort.OrtValue.ortvalue_from_numpy(ours_src)
    theirs = onnxruntime.OrtValue.ortvalue_from_numpy(theirs_src)
    for method in ("shape", "data_type", "element_type", "device_name", "tensor_size_in_bytes", "has_value",
                   "is_tensor", "is_tensor_sequence", "is_sparse_tensor"):
        assert getattr(ours, method)() == getattr(theirs, method)(), method
    assert type(ours.element_type()) is type(theirs.element_type())
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.numpy().dtype == theirs.numpy().dtype
    # memory sharing: with the source array, between calls, and through the data pointer
    assert np.shares_memory(ours.numpy(), ours_src) == np.shares_memory(theirs.numpy(), theirs_src)
    assert np.shares_memory(ours.numpy(), ours.numpy()) == np.shares_memory(theirs.numpy(), theirs.numpy())
    assert (ours.data_ptr() == ours_src.ctypes.data) == (theirs.data_ptr() == theirs_src.ctypes.data)
    assert np.shares_memory(np.asarray(ours), ours_src) == np.shares_memory(np.asarray(theirs), theirs_src)


def test_writes_show_through_as_in_onnxruntime() -> None:
    results = []
    for cls in (ort.OrtValue, onnxruntime.OrtValue):
        source = np.zeros((2, 2), np.float32)
        value = cls.ortvalue_from_numpy(source)
        source[0, 0] = 5  # the caller writes its array
        seen = value.numpy()
        seen[1, 1] = 7  # and the array numpy() gave
        before = (seen.copy(), source.copy())
        value.update_inplace(np.full((2, 2), 3, np.float32))
        results.append((*before, source.copy(), value.numpy().copy()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
    seen, source, updated, _ = results[1]
    assert seen[0, 0] == 5 and source[1, 1] == 7 and updated[0, 0] == 3  # the oracle did share


SHAPES_AND_TYPES = [([2, 3], np.float32), ((4,), np.int64), ([2, 3], TensorProto.FLOAT), ([], np.bool_),
                    ([0, 5], np.float64), ([3], np.dtype("uint16")), ([1, 2], "int8"), ([2], TensorProto.INT32)]


@pytest.mark.parametrize("shape, element_type", SHAPES_AND_TYPES)
def test_from_shape_and_type_answers_as_onnxruntime(shape: Any, element_type: Any) -> None:
    ours = ort.OrtValue.ortvalue_from_shape_and_type(shape, element_type)
    theirs = onnxruntime.OrtValue.ortvalue_from_shape_and_type(shape, element_type)
    for method in ("shape", "data_type", "element_type", "device_name", "tensor_size_in_bytes"):
        assert getattr(ours, method)() == getattr(theirs, method)(), method
    assert (ours.numpy().shape, ours.numpy().dtype) == (theirs.numpy().shape, theirs.numpy().dtype)
    assert np.shares_memory(ours.numpy(), ours.numpy()) == np.shares_memory(theirs.numpy(), theirs.numpy())


def test_update_inplace_from_an_ortvalue_and_dlpack_as_onnxruntime() -> None:
    for cls in (ort.OrtValue, onnxruntime.OrtValue):
        target = np.zeros(3, np.float32)
        value = cls.ortvalue_from_numpy(target)
        value.update_inplace(cls.ortvalue_from_numpy(np.array([1, 2, 3], np.float32)))
        np.testing.assert_array_equal(target, [1, 2, 3])
        assert value.__dlpack_device__() == (1, 0)
        assert np.shares_memory(np.from_dlpack(value), target)
        assert np.shares_memory(cls.from_dlpack(target).numpy(), target)


def test_onnx_type_reinterprets_the_same_bytes() -> None:
    bits = np.array([0x3F80, 0x4000], np.uint16)  # 1.0 and 2.0 as bfloat16
    value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)
    assert value.data_type() == "tensor(bfloat16)" and value.element_type() == TensorProto.BFLOAT16
    assert np.shares_memory(value.numpy(), bits)
    np.testing.assert_array_equal(value.numpy().astype(np.float32), [1.0, 2.0])


# --- sessions --------------------------------------------------------------------------------------

@pytest.mark.parametrize("output_names", [None, ["y"], ["z", "y"]])
def test_run_with_ort_values_gives_what_onnxruntime_gives(output_names: list[str] | None) -> None:
    ours, theirs = _sessions()
    x, b = _inputs()
    mine = ours.run_with_ort_values(output_names, {"x": ort.OrtValue.ortvalue_from_numpy(x),
                                                   "b": ort.OrtValue.ortvalue_from_numpy(b)})
    ref = theirs.run_with_ort_values(output_names, {"x": onnxruntime.OrtValue.ortvalue_from_numpy(x),
                                                    "b": onnxruntime.OrtValue.ortvalue_from_numpy(b)})
    assert len(mine) == len(ref) == len(output_names or ["y", "z"])
    for m, r in zip(mine, ref):
        assert isinstance(m, ort.OrtValue)
        assert (m.shape(), m.data_type(), m.device_name()) == (r.shape(), r.data_type(), r.device_name())
        np.testing.assert_array_equal(m.numpy(), r.numpy())
        assert np.shares_memory(m.numpy(), x) == np.shares_memory(r.numpy(), x)  # z = Identity(x)


def test_run_takes_ortvalue_feeds_as_onnxruntime() -> None:
    ours, theirs = _sessions()
    x, b = _inputs()
    mine = ours.run(None, {"x": ort.OrtValue.ortvalue_from_numpy(x), "b": b})
    ref = theirs.run(None, {"x": onnxruntime.OrtValue.ortvalue_from_numpy(x), "b": b})
    assert [type(v) for v in mine] == [type(v) for v in ref] == [np.ndarray, np.ndarray]
    for m, r in zip(mine, ref):
        np.testing.assert_array_equal(m, r)


def test_sequence_outputs_as_onnxruntime() -> None:
    model = make_model([helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0)], [("x", F, [2, 3])], [])
    model.graph.output.append(helper.make_tensor_sequence_value_info("seq", F, None))
    ours, theirs = _sessions(model)
    x = _inputs()[0]
    (mine,) = ours.run_with_ort_values(None, {"x": ort.OrtValue.ortvalue_from_numpy(x)})
    (ref,) = theirs.run_with_ort_values(None, {"x": onnxruntime.OrtValue.ortvalue_from_numpy(x)})
    for method in ("is_tensor", "is_tensor_sequence", "has_value", "data_type", "element_type"):
        assert getattr(mine, method)() == getattr(ref, method)(), method
    with pytest.raises(RuntimeError):
        ref.numpy()
    with pytest.raises(OrtValueError, match=r"numpy\(\).*seq\(tensor\(float\)\)"):
        mine.numpy()


def test_run_async_calls_back_with_what_onnxruntime_gives() -> None:
    ours, theirs = _sessions()
    x, b = _inputs()
    results: dict[str, tuple] = {}
    done = {"ours": threading.Event(), "theirs": threading.Event()}

    def callback(outputs: list, user_data: str, error: str) -> None:
        results[user_data] = (outputs, error, threading.current_thread() is threading.main_thread())
        done[user_data].set()

    ours.run_async(None, {"x": x, "b": b}, callback, "ours")
    theirs.run_async(None, {"x": x, "b": b}, callback, "theirs")
    assert done["ours"].wait(10) and done["theirs"].wait(10)
    (mine, my_error, my_main), (ref, their_error, _) = results["ours"], results["theirs"]
    assert my_error == their_error == "" and not my_main
    for m, r in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(m, r)
    with pytest.raises(MissingInputError, match="'b'"):
        ours.run_async(None, {"x": x}, callback, "ours")


def test_create_ortvalue_from_shape_and_type_as_onnxruntime() -> None:
    ours, theirs = _sessions()
    mine = ours.create_ortvalue_from_shape_and_type([2, 4], np.float32, "cpu", 0)
    ref = theirs.create_ortvalue_from_shape_and_type([2, 4], np.float32, "cpu", 0)
    assert (mine.shape(), mine.data_type(), mine.device_name()) == (ref.shape(), ref.data_type(), ref.device_name())
    with pytest.raises(OrtValueError, match="'testdev:0'.*devices: cpu"):
        ours.create_ortvalue_from_shape_and_type([2], np.float32, "testdev", 0)
    on_device = ort.InferenceSession(_model(), providers=["binding_test"])
    allocator = on_device.engine.providers[0].allocator
    value = on_device.create_ortvalue_from_shape_and_type([2], np.float32, "testdev", 0)
    assert allocator.total == 1 and isinstance(value.value(), DeviceValue) and value.shape() == [2]


# --- IOBinding -------------------------------------------------------------------------------------

def test_binding_round_trip_as_onnxruntime() -> None:
    ours, theirs = _sessions()
    x, b = _inputs()
    runs = []
    for session, cls in ((ours, ort.OrtValue), (theirs, onnxruntime.OrtValue)):
        binding = session.io_binding()
        binding.bind_ortvalue_input("x", cls.ortvalue_from_numpy(x))
        binding.bind_cpu_input("b", b)
        target = cls.ortvalue_from_shape_and_type([2, 3], np.float32)
        binding.bind_ortvalue_output("y", target)
        binding.bind_output("z")
        session.run_with_iobinding(binding)
        outputs = binding.get_outputs()
        runs.append((outputs, target, binding.copy_outputs_to_cpu(), binding.get_outputs_as_ortvaluevector()))
    (mine, my_target, my_host, my_vector), (ref, their_target, their_host, their_vector) = runs
    assert all(isinstance(v, ort.OrtValue) for v in mine) and len(mine) == len(ref) == 2
    for m, r in zip(mine, ref):
        assert (m.shape(), m.data_type(), m.device_name()) == (r.shape(), r.data_type(), r.device_name())
        np.testing.assert_array_equal(m.numpy(), r.numpy())
    # y was written into the bound value's memory, in both
    assert (mine[0].data_ptr() == my_target.data_ptr()) == (ref[0].data_ptr() == their_target.data_ptr()) is True
    np.testing.assert_array_equal(my_target.numpy(), their_target.numpy())
    assert [type(h) for h in my_host] == [type(h) for h in their_host] == [np.ndarray, np.ndarray]
    assert len(my_vector) == len(their_vector)
    assert np.shares_memory(mine[1].numpy(), x) == np.shares_memory(ref[1].numpy(), x)


def test_bind_input_and_bind_cpu_input_take_ortvalues() -> None:
    session = ort.InferenceSession(_model(), providers=["binding_test"])
    x, b = _inputs()
    binding = session.io_binding()
    binding.bind_input("x", ort.OrtValue.ortvalue_from_numpy(x, "testdev", 0))
    binding.bind_cpu_input("b", ort.OrtValue.ortvalue_from_numpy(b, "testdev", 0))  # copied to the host
    binding.run()
    np.testing.assert_array_equal(binding.get_outputs()[0].numpy(), np.maximum(x + b, 0))
    with pytest.raises(BindingError, match="'x'.*testdev:0, not cpu"):
        binding.bind_input("x", ort.OrtValue.ortvalue_from_numpy(x, "testdev", 0), "cpu", 0)


# --- device values on the test device ----------------------------------------------------------------

def test_device_from_numpy_round_trip() -> None:
    x = _inputs()[0]
    transfer = _device_transfer()
    uploads, downloads = transfer.to_device_count, transfer.to_host_count
    value = ort.OrtValue.ortvalue_from_numpy(x, "testdev", 0)
    assert transfer.to_device_count == uploads + 1
    assert value.device_name() == "testdev" and isinstance(value.value(), DeviceValue)
    assert (value.shape(), value.data_type(), value.element_type()) == ([2, 3], "tensor(float)", TensorProto.FLOAT)
    assert value.tensor_size_in_bytes() == x.nbytes
    assert transfer.to_host_count == downloads  # the metadata needed no copy
    host = value.numpy()
    np.testing.assert_array_equal(host, x)
    assert transfer.to_host_count == downloads + 1 and not np.shares_memory(host, x)
    value.update_inplace(x * 2)  # through the transfer's copy_into, into the same device buffer
    np.testing.assert_array_equal(value.value().data, x * 2)
    allocations = transfer.allocator.total
    empty = ort.OrtValue.ortvalue_from_shape_and_type([4, 1], np.int64, "testdev", 0)
    assert transfer.allocator.total == allocations + 1 and empty.value().data.shape == (4, 1)
    assert empty.shape() == [4, 1] and empty.data_type() == "tensor(int64)"


def test_device_output_of_a_binding_and_bound_device_buffer() -> None:
    session = ort.InferenceSession(_model(), providers=["binding_test"])
    theirs = onnxruntime.InferenceSession(_model().SerializeToString(), providers=["CPUExecutionProvider"])
    x, b = _inputs()
    target = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "testdev", 0)
    binding = session.io_binding()
    binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x, "testdev", 0))
    binding.bind_ortvalue_input("b", ort.OrtValue.ortvalue_from_numpy(b, "testdev", 0))
    binding.bind_ortvalue_output("y", target)
    binding.bind_output("z", "testdev", 0)
    session.run_with_iobinding(binding)
    y, z = binding.get_outputs()
    expected = theirs.run(None, {"x": x, "b": b})
    assert y.value() is target.value()  # written into the bound buffer
    assert y.device_name() == z.device_name() == "testdev" and isinstance(z.value(), DeviceValue)
    for value, ref in zip((y, z), expected):
        np.testing.assert_array_equal(value.numpy(), ref)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], np.maximum(x + b, 0))


def test_run_with_ort_values_feeds_device_values_without_a_host_copy() -> None:
    session = ort.InferenceSession(_model(), providers=["binding_test"])
    transfer = session.engine.providers[0].data_transfer
    x, b = _inputs()
    feeds = {"x": ort.OrtValue.ortvalue_from_numpy(x, "testdev", 0), "b": ort.OrtValue.ortvalue_from_numpy(b, "testdev")}
    y, z = session.run_with_ort_values(None, feeds)
    assert transfer.to_device_count == 0  # x and b were fed on the device, not uploaded again
    assert y.device_name() == z.device_name() == "cpu"
    np.testing.assert_array_equal(y.numpy(), np.maximum(x + b, 0))
    np.testing.assert_array_equal(z.numpy(), x)


def test_device_values_without_pointer_or_dlpack_refuse_by_name() -> None:
    value = ort.OrtValue.ortvalue_from_numpy(_inputs()[1], "testdev", 0)
    with pytest.raises(OrtValueError, match="DeviceValue on testdev:0 exposes no device pointer"):
        value.data_ptr()
    with pytest.raises(OrtValueError, match="DeviceValue.*DLPack"):
        np.from_dlpack(value)
    assert not hasattr(value, "__cuda_array_interface__")


# --- bad input: typed errors naming the culprit --------------------------------------------------------

def test_unknown_device_is_named() -> None:
    x = _inputs()[0]
    with pytest.raises(OrtValueError, match="'nodev:3'"):
        ort.OrtValue.ortvalue_from_numpy(x, "nodev", 3)
    with pytest.raises(OrtValueError, match="'testdev:1'"):  # the test provider has only device 0
        ort.OrtValue.ortvalue_from_shape_and_type([2], np.float32, "testdev", 1)


@pytest.mark.parametrize("data, culprit", [
    (np.zeros((3, 2), np.float32), r"float32\[2, 3\].*float32\[3, 2\]"),
    (np.zeros((2, 3), np.float64), r"float32\[2, 3\].*float64\[2, 3\]"),
    ([1.0, 2.0], "not list"),
])
def test_update_inplace_refuses_other_shapes_and_types(data: Any, culprit: str) -> None:
    for device in ("cpu", "testdev"):
        value = ort.OrtValue.ortvalue_from_numpy(_inputs()[0], device)
        with pytest.raises(OrtValueError, match=culprit):
            value.update_inplace(data)


@pytest.mark.parametrize("call, culprit", [
    (lambda: ort.OrtValue.ortvalue_from_numpy([1.0]), "numpy array, not list"),
    (lambda: ort.OrtValue.ortvalue_from_shape_and_type([2, -1], np.float32), r"\[2, -1\]"),
    (lambda: ort.OrtValue.ortvalue_from_shape_and_type([2], "no_such_type"), "'no_such_type'"),
    (lambda: ort.OrtValue.ortvalue_from_shape_and_type([2], np.str_), "string"),
    (lambda: ort.OrtValue.from_dlpack(object()), "object"),
])
def test_bad_arguments_raise_typed_errors(call: Callable[[], Any], culprit: str) -> None:
    with pytest.raises(OrtValueError, match=culprit):
        call()


def _value() -> ort.OrtValue:
    return ort.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32))


@pytest.mark.parametrize("call, method", [
    (lambda: _value().as_sparse_tensor(), "as_sparse_tensor"),
    (lambda: ort.OrtValue.ort_value_from_sparse_tensor(None), "ort_value_from_sparse_tensor"),
    (lambda: ort.OrtValue.ortvalue_from_numpy(np.zeros(2), "cpu", 0, 0x10DE), "vendor_id"),
    (lambda: ort.OrtValue.ortvalue_from_shape_and_type([2], np.float32, memory_info=object()), "memory_info"),
    (lambda: _sessions()[0].run_with_ortvaluevector(None, [], [], [], [], []), "run_with_ortvaluevector"),
    (lambda: _sessions()[0].get_tuning_results(), "get_tuning_results"),
    (lambda: _sessions()[0].enable_fallback(), "enable_fallback"),
    (lambda: _sessions()[0].get_input_memory_infos(), "get_input_memory_infos"),
])
def test_unsupported_methods_are_refused_by_name(call: Callable[[], Any], method: str) -> None:
    with pytest.raises(UnsupportedOptionError, match=method):
        call()


def test_bad_ortvalue_bindings_and_feeds_name_the_culprit() -> None:
    session = ort.InferenceSession(_model(), providers=["numpy"])
    x, b = _inputs()
    binding = session.io_binding()
    with pytest.raises(UnknownInputError, match="'q'"):
        binding.bind_ortvalue_input("q", _value())
    with pytest.raises(InvalidOutputError, match="'q'"):
        binding.bind_ortvalue_output("q", _value())
    with pytest.raises(BindingError, match="'x'.*ndarray"):
        binding.bind_ortvalue_input("x", x)
    with pytest.raises(BindingError, match="'x'.*testdev:0"):  # no provider of this session runs there
        binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x, "testdev"))
    binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x))
    binding.bind_cpu_input("b", b)
    binding.bind_ortvalue_output("y", ort.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32))
    with pytest.raises(BindingError, match=r"'y'.*float32\[2, 3\].*float32\[3, 2\]"):
        binding.run()
    with pytest.raises(OnnxplugError, match="'x'.*ndarray"):
        session.run_with_ort_values(None, {"x": x, "b": ort.OrtValue.ortvalue_from_numpy(b)})
    with pytest.raises(MissingInputError, match="'b'"):
        session.run_with_ort_values(None, {"x": ort.OrtValue.ortvalue_from_numpy(x)})
    with pytest.raises(InvalidOutputError, match="'nope'"):
        session.run_with_ort_values(["nope"], {"x": _value()})


# --- the whole surface -------------------------------------------------------------------------------

@pytest.mark.parametrize("ours, theirs", [(ort.OrtValue, onnxruntime.OrtValue), (ort.IOBinding, onnxruntime.IOBinding)],
                         ids=["OrtValue", "IOBinding"])
def test_every_public_onnxruntime_method_exists(ours: type, theirs: type) -> None:
    missing = [name for name in dir(theirs) if not name.startswith("_") and not hasattr(ours, name)]
    assert missing == []


def test_every_public_session_method_exists() -> None:
    session = _sessions()[0]
    names = [n for n in dir(onnxruntime.InferenceSession) if not n.startswith("_")]
    assert [n for n in names if not hasattr(session, n)] == []
