"""A real model partitioned across a second-device provider and the default, with copies in between."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import onnxplug as ort
from onnxplug.device import Device
from onnxplug.executor import OnDevice
from onnxplug.plugins import get_catalog
from onnxplug.testing.model_suite import build, sample_inputs
from tests.mixing_provider import DeviceValue, MixingProvider
from tests.oracle import assert_close, ort_outputs


@pytest.fixture(scope="module", autouse=True)
def registered():
    get_catalog().register(MixingProvider, "tests")
    yield
    get_catalog().providers.pop("mixing", None)


def test_add_relu_runs_on_test_device_with_copies(add_relu_model):
    sess = ort.InferenceSession(add_relu_model, providers=["mixing"])
    assert sess.get_providers() == ["mixing", "numpy"]
    assert [a.provider for a in sess.get_node_assignments()] == ["mixing", "mixing"]
    # Two host->device copies (x and b), one device->host copy for y; none between add and relu.
    copies = [s for s in sess.engine.plan.steps if s.kind == "copy"]
    assert len(copies) == 2  # b is an initializer: copied once at session creation, not per run
    assert OnDevice("b", Device("testdev", 0)) in sess.engine.plan.constants
    x = np.array([[-3, 0.5, -1, 4]], np.float32)
    y = sess.run(None, {"x": x})[0]
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, np.maximum(x + [1, -1, 2, -2], 0))


def test_resnet18_partitioned_across_devices_matches_onnxruntime():
    model = build("resnet18")
    feeds = sample_inputs("resnet18", batch=1)
    sess = ort.InferenceSession(model, providers=["mixing"])
    providers = {a.provider for a in sess.get_node_assignments()}
    assert providers == {"mixing", "numpy"}
    by_op = {(a.op_type, a.provider) for a in sess.get_node_assignments()}
    assert ("Relu", "mixing") in by_op and ("Add", "mixing") in by_op and ("Conv", "numpy") in by_op
    transfer = sess.engine.providers[0].data_transfer
    got = sess.run(None, feeds)
    assert transfer.to_device_count > 0 and transfer.to_host_count > 0
    assert_close(got, ort_outputs(model, feeds))


def test_claim_on_graph_output_is_copied_back(add_relu_model):
    sess = ort.InferenceSession(add_relu_model, providers=[("mixing", {"claim": "Relu"})])
    assert [a.provider for a in sess.get_node_assignments()] == ["numpy", "mixing"]
    out = sess.run(None, {"x": np.ones((2, 4), np.float32)})[0]
    assert not isinstance(out, DeviceValue)
    np.testing.assert_array_equal(out, np.maximum(np.ones((2, 4)) + [1, -1, 2, -2], 0))


def test_fallback_disabled_lists_every_unclaimed_node(add_relu_model):
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(ort.errors.FallbackDisabledError) as info:
        ort.InferenceSession(add_relu_model, so, providers=[("mixing", {"claim": "Relu"})])
    assert "'add'" in str(info.value) and "Add" in str(info.value) and "'relu'" not in str(info.value)


def test_unknown_provider_option_is_refused(add_relu_model):
    with pytest.raises(ort.errors.UnsupportedOptionError, match="colour"):
        ort.InferenceSession(add_relu_model, providers=[("mixing", {"colour": "red"})])
