"""onnxruntime's device API over the plugin catalog: get_ep_devices, add_provider_for_devices,
selection policies and delegates, graph assignment info and provider libraries, each compared with
what onnxruntime does on the same call where it can run here."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug
from onnxplug import errors, ort_status
from onnxplug.plugins import DEFAULT_PROVIDER

from .conftest import make_model

FAKE_GPU_PLUGIN = '''
"""A provider plugin whose one device is a GPU: numpy's kernels, named another way."""
from onnxplug.device import HardwareDevice
from onnxplug.hookspecs import hookimpl
from onnxplug.providers.numpy.provider import NumpyProvider


class FakeGpuProvider(NumpyProvider):
    """numpy's kernels under the name 'fakegpu', describing a GPU device."""

    name = "fakegpu"
    aliases = ()
    default_options = {"device_id": "0"}

    @classmethod
    def hardware_devices(cls):
        """One GPU, selected with the option device_id."""
        return [HardwareDevice("GPU", "Acme", 0x1234, 0, (("name", "fake"),), (("device_id", "0"),))]


@hookimpl
def onnxplug_register_providers(register):
    """Register the fake GPU provider."""
    register(FakeGpuProvider)
'''


def _model() -> bytes:
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="relu"), helper.make_node("Neg", ["h"], ["y"], name="neg")]
    return make_model(nodes, [("x", TensorProto.FLOAT, [2, 3])], [("y", TensorProto.FLOAT, [2, 3])]).SerializeToString()


@pytest.fixture
def fake_gpu(tmp_path: Path) -> Iterator[str]:
    """The fake GPU plugin registered as 'acme' for one test."""
    path = tmp_path / "acme_plugin.py"
    path.write_text(FAKE_GPU_PLUGIN)
    onnxplug.register_execution_provider_library("acme", str(path))
    try:
        yield "fakegpu"
    finally:
        onnxplug.unregister_execution_provider_library("acme")


def test_one_device_per_available_provider_in_their_order() -> None:
    devices = onnxplug.get_ep_devices()
    names = [d.ep_name for d in devices]
    assert list(dict.fromkeys(names)) == onnxplug.get_available_providers()
    assert names[-1] == DEFAULT_PROVIDER
    ours = devices[-1]
    assert ours.ep_vendor == "onnxplug" and ours.ep_metadata["version"] == onnxplug.__version__
    theirs = next(d for d in onnxruntime.get_ep_devices() if d.ep_name == "CPUExecutionProvider")
    # the same host CPU, as onnxruntime describes it
    assert ours.device.type.name == theirs.device.type.name == "CPU"
    assert (ours.device.vendor, ours.device.vendor_id) == (theirs.device.vendor, theirs.device.vendor_id)
    assert ours.ep_options == theirs.ep_options == {}
    assert isinstance(ours.device.metadata, dict) and isinstance(ours.ep_metadata, dict)


def test_enums_have_onnxruntimes_members_and_values() -> None:
    for ours, theirs in ((onnxplug.OrtHardwareDeviceType, onnxruntime.OrtHardwareDeviceType),
                         (onnxplug.OrtExecutionProviderDevicePolicy, onnxruntime.OrtExecutionProviderDevicePolicy),
                         (onnxplug.ExecutionOrder, onnxruntime.ExecutionOrder)):
        assert {m.name: int(m) for m in ours} == {k: int(v) for k, v in theirs.__members__.items()}


def test_add_provider_for_devices_selects_the_provider_as_onnxruntime() -> None:
    theirs = onnxruntime.SessionOptions()
    ours = onnxplug.SessionOptions()
    assert ours.has_providers() is theirs.has_providers() is False
    theirs.add_provider_for_devices([d for d in onnxruntime.get_ep_devices() if d.ep_name == "CPUExecutionProvider"],
                                    {})
    ours.add_provider_for_devices([d for d in onnxplug.get_ep_devices() if d.ep_name == DEFAULT_PROVIDER], {})
    assert ours.has_providers() is theirs.has_providers() is True
    assert onnxruntime.InferenceSession(_model(), theirs).get_providers() == ["CPUExecutionProvider"]
    assert onnxplug.InferenceSession(_model(), ours).get_providers() == [DEFAULT_PROVIDER]


def test_add_provider_for_devices_refuses_no_devices_as_onnxruntime() -> None:
    with pytest.raises(ort_status.InvalidArgument):
        onnxplug.SessionOptions().add_provider_for_devices([], {})
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument):
        onnxruntime.SessionOptions().add_provider_for_devices([], {})


def test_devices_of_two_providers_are_refused(fake_gpu: str) -> None:
    devices = [d for d in onnxplug.get_ep_devices() if d.ep_name in (fake_gpu, DEFAULT_PROVIDER)]
    with pytest.raises(errors.OptionValueError, match="several providers"):
        onnxplug.SessionOptions().add_provider_for_devices(devices, {})


def test_device_options_reach_the_provider(fake_gpu: str) -> None:
    options = onnxplug.SessionOptions()
    options.add_provider_for_devices([d for d in onnxplug.get_ep_devices() if d.ep_name == fake_gpu], {})
    session = onnxplug.InferenceSession(_model(), options)
    assert session.get_providers() == [fake_gpu, DEFAULT_PROVIDER]
    assert session.get_provider_options()[fake_gpu]["device_id"] == "0"
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    assert np.array_equal(session.run(None, {"x": x})[0], -np.maximum(x, 0))


def test_explicit_providers_win_with_a_warning_as_onnxruntime(fake_gpu: str) -> None:
    options = onnxplug.SessionOptions()
    options.add_provider_for_devices([d for d in onnxplug.get_ep_devices() if d.ep_name == fake_gpu], {})
    with pytest.warns(RuntimeWarning, match="already selects providers"):
        session = onnxplug.InferenceSession(_model(), options, providers=[DEFAULT_PROVIDER])
    assert session.get_providers() == [DEFAULT_PROVIDER]
    theirs = onnxruntime.SessionOptions()
    theirs.add_provider_for_devices(onnxruntime.get_ep_devices()[:1], {})
    with pytest.warns(UserWarning, match="already been configured with providers"):
        onnxruntime.InferenceSession(_model(), theirs, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("policy", ["PREFER_GPU", "MAX_PERFORMANCE"])
def test_gpu_policies_take_the_gpu_provider_then_the_default(fake_gpu: str, policy: str) -> None:
    options = onnxplug.SessionOptions()
    options.set_provider_selection_policy(onnxplug.OrtExecutionProviderDevicePolicy[policy])
    assert options.has_providers()
    assert onnxplug.InferenceSession(_model(), options).get_providers() == [fake_gpu, DEFAULT_PROVIDER]


@pytest.mark.parametrize("policy", ["DEFAULT", "PREFER_CPU", "PREFER_NPU", "MAX_EFFICIENCY", "MIN_OVERALL_POWER"])
def test_other_policies_never_take_the_gpu_provider(fake_gpu: str, policy: str) -> None:
    options = onnxplug.SessionOptions()
    options.set_provider_selection_policy(onnxplug.OrtExecutionProviderDevicePolicy[policy])
    providers = onnxplug.InferenceSession(_model(), options).get_providers()
    assert fake_gpu not in providers and providers[-1] == DEFAULT_PROVIDER
    if policy in ("DEFAULT", "PREFER_CPU"):  # the first provider with a CPU device
        first_cpu = next(d.ep_name for d in onnxplug.get_ep_devices() if d.device.type.name == "CPU")
        assert providers[0] == first_cpu
    else:  # no NPU here: the default provider alone
        assert providers == [DEFAULT_PROVIDER]


def test_policies_on_onnxruntime_give_a_session_too() -> None:
    for policy in onnxruntime.OrtExecutionProviderDevicePolicy.__members__.values():
        options = onnxruntime.SessionOptions()
        options.set_provider_selection_policy(policy)
        assert "CPUExecutionProvider" in onnxruntime.InferenceSession(_model(), options).get_providers()


def test_a_delegate_picks_devices(fake_gpu: str) -> None:
    seen = {}

    def pick(devices, model_metadata, runtime_metadata, max_selections):
        seen.update(names=[d.ep_name for d in devices], max=max_selections, meta=model_metadata)
        return [d for d in devices if d.ep_name == fake_gpu]

    options = onnxplug.SessionOptions()
    options.set_provider_selection_policy_delegate(pick)
    assert onnxplug.InferenceSession(_model(), options).get_providers() == [fake_gpu, DEFAULT_PROVIDER]
    assert fake_gpu in seen["names"] and seen["max"] == len(seen["names"]) and seen["meta"] == {}
    options.set_provider_selection_policy_delegate(lambda *args: [])
    with pytest.raises(errors.OptionValueError, match="delegate"):
        onnxplug.InferenceSession(_model(), options)


def test_a_bad_policy_is_refused() -> None:
    with pytest.raises(errors.OptionValueError, match="OrtExecutionProviderDevicePolicy"):
        onnxplug.SessionOptions().set_provider_selection_policy(42)


def _assignment(runtime, providers):
    options = runtime.SessionOptions()
    options.graph_optimization_level = runtime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = runtime.InferenceSession(_model(), options, providers=providers)
    return [(s.ep_name, [(n.name, n.op_type, n.domain) for n in s.get_nodes()])
            for s in session.get_provider_graph_assignment_info()]


def test_graph_assignment_info_as_onnxruntime() -> None:
    theirs = _assignment(onnxruntime, ["CPUExecutionProvider"])
    ours = _assignment(onnxplug, [DEFAULT_PROVIDER])
    assert [(DEFAULT_PROVIDER if ep == "CPUExecutionProvider" else ep, nodes) for ep, nodes in theirs] == ours


def test_graph_assignment_info_needs_the_config_entry_as_onnxruntime() -> None:
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail):
        onnxruntime.InferenceSession(_model(), providers=["CPUExecutionProvider"]).get_provider_graph_assignment_info()
    with pytest.raises(errors.NotRecordedError, match="record_ep_graph_assignment_info") as info:
        onnxplug.InferenceSession(_model()).get_provider_graph_assignment_info()
    assert isinstance(info.value, ort_status.Fail)


def test_registered_plugin_joins_and_leaves_the_catalog(tmp_path: Path) -> None:
    path = tmp_path / "acme_plugin.py"
    path.write_text(FAKE_GPU_PLUGIN)
    onnxplug.register_execution_provider_library("acme", path)
    try:
        assert "fakegpu" in onnxplug.get_available_providers()
        device = next(d for d in onnxplug.get_ep_devices() if d.ep_name == "fakegpu")
        assert device.device.type == onnxplug.OrtHardwareDeviceType.GPU
        assert (device.device.vendor, device.device.vendor_id, device.device.metadata) == ("Acme", 0x1234,
                                                                                          {"name": "fake"})
        assert device.ep_options == {"device_id": "0"}
        with pytest.raises(errors.ProviderLibraryError, match="already registered"):
            onnxplug.register_execution_provider_library("acme", path)
        with pytest.raises(errors.ProviderLibraryError, match="already taken"):  # the same provider name
            onnxplug.register_execution_provider_library("acme2", path)
        onnxplug.register_execution_provider_library("acme2_fixed", _renamed(path, tmp_path))
        onnxplug.unregister_execution_provider_library("acme2_fixed")
    finally:
        onnxplug.unregister_execution_provider_library("acme")
    assert "fakegpu" not in onnxplug.get_available_providers()
    with pytest.raises(errors.UnknownProviderError):
        onnxplug.InferenceSession(_model(), providers=["fakegpu"])


def _renamed(path: Path, folder: Path) -> Path:
    """The plugin at ``path`` with its provider named 'fakegpu2'."""
    renamed = folder / "acme_renamed.py"
    renamed.write_text(path.read_text().replace('name = "fakegpu"', 'name = "fakegpu2"'))
    return renamed


def test_a_package_directory_registers_too(tmp_path: Path) -> None:
    package = tmp_path / "acme_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(FAKE_GPU_PLUGIN)
    onnxplug.register_execution_provider_library("acme_pkg", package)
    try:
        assert "fakegpu" in onnxplug.get_available_providers()
    finally:
        onnxplug.unregister_execution_provider_library("acme_pkg")


@pytest.mark.parametrize("make", ["native", "missing", "no hook"])
def test_libraries_that_cannot_load_are_refused_as_onnxruntime_fails(tmp_path: Path, make: str) -> None:
    path = tmp_path / {"native": "libacme_ep.so", "missing": "absent.py", "no hook": "plain.py"}[make]
    if make == "native":
        path.write_bytes(b"\x7fELF")
    elif make == "no hook":
        path.write_text("x = 1\n")
    with pytest.raises(errors.ProviderLibraryError) as info:
        onnxplug.register_execution_provider_library("acme", path)
    assert isinstance(info.value, ort_status.Fail)
    assert "fakegpu" not in onnxplug.get_available_providers()
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail):
        onnxruntime.register_execution_provider_library("acme", str(path))


def test_unregistering_an_unknown_name_fails_as_onnxruntime() -> None:
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail):
        onnxruntime.unregister_execution_provider_library("never_registered")
    with pytest.raises(errors.ProviderLibraryError, match="not registered") as info:
        onnxplug.unregister_execution_provider_library("never_registered")
    assert isinstance(info.value, ort_status.Fail)


def test_device_memory_and_streams_are_refused_by_name() -> None:
    device = onnxplug.get_ep_devices()[0]
    for method in ("memory_info", "create_sync_stream"):
        with pytest.raises(errors.UnsupportedOptionError, match=f"OrtEpDevice.{method}"):
            getattr(device, method)()


def test_set_global_thread_pool_sizes_is_accepted_and_checked() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        onnxplug.set_global_thread_pool_sizes(2, 1)
    with pytest.raises(errors.OptionValueError, match="intra_op_num_threads"):
        onnxplug.set_global_thread_pool_sizes(-1, 0)


@pytest.mark.parametrize("index", range(len(onnxplug.get_ep_devices())))
def test_each_listed_device_runs_a_model_as_onnxruntime(index: int) -> None:
    device = onnxplug.get_ep_devices()[index]
    assert device.device.type in tuple(onnxplug.OrtHardwareDeviceType)
    options = onnxplug.SessionOptions()
    options.add_provider_for_devices([device], {})
    session = onnxplug.InferenceSession(_model(), options)
    assert session.get_providers()[0] == device.ep_name
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    expected = onnxruntime.InferenceSession(_model(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], expected[0])
