"""The unavailable path: CuPy's own reason, fallback with a warning, refusal without fallback.

The first tests ask the real CuPy (installed in the test environment). The probe's other message
paths (no device, bad device id, NVRTC missing) are driven by a fake ``cupy`` module, since this
machine cannot produce them; those tests check our messages, not CuPy.
"""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.errors import ProviderUnavailableError

from onnxplug_cupy.provider import CupyProvider
from onnxplug_cupy.runtime.probe import probe


def cupy_error_text() -> str | None:
    """What CuPy itself says when asked for its devices, or None when it has one."""
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed in this environment")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # the CUDARuntimeError this machine's driver raises
        return str(e)
    return None if count else "no CUDA device found"


def test_availability_carries_cupys_own_error() -> None:
    expected = cupy_error_text()
    availability = CupyProvider.availability()
    if expected is None:
        assert availability.available, availability.reason
        return
    assert not availability.available
    assert expected in availability.reason, (expected, availability.reason)
    assert availability.reason.startswith("CuPy ")


def test_devices_without_a_gpu_give_the_reason() -> None:
    if CupyProvider.availability():
        pytest.skip("a CUDA device is available here")
    assert CupyProvider.devices() == [f"none: {CupyProvider.availability().reason}"]


def _relu_model() -> bytes:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("name", ["cupy", "CUDAExecutionProvider"])
def test_session_falls_back_with_a_warning_naming_the_reason(name: str) -> None:
    availability = CupyProvider.availability()
    if availability:
        pytest.skip("a CUDA device is available here: no fallback happens")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = ort.InferenceSession(_relu_model(), providers=[name])
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert any("provider 'cupy' is not available" in m and availability.reason in m and "falling back" in m
               for m in messages), messages
    assert session.get_providers() == ["numpy"]
    x = np.array([-1.5, 0.0, 2.5], dtype=np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], np.maximum(x, 0))


def test_session_without_fallback_raises_with_the_reason() -> None:
    availability = CupyProvider.availability()
    if availability:
        pytest.skip("a CUDA device is available here")
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(ProviderUnavailableError) as info:
        ort.InferenceSession(_relu_model(), options, providers=["cupy"])
    assert availability.reason in str(info.value)


# --- the probe's other paths, with a fake cupy module --------------------------------------------------

def _fake_cupy(count: int | Exception, nvrtc_error: Exception | None = None) -> types.ModuleType:
    def device_count() -> int:
        if isinstance(count, Exception):
            raise count
        return count

    def nvrtc_version() -> tuple[int, int]:
        if nvrtc_error is not None:
            raise nvrtc_error
        return (12, 9)

    props = {"name": b"Fake GPU", "totalGlobalMem": 8 * 2**30, "major": 8, "minor": 6}
    runtime = types.SimpleNamespace(getDeviceCount=device_count, getDeviceProperties=lambda i: props,
                                    runtimeGetVersion=lambda: 12090)
    cuda = types.SimpleNamespace(runtime=runtime, nvrtc=types.SimpleNamespace(getVersion=nvrtc_version))
    module = types.ModuleType("cupy")
    module.__version__ = "0.0-fake"  # type: ignore[attr-defined]
    module.cuda = cuda  # type: ignore[attr-defined]
    return module


def test_probe_reports_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(0))
    assert probe() == probe()  # stable
    assert not probe().available and probe().reason == "CuPy 0.0-fake: no CUDA device found"


def test_probe_reports_a_device_id_that_does_not_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(2))
    result = probe(device_id=2)
    assert not result.available and "device_id 2 does not exist" in result.reason and "2 CUDA device(s)" in result.reason


def test_probe_reports_missing_nvrtc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(1, OSError("libnvrtc.so.12: cannot open shared object")))
    result = probe()
    assert not result.available
    assert "cannot load NVRTC" in result.reason and "libnvrtc.so.12" in result.reason


def test_probe_describes_devices_when_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(1))
    result = probe()
    assert result.available and result.reason == ""
    assert result.devices == ("cuda:0 Fake GPU (8.0 GiB, compute 8.6, CUDA runtime 12.9, CuPy 0.0-fake)",)


def test_probe_reports_a_broken_cupy_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    result = probe()
    assert not result.available and result.reason.startswith("CuPy is not installed")
