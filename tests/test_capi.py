"""onnxplug.capi: onnxruntime's status exceptions catch onnxplug's errors as onnxruntime's catch its
own on the same call, and the capi modules and version answer as clients use them."""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable

import numpy as np
import onnx
import onnxruntime
import onnxruntime.capi._pybind_state as ort_pybind
import onnxruntime.capi.onnxruntime_pybind11_state as ort_state
import pytest
from onnx import TensorProto, helper
from packaging.version import Version

import onnxplug
import onnxplug.capi._pybind_state as our_pybind
import onnxplug.capi.onnxruntime_inference_collection as our_collection
import onnxplug.capi.onnxruntime_pybind11_state as our_state
from onnxplug import errors
from onnxplug.capi import ONNXRUNTIME_API_VERSION

from .conftest import make_model


def _relu() -> bytes:
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, [2])],
                      [("y", TensorProto.FLOAT, [2])]).SerializeToString()


def _with(model: onnx.ModelProto, opset: int | None = None, ir: int | None = None) -> bytes:
    if opset is not None:
        del model.opset_import[:]
        model.opset_import.append(helper.make_opsetid("", opset))
    if ir is not None:
        model.ir_version = ir
    return model.SerializeToString()


def _relu_model() -> onnx.ModelProto:
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, [2])],
                      [("y", TensorProto.FLOAT, [2])])


def _unknown_op() -> bytes:
    return make_model([helper.make_node("FooOp", ["x"], ["y"])], [("x", TensorProto.FLOAT, [2])],
                      [("y", TensorProto.FLOAT, [2])]).SerializeToString()


def _undefined_value() -> bytes:
    return make_model([helper.make_node("Relu", ["q"], ["y"])], [("x", TensorProto.FLOAT, [2])],
                      [("y", TensorProto.FLOAT, [2])]).SerializeToString()


def _reshape() -> bytes:
    return make_model([helper.make_node("Reshape", ["x", "s"], ["y"])],
                      [("x", TensorProto.FLOAT, [2]), ("s", TensorProto.INT64, [1])],
                      [("y", TensorProto.FLOAT, None)]).SerializeToString()


def _run(model: bytes, feeds: dict[str, Any], outputs: Any = None) -> Callable[[Any], Any]:
    return lambda rt: rt.InferenceSession(model, providers=["CPUExecutionProvider"]).run(outputs, feeds)


F = np.zeros(2, np.float32)
CASES = {
    "missing file": lambda rt: rt.InferenceSession(os.path.join(os.sep, "nonexistent", "model.onnx")),
    "bad bytes": lambda rt: rt.InferenceSession(b"garbage"),
    "truncated": lambda rt: rt.InferenceSession(_relu()[:-5]),
    "unknown op": lambda rt: rt.InferenceSession(_unknown_op()),
    "undefined value": lambda rt: rt.InferenceSession(_undefined_value()),
    "opset too new": lambda rt: rt.InferenceSession(_with(_relu_model(), opset=99)),
    "ir too new": lambda rt: rt.InferenceSession(_with(_relu_model(), ir=99)),
    "wrong dtype": _run(_relu(), {"x": np.zeros(2, np.int64)}),
    "wrong shape": _run(_relu(), {"x": np.zeros(3, np.float32)}),
    "wrong rank": _run(_relu(), {"x": np.zeros((1, 2), np.float32)}),
    "unknown input": _run(_relu(), {"x": F, "z": F}),
    "unknown output": _run(_relu(), {"x": F}, ["q"]),
    "missing input": _run(_relu(), {}),
    "kernel failure": _run(_reshape(), {"x": F, "s": np.array([3], np.int64)}),
}


