"""onnxruntime's options and provider arguments: what onnxruntime takes, onnxplug takes (tuning-only
options accepted and logged, with the results onnxruntime gives), and what would change results is
refused by name. Each case runs on onnxruntime and onnxplug in the same test."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_inference_collection import check_and_normalize_provider_args

import onnxplug as ort
from onnxplug import errors, option_rules
from onnxplug.option_rules import REFUSED, RULES, TUNING
from onnxplug.provider import ExecutionProvider
from onnxplug.provider_specs import ORT_PROVIDER_NAMES, provider_options_for
from tests.conftest import make_model

DOC = Path(__file__).resolve().parents[1] / "docs" / "onnxruntime-options.md"
X = np.array([[-1.5, 0.5, 2.0, -3.0]], np.float32)


def _model():
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], [1, -1, 2, -2])
    return make_model([helper.make_node("Add", ["x", "b"], ["s"], name="add"),
                       helper.make_node("Relu", ["s"], ["y"], name="relu")],
                      [("x", TensorProto.FLOAT, ["N", 4])], [("y", TensorProto.FLOAT, ["N", 4])], [b])


def _both(configure, providers=("CPUExecutionProvider",), run_configure=None):
    """The outputs of onnxruntime and onnxplug, each with options set by ``configure(options)``."""
    results = []
    for rt in (onnxruntime, ort):
        so = rt.SessionOptions()
        configure(so)
        ro = rt.RunOptions()
        if run_configure is not None:
            run_configure(ro)
        model = _model()
        sess = rt.InferenceSession(model.SerializeToString() if rt is onnxruntime else model, so,
                                   providers=list(providers))
        results.append(sess.run(None, {"x": X}, ro)[0])
    np.testing.assert_array_equal(results[1], results[0])


# --- SessionOptions and RunOptions attributes -------------------------------------------------------

def _attributes(obj) -> list[str]:
    return [n for n in dir(obj) if not n.startswith("_") and not callable(getattr(obj, n))]


@pytest.mark.parametrize("scope,make", [("SessionOptions", onnxruntime.SessionOptions),
                                        ("RunOptions", onnxruntime.RunOptions)])
def test_every_onnxruntime_attribute_has_a_rule_and_onnxruntime_default(scope, make):
    theirs, ours = make(), getattr(ort, scope)()
    for name in _attributes(theirs):
        assert (scope, name) in RULES, f"{scope}.{name} is not in option_rules"
        if name == "profile_file_prefix":
            continue  # onnxplug names its profiles after itself
        mine, ref = getattr(ours, name), getattr(theirs, name)
        if not isinstance(ref, (bool, int, str)):
            mine, ref = int(mine), int(ref)  # onnxruntime's enums are pybind11 enums
        assert mine == ref, name


TUNING_VALUES = {"enable_mem_pattern": False, "enable_mem_reuse": False, "execution_mode": 1, "execution_order": 1,
                 "inter_op_num_threads": 4, "use_deterministic_compute": True, "use_per_session_threads": True}


@pytest.mark.parametrize("name", sorted(TUNING_VALUES))
def test_tuning_session_attribute_is_accepted_logged_and_gives_onnxruntime_results(name, caplog):
    assert RULES["SessionOptions", name].status == TUNING
    value = TUNING_VALUES[name]

    def configure(so):
        enum = {"execution_mode": "ExecutionMode", "execution_order": "ExecutionOrder"}.get(name)
        module = onnxruntime if isinstance(so, onnxruntime.SessionOptions) else ort
        setattr(so, name, getattr(module, enum)(value) if enum else value)

    with caplog.at_level(logging.DEBUG, logger="onnxplug.options"):
        _both(configure)
    assert any(name in r.getMessage() and "no effect" in r.getMessage() for r in caplog.records)


def test_only_execute_path_to_fetches_gives_onnxruntime_results():
    _both(lambda so: None, run_configure=lambda ro: setattr(ro, "only_execute_path_to_fetches", True))


def test_terminate_set_before_the_run_stops_it():
    ro = ort.RunOptions()
    ro.terminate = True
    sess = ort.InferenceSession(_model().SerializeToString(), providers=["numpy"])
    with pytest.raises(errors.RunTerminatedError, match="terminate"):
        sess.run(None, {"x": X}, ro)
    ro.terminate = False
    assert sess.run(None, {"x": X}, ro)[0].shape == X.shape


def test_unknown_attribute_is_refused():
    with pytest.raises(errors.UnsupportedOptionError, match="enable_warp_drive"):
        ort.SessionOptions().enable_warp_drive = True


# --- config entries ---------------------------------------------------------------------------------

CONFIG_VALUES = {"session.intra_op_thread_affinities": "1", "session.dynamic_block_base": "4",
                 "session.graph_optimizations_loop_level": "2", "optimization.minimal_build_optimizations": "apply",
                 "optimization.disable_specified_optimizers": "ConstantFolding",
                 "memory.enable_memory_arena_shrinkage": "cpu:0"}


@pytest.mark.parametrize("key", option_rules.names("session config", TUNING))
def test_tuning_session_config_entry_gives_onnxruntime_results(key):
    def configure(so):
        if key == "session.intra_op_thread_affinities":
            so.intra_op_num_threads = 2  # onnxruntime wants one affinity per extra thread
        so.add_session_config_entry(key, CONFIG_VALUES.get(key, "1"))

    _both(configure)


@pytest.mark.parametrize("key", option_rules.names("run config", TUNING))
def test_tuning_run_config_entry_gives_onnxruntime_results(key):
    _both(lambda so: None, run_configure=lambda ro: ro.add_run_config_entry(key, CONFIG_VALUES.get(key, "1")))


REFUSED_CONFIG = [r for r in RULES.values() if r.status == REFUSED and r.scope == "session config"]


@pytest.mark.parametrize("rule", REFUSED_CONFIG, ids=[r.name for r in REFUSED_CONFIG])
def test_config_entry_that_changes_results_is_refused_by_name(rule):
    so = ort.SessionOptions()
    with pytest.raises(errors.UnsupportedOptionError, match=rule.name.replace(".", r"\.")) as info:
        so.add_session_config_entry(rule.name, "not the behaviour here")
    assert "not implemented" in str(info.value)
    for value in rule.accepted:  # our own behaviour: accepted, with onnxruntime's results
        _both(lambda so, value=value: so.add_session_config_entry(rule.name, value))


def test_denormal_as_zero_is_refused_not_ignored():
    so = ort.SessionOptions()
    with pytest.raises(errors.UnsupportedOptionError, match="set_denormal_as_zero.*changes results"):
        so.add_session_config_entry("session.set_denormal_as_zero", "1")
    so.add_session_config_entry("session.set_denormal_as_zero", "0")
    assert so.get_session_config_entry("session.set_denormal_as_zero") == "0"


def test_unknown_config_keys_are_refused():
    with pytest.raises(errors.UnsupportedOptionError, match="session.no_such_key"):
        ort.SessionOptions().add_session_config_entry("session.no_such_key", "1")
    with pytest.raises(errors.UnsupportedOptionError, match="run.no_such_key"):
        ort.RunOptions().add_run_config_entry("run.no_such_key", "1")


def test_config_entries_read_back():
    so, ro = ort.SessionOptions(), ort.RunOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"


def test_documentation_table_is_the_option_table():
    text = DOC.read_text(encoding="utf-8")
    # regenerate: python -c "from onnxplug.option_rules import markdown_table; print(markdown_table())"
    assert option_rules.markdown_table() in text


# --- providers and provider options ---------------------------------------------------------------

PROVIDER_ARGUMENTS = [
    # (id, providers, provider_options)
    ("names", ["CPUExecutionProvider"], None),
    ("tuple-with-options", [("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})], None),
    ("provider-options", ["CPUExecutionProvider"], [{"use_arena": "1"}]),
    ("length-mismatch", ["CPUExecutionProvider"], [{}, {}]),
    ("tuples-and-provider-options", [("CPUExecutionProvider", {})], [{}]),
    ("options-not-dicts", ["CPUExecutionProvider"], [[("use_arena", "1")]]),
    ("options-not-a-sequence", ["CPUExecutionProvider"], {"use_arena": "1"}),
    ("one-element-tuple", [("CPUExecutionProvider",)], None),
    ("three-element-tuple", [("CPUExecutionProvider", {}, 1)], None),
    ("list-pair", [["CPUExecutionProvider", {}]], None),
]


@pytest.mark.parametrize("providers,provider_options", [c[1:] for c in PROVIDER_ARGUMENTS],
                         ids=[c[0] for c in PROVIDER_ARGUMENTS])
def test_provider_arguments_checked_as_onnxruntime_checks_them(providers, provider_options):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_and_normalize_provider_args(providers, provider_options, onnxruntime.get_available_providers())
    except ValueError as e:
        # onnxruntime then prints "EP Error" and falls back to its CPU provider; onnxplug raises
        with pytest.raises(errors.OptionValueError) as info:
            ort.InferenceSession(_model(), providers=providers, provider_options=provider_options)
        assert str(e).split(".")[0].split(",")[0] in str(info.value)
        return
    oracle = onnxruntime.InferenceSession(_model().SerializeToString(), providers=providers,
                                         provider_options=provider_options)
    sess = ort.InferenceSession(_model(), providers=providers, provider_options=provider_options)
    np.testing.assert_array_equal(sess.run(None, {"x": X})[0], oracle.run(None, {"x": X})[0])


@pytest.mark.parametrize("name", ["TensorrtExecutionProvider", "CoreMLExecutionProvider", "OpenVINOExecutionProvider",
                                  "DmlExecutionProvider"])
def test_onnxruntime_provider_not_here_is_skipped_with_a_warning_naming_it(name):
    with pytest.warns(UserWarning, match=name):
        oracle = onnxruntime.InferenceSession(_model().SerializeToString(), providers=[name, "CPUExecutionProvider"])
    with pytest.warns(RuntimeWarning, match=name):
        sess = ort.InferenceSession(_model(), providers=[name, "CPUExecutionProvider"])
    assert sess.get_providers() == ["numpy"] and oracle.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(sess.run(None, {"x": X})[0], oracle.run(None, {"x": X})[0])


def test_cuda_provider_without_cupy_is_skipped_with_a_warning():
    from onnxplug.plugins import get_catalog

    if "cupy" in get_catalog().providers and get_catalog().providers["cupy"].availability():
        pytest.skip("the cupy provider runs here")
    with pytest.warns(Warning, match="CUDAExecutionProvider"):
        onnxruntime.InferenceSession(_model().SerializeToString(), providers=["CUDAExecutionProvider",
                                                                             "CPUExecutionProvider"])
    with pytest.warns(RuntimeWarning, match="CUDAExecutionProvider|cupy"):
        sess = ort.InferenceSession(_model(), providers=[("CUDAExecutionProvider", {"device_id": "0"}),
                                                         "CPUExecutionProvider"])
    assert sess.get_providers() == ["numpy"]


def test_duplicate_provider_is_ignored_with_a_warning():
    with pytest.warns(UserWarning, match="Duplicate"):
        onnxruntime.InferenceSession(_model().SerializeToString(),
                                     providers=["CPUExecutionProvider", "CPUExecutionProvider"])
    with pytest.warns(RuntimeWarning, match="listed twice"):
        sess = ort.InferenceSession(_model(), providers=["CPUExecutionProvider", "numpy"])
    assert sess.get_providers() == ["numpy"]


def test_unknown_name_is_still_an_error():
    with pytest.raises(errors.UnknownProviderError, match="warp-drive"):
        ort.InferenceSession(_model(), providers=["warp-drive"])


def test_every_onnxruntime_provider_name_is_known():
    assert set(onnxruntime.get_all_providers()) <= ORT_PROVIDER_NAMES


@pytest.mark.parametrize("key,value", [(r.name, "1") for r in RULES.values()
                                       if r.scope == "CPUExecutionProvider" and r.status == TUNING])
def test_cpu_provider_tuning_options_give_onnxruntime_results(key, value, caplog):
    providers = [("CPUExecutionProvider", {key: value})]
    oracle = onnxruntime.InferenceSession(_model().SerializeToString(), providers=providers)
    with caplog.at_level(logging.DEBUG, logger="onnxplug.options"):
        sess = ort.InferenceSession(_model(), providers=providers)
    assert any(key in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(sess.run(None, {"x": X})[0], oracle.run(None, {"x": X})[0])
    assert sess.get_provider_options() == {"numpy": oracle.get_provider_options()["CPUExecutionProvider"]}


def test_provider_options_are_strings_as_onnxruntime_gives_them():
    oracle = onnxruntime.InferenceSession(_model().SerializeToString(), providers=["CPUExecutionProvider"])
    sess = ort.InferenceSession(_model(), providers=["CPUExecutionProvider"])
    assert sess.get_provider_options() == {"numpy": oracle.get_provider_options()["CPUExecutionProvider"]}
    from onnxplug.plugins import get_catalog

    if "opencl" not in get_catalog().providers or not get_catalog().providers["opencl"].availability():
        return
    # a device id, onnxruntime's option name, selects the device of a provider whose option is 'device'
    sess = ort.InferenceSession(_model(), providers=[("opencl", {"device_id": 0})])
    options = sess.get_provider_options()["opencl"]
    assert options["device"] == "0" and all(isinstance(v, str) for v in options.values())


class _CudaLike(ExecutionProvider):
    name = "cuda_like"
    aliases = ("CUDAExecutionProvider",)
    default_options = {"device_id": 0, "gpu_mem_limit": 0}


def test_cuda_options_go_to_the_provider_or_are_tuning_or_refused():
    given = {"device_id": "1", "gpu_mem_limit": "1024", "cudnn_conv_algo_search": "EXHAUSTIVE",
             "arena_extend_strategy": "kSameAsRequested", "do_copy_in_default_stream": "1"}
    assert provider_options_for(_CudaLike, given) == {"device_id": "1", "gpu_mem_limit": "1024"}
    with pytest.raises(errors.UnsupportedOptionError, match="user_compute_stream"):
        provider_options_for(_CudaLike, {"user_compute_stream": "140000"})
    with pytest.raises(errors.UnsupportedOptionError, match="colour"):
        _CudaLike(provider_options_for(_CudaLike, {"colour": "red"}))
