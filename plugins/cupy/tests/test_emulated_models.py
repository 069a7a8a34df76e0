"""Host emulation (NOT a GPU test): the project's model suite through the provider's kernels with
numpy standing in for CuPy, against onnxruntime; and where values live between nodes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import onnxplug as ort
from onnxplug.device import Device
from onnxplug.executor import OnDevice
from onnxplug.testing.model_suite import build, sample_inputs

from cupy_test_support import assert_close, onnxruntime_outputs

pytestmark = pytest.mark.emulation

#: Models whose every node the provider claims (If/Loop bodies run on the default provider).
FULLY_CLAIMED = ["resnet18", "mobilenetv2", "transformer_encoder", "bilstm", "gru"]


@pytest.mark.parametrize("name", FULLY_CLAIMED)
def test_model_suite_matches_onnxruntime(name: str, emulated: str) -> None:
    model = build(name)
    feeds = sample_inputs(name, batch=2)
    session = ort.InferenceSession(model, providers=[emulated])  # default optimization level
    assigned = Counter(a.provider for a in session.get_node_assignments())
    assert set(assigned) == {emulated}, assigned
    assert_close(session.run(None, {k: v.copy() for k, v in feeds.items()}), onnxruntime_outputs(model, feeds),
                 rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["if_model", "loop_model"])
def test_control_flow_models_mix_with_the_default_provider(name: str, emulated: str) -> None:
    model = build(name)
    feeds = sample_inputs(name, batch=2)
    session = ort.InferenceSession(model, providers=[emulated])
    providers = {a.provider for a in session.get_node_assignments()}
    assert providers == {emulated, "numpy"}
    assert_close(session.run(None, feeds), onnxruntime_outputs(model, feeds), rtol=1e-3, atol=1e-4)


def test_values_stay_on_the_device_between_nodes(emulated: str) -> None:
    # resnet18 runs entirely on the provider: one upload (the input) and one download (the output)
    # per run; weights were uploaded once at session creation
    session = ort.InferenceSession(build("resnet18"), providers=[emulated])
    copies = [s.name for s in session.engine.plan.steps if s.kind == "copy"]
    assert len(copies) == 2, copies
    assert copies[0].endswith("cpu->cuda:0") and copies[1].endswith("cuda:0->cpu")
    assert any(isinstance(name, OnDevice) and name.device == Device("cuda", 0) for name in session.engine.plan.constants)
    transfer = session.engine.providers[0].data_transfer
    calls = Counter()
    original_to_host, original_to_device = transfer.to_host, transfer.to_device
    transfer.to_host = lambda v: (calls.update(["to_host"]), original_to_host(v))[1]
    transfer.to_device = lambda a: (calls.update(["to_device"]), original_to_device(a))[1]
    out = session.run(None, sample_inputs("resnet18", batch=1))[0]
    assert isinstance(out, np.ndarray)
    assert calls == Counter({"to_host": 1, "to_device": 1})


def test_fused_chains_are_compiled_at_session_creation(emulated: str) -> None:
    session = ort.InferenceSession(build("transformer_encoder"), providers=[emulated])
    fused = [s for s in session.engine.plan.steps if s.kind == "fused"]
    assert fused, "the encoder's elementwise chains should be claimed as fused subgraphs"
    backend = session.engine.providers[0].backend
    launches = backend.launches
    for step in fused:
        assert step.kernel.runner._kernels, f"{step.name} was not compiled when the session was created"
    session.run(None, sample_inputs("transformer_encoder", batch=1))
    assert backend.launches > launches
