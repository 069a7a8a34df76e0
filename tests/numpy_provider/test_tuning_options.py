"""The numpy provider's tuning options (``runtime.tuning.NumpyTuning``): declared in its
``default_options``, parsed from onnxruntime-style strings, refused with a typed error naming the
option, read by each session's kernels from their own provider, and the product thresholds kept
process-wide. Values are compared with onnxruntime's."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug
from onnxplug.errors import OptionValueError, UnsupportedOptionError
from onnxplug.ir import Node
from onnxplug.kernel import KernelContext
from onnxplug.providers.numpy import NumpyProvider
from onnxplug.providers.numpy.kernels.conv import dispatch
from onnxplug.providers.numpy.ops.ai_onnx.op_conv import Conv
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, PRODUCT_OPTIONS, NumpyTuning, tuning_of

RNG = np.random.default_rng(11)


def _conv_model(x_shape, w: np.ndarray) -> bytes:
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_default_options_declare_every_tuning_field_as_a_string():
    names = [f.name for f in dataclasses.fields(NumpyTuning)]
    assert list(NumpyProvider.default_options) == names
    assert all(isinstance(v, str) for v in NumpyProvider.default_options.values())
    assert NumpyTuning.from_options(NumpyProvider.default_options) == NumpyTuning()
    assert NumpyProvider.default_options["winograd"] == "0" and NumpyProvider.default_options["padded_rows"] == "1"


@pytest.mark.parametrize("value,expected", [("1", True), ("0", False), ("true", True), ("False", False),
                                            (True, True), (0, False)])
def test_flags_take_onnxruntime_strings_and_python_values(value, expected):
    assert NumpyProvider({"winograd": value}).tuning.winograd is expected


def test_counts_take_strings_and_integers():
    provider = NumpyProvider({"depthwise_channels_last_max_out": "16", "split_product_macs": 123_456})
    assert provider.tuning.depthwise_channels_last_max_out == 16
    assert provider.tuning.split_product_macs == 123_456


@pytest.mark.parametrize("name,value", [("winograd", "yes"), ("padded_rows", "2"), ("split_product_macs", "-1"),
                                        ("depthwise_channels_last_max_out", "many"), ("threaded_gemv_macs", "1.5")])
def test_bad_values_are_refused_naming_the_option(name, value):
    with pytest.raises(OptionValueError, match=repr(name)):
        onnxplug.InferenceSession(_conv_model([1, 4, 8, 8], np.ones((4, 4, 3, 3), np.float32)),
                                  providers=[("numpy", {name: value})])


def test_unknown_options_are_refused_by_name():
    with pytest.raises(UnsupportedOptionError, match="'winogard'"):
        NumpyProvider({"winogard": "1"})


def test_provider_options_list_what_the_session_set():
    model = _conv_model([1, 4, 8, 8], np.ones((4, 4, 3, 3), np.float32))
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert onnxplug.InferenceSession(model, providers=["numpy"]).get_provider_options() == {
        "numpy": oracle.get_provider_options()["CPUExecutionProvider"]}
    session = onnxplug.InferenceSession(model, providers=[("numpy", {"winograd": "1"})])
    assert session.get_provider_options() == {"numpy": {"winograd": "1"}}


def test_two_sessions_of_one_process_run_their_own_tuning(monkeypatch):
    """Winograd on in one session and off in the other, run in turns: each session's Conv takes
    its own provider's choice, and both match onnxruntime."""
    ran = []
    real = dispatch.winograd_conv
    monkeypatch.setattr(dispatch, "winograd_conv", lambda *a: ran.append("winograd") or real(*a))
    w = np.asarray(RNG.standard_normal((64, 64, 3, 3)), np.float32)
    model = _conv_model([2, 64, 28, 28], w)
    x = np.asarray(RNG.standard_normal((2, 64, 28, 28)), np.float32)
    expected = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    on = onnxplug.InferenceSession(model, providers=[("numpy", {"winograd": "1"})])
    off = onnxplug.InferenceSession(model, providers=["numpy"])
    for session, path in [(on, ["winograd"]), (off, []), (on, ["winograd"])]:
        ran.clear()
        got = session.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max()))
        assert ran == path


def test_kernels_read_their_providers_tuning_and_the_defaults_elsewhere():
    node = Node(op_type="Conv", inputs=["x", "w"], outputs=["y"], name="c")
    tuned = NumpyProvider({"padded_rows": "0"})
    assert Conv(node, KernelContext(provider=tuned)).tuning.padded_rows is False
    assert tuning_of(KernelContext(provider=object())) is DEFAULT_TUNING
    assert tuning_of(None) is DEFAULT_TUNING


def test_product_thresholds_are_set_by_a_provider_given_them_and_kept_by_others():
    """Like intra_op_num_threads, the product thresholds are process-wide: a provider created with
    one sets it, one created without (as constant folding's) keeps it."""
    NumpyProvider({"split_product_macs": "4321", "threaded_gemv_macs": "77"})
    assert (PRODUCT_THREADS.split_product_macs, PRODUCT_THREADS.threaded_gemv_macs) == (4321, 77)
    NumpyProvider()
    assert (PRODUCT_THREADS.split_product_macs, PRODUCT_THREADS.threaded_gemv_macs) == (4321, 77)
    assert PRODUCT_THREADS.threaded_product_macs == DEFAULT_TUNING.threaded_product_macs
    assert set(PRODUCT_OPTIONS) <= set(NumpyProvider.default_options)
