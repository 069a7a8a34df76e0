"""Device discovery and selection: provider option, environment variable, errors, availability."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_helpers import helper, make_model

import onnxplug as ort
from onnxplug_opencl.errors import DeviceSelectionError
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DEVICE_ENV, discover, select_device


def _first():
    return discover()[0][0]


def test_devices_lists_every_device_with_capabilities():
    listed = OpenCLProvider.devices()
    assert len(listed) == len(discover()[0])
    first = _first()
    assert first.name in listed[0] and ("fp64" in listed[0]) == first.fp64


@pytest.mark.parametrize("selector", ["0:0", "0", "pthread", "PORTABLE"])
def test_selectors_pick_the_device(selector, monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    first = _first()
    if selector in ("pthread", "PORTABLE") and selector.lower() not in (first.name + first.platform_name).lower():
        pytest.skip("name selectors are written for PoCL")
    assert select_device(selector) == first


def test_unknown_selector_is_a_typed_error_naming_it(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    with pytest.raises(DeviceSelectionError, match="no-such-device-xyz"):
        select_device("no-such-device-xyz")
    with pytest.raises(DeviceSelectionError, match="7:3"):
        select_device("7:3")


def test_environment_variable_selects_and_option_wins(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "nothing-matches-this")
    with pytest.raises(DeviceSelectionError, match=DEVICE_ENV):
        select_device(None)
    assert not OpenCLProvider.availability()
    assert DEVICE_ENV in OpenCLProvider.availability().reason
    assert select_device("0:0") == _first()  # an explicit option is not overridden by the variable
    monkeypatch.setenv(DEVICE_ENV, "0:0")
    assert select_device(None) == _first() and OpenCLProvider.availability()


def test_session_device_option_and_bad_value(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    x = np.ones((2, 2), np.float32)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"])
    session = ort.InferenceSession(model, providers=[("opencl", {"device": "0:0"})])
    assert session.get_provider_options()["opencl"]["device"] == "0:0"
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], x)
    with pytest.raises(DeviceSelectionError):
        ort.InferenceSession(model, providers=[("opencl", {"device": "bogus-device"})])


def test_unknown_provider_option_is_refused():
    x = np.ones((2,), np.float32)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"])
    with pytest.raises(ort.errors.UnsupportedOptionError, match="platform"):
        ort.InferenceSession(model, providers=[("opencl", {"platform": 0})])


def test_unavailable_without_any_device(monkeypatch):
    """No OpenCL platform: availability is false and says why; sessions fall back to numpy."""
    import onnxplug_opencl.provider as provider_module

    monkeypatch.setattr(provider_module, "discover", lambda: ((), "no OpenCL platform found (test)"))
    status = OpenCLProvider.availability()
    assert not status and "no OpenCL platform found (test)" in status.reason
    assert OpenCLProvider.devices() == ["none: no OpenCL platform found (test)"]
    x = np.ones((2,), np.float32)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"])
    with pytest.warns(RuntimeWarning, match="not available"):
        session = ort.InferenceSession(model, providers=["opencl"])
    assert session.get_providers() == ["numpy"]


def test_the_device_in_use_builds_and_runs_the_test_kernel():
    from onnxplug_opencl.runtime.context import ClRuntime

    assert ClRuntime.for_entry(select_device(None)).compile_problem() is None


def test_unavailable_when_the_device_cannot_build_a_kernel(monkeypatch):
    """A device whose compiler fails (PoCL 3.0 on a CPU its LLVM does not know) makes the provider
    unavailable, with the build log as the reason; sessions fall back to numpy."""
    import onnxplug_opencl.provider as provider_module
    from onnxplug_opencl.errors import OpenCLBuildError
    from onnxplug_opencl.runtime.context import ClRuntime

    monkeypatch.delenv(DEVICE_ENV, raising=False)
    broken = ClRuntime(_first())  # a runtime of its own: the shared one keeps its answer

    def fail(name, source, kernel_name, options=()):
        raise OpenCLBuildError(name, broken.entry.name, "", "error: unknown target CPU 'generic'")

    monkeypatch.setattr(broken.programs, "kernel", fail)
    monkeypatch.setattr(provider_module.ClRuntime, "for_entry", classmethod(lambda cls, entry: broken))
    status = OpenCLProvider.availability()
    assert not status
    assert "cannot run kernels" in status.reason and "unknown target CPU 'generic'" in status.reason
    assert broken.entry.name in status.reason
    x = np.ones((2,), np.float32)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"])
    with pytest.warns(RuntimeWarning, match="not available"):
        session = ort.InferenceSession(model, providers=["opencl"])
    assert session.get_providers() == ["numpy"]