def _raised(call: Callable[[Any], Any], runtime: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        call(runtime)
    return info.value


@pytest.mark.parametrize("case", sorted(CASES))
def test_errors_are_the_status_class_onnxruntime_raises(case: str) -> None:
    expected = type(_raised(CASES[case], onnxruntime))
    ours = _raised(CASES[case], onnxplug)
    assert isinstance(ours, errors.OnnxplugError), f"{case}: {type(ours).__name__}: {ours}"
    if expected.__module__ == ort_state.__name__:
        assert isinstance(ours, getattr(our_state, expected.__name__)), \
            f"{case}: onnxruntime raises {expected.__name__}, onnxplug {type(ours).__mro__}"
    else:  # a builtin (onnxruntime raises ValueError for a missing input)
        assert isinstance(ours, expected)


def test_every_status_exception_of_onnxruntime_has_a_class_here() -> None:
    theirs = {n for n, c in vars(ort_state).items() if inspect.isclass(c) and issubclass(c, BaseException)}
    ours = {n for n, c in vars(our_state).items() if inspect.isclass(c) and issubclass(c, BaseException)}
    assert theirs <= ours
    for name in theirs:  # onnxruntime's derive from Exception only: no builtin handler catches them
        assert getattr(our_state, name).__mro__[1:] == (Exception, BaseException, object)


def test_our_errors_keep_their_own_root_and_builtin_bases() -> None:
    error = errors.InputTypeError("x")
    assert isinstance(error, (errors.OnnxplugError, ValueError, our_state.InvalidArgument))
    assert not isinstance(error, our_state.Fail)
    assert issubclass(errors.KernelError, (our_state.Fail, our_state.RuntimeException, RuntimeError))


# names clients take from onnxruntime.capi._pybind_state (and onnxruntime_pybind11_state)
CLIENT_NAMES = ["get_available_providers", "get_all_providers", "set_default_logger_severity",
                "set_default_logger_verbosity", "OrtValue", "SessionOptions", "RunOptions", "GraphOptimizationLevel",
                "ExecutionMode", "NodeArg", "ModelMetadata", "get_device", "get_version_string", "get_build_info",
                "get_ep_devices", "OrtEpDevice", "OrtHardwareDeviceType", "OrtExecutionProviderDevicePolicy",
                "set_seed", "enable_telemetry_events", "disable_telemetry_events", "get_default_session_options",
                "Fail", "InvalidArgument", "NoSuchFile", "InvalidGraph", "RuntimeException", "EPFail"]


@pytest.mark.parametrize("module_pair", [(ort_pybind, our_pybind), (ort_state, our_state)],
                         ids=["_pybind_state", "onnxruntime_pybind11_state"])
def test_capi_modules_have_the_names_clients_use(module_pair: tuple[Any, Any]) -> None:
    theirs, ours = module_pair
    for name in CLIENT_NAMES:
        assert hasattr(theirs, name), name  # the list is onnxruntime's
        assert hasattr(ours, name), name
    assert ours.get_available_providers() == onnxplug.get_available_providers()
    options = ours.get_default_session_options()
    assert isinstance(options, onnxplug.SessionOptions)
    assert options.graph_optimization_level == theirs.get_default_session_options().graph_optimization_level


def test_inference_collection_classes_are_onnxplugs() -> None:
    from onnxruntime.capi import onnxruntime_inference_collection as theirs

    for name in ("InferenceSession", "IOBinding", "OrtValue", "Session"):
        assert hasattr(theirs, name)
        assert getattr(our_collection, name) is getattr(onnxplug, "InferenceSession" if name == "Session" else name)
    session = our_collection.InferenceSession(_relu())
    assert isinstance(session, our_collection.Session)


def test_a_refused_capi_name_says_why_and_an_unknown_one_is_absent() -> None:
    with pytest.raises(errors.UnsupportedOptionError, match="sparse tensors"):
        our_state.SparseTensor.sparse_coo_from_numpy([2], np.zeros(1), np.zeros(1, np.int64), "cpu")
    assert not hasattr(our_state, "no_such_name_in_onnxruntime")


def test_version_passes_client_checks_and_says_onnxplug() -> None:
    version = our_state.get_version_string()
    assert ONNXRUNTIME_API_VERSION == onnxruntime.__version__ == ort_state.get_version_string()
    parsed = Version(version)
    assert parsed.release == Version(onnxruntime.__version__).release
    assert parsed.local == f"onnxplug.{onnxplug.__version__}"
    assert parsed >= Version("1.16") and parsed < Version("1.33")
    assert [int(p) for p in version.split(".")[:2]] == [int(p) for p in onnxruntime.__version__.split(".")[:2]]
    assert version.split("+")[0] == onnxruntime.__version__
    assert onnxplug.get_version_string() == onnxplug.__version__  # onnxplug's own API keeps its version
