"""onnxruntime's log severities (onnxplug.logs) and the module functions onnxruntime scripts call at
start-up: set_default_logger_severity/verbosity, SessionOptions.log_severity_level, set_seed,
get_version_string, get_build_info and the telemetry switches."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug import logs, seeding
from onnxplug.errors import OptionValueError
from onnxplug.plugins import get_catalog
from onnxplug.provider import Availability, ExecutionProvider

F = TensorProto.FLOAT


class UnavailableProvider(ExecutionProvider):
    name = "log_test_unavailable"
    version = "test"

    @classmethod
    def availability(cls) -> Availability:
        return Availability(False, "no log-test device here")


@pytest.fixture(autouse=True)
def restored(monkeypatch):
    """Each test starts with no default severity set and no seed, and leaves them so."""
    monkeypatch.setitem(logs._default, "severity", None)
    monkeypatch.setitem(seeding._state, "seed", None)
    get_catalog().register(UnavailableProvider, "tests")
    yield
    get_catalog().providers.pop("log_test_unavailable", None)


def _relu() -> bytes:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _fallback_warnings(session_level: int) -> list[warnings.WarningMessage]:
    so = ort.SessionOptions()
    so.log_severity_level = session_level
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ort.InferenceSession(_relu(), so, providers=["log_test_unavailable", "numpy"])
    return [w for w in caught if "log_test_unavailable" in str(w.message)]


@pytest.mark.parametrize("default,session,warned", [
    (None, -1, True), (None, 3, False), (None, 1, True),         # nothing set: shown, as at severity 2
    (2, -1, True), (0, -1, True), (3, -1, False), (4, -1, False),  # the session follows the default
    (2, 3, False), (3, 2, True), (4, 1, True), (0, 4, False),      # unless it sets its own
])
def test_the_fallback_warning_follows_the_severity_in_force(default, session, warned):
    """A provider that is not available is a warning (severity 2): shown when the session's
    severity, or the default when the session leaves it at -1, is 2 or lower."""
    if default is not None:
        ort.set_default_logger_severity(default)
    caught = _fallback_warnings(session)
    assert bool(caught) == warned, [str(w.message) for w in caught]
    if warned:
        (w,) = caught
        assert w.category is RuntimeWarning and "no log-test device here" in str(w.message)
        assert w.filename == __file__  # points at the line that made the session


def test_session_options_default_to_the_default_severity_as_onnxruntime():
    assert ort.SessionOptions().log_severity_level == onnxruntime.SessionOptions().log_severity_level == -1
    assert ort.RunOptions().log_severity_level == onnxruntime.RunOptions().log_severity_level == -1


@pytest.mark.parametrize("value", [5, 7, -1])
def test_a_default_severity_outside_0_to_4_is_refused_as_by_onnxruntime(value):
    with pytest.raises(RuntimeError):
        onnxruntime.set_default_logger_severity(value)
    with pytest.raises(OptionValueError, match=rf"set_default_logger_severity .*not {value}"):
        ort.set_default_logger_severity(value)
    assert logs.explicit_severity() is None  # unchanged


@pytest.mark.parametrize("value", [5, -2, "3"])
def test_a_session_severity_outside_the_range_fails_session_creation_by_name(value):
    so = ort.SessionOptions()
    so.log_severity_level = value
    with pytest.raises(OptionValueError, match="SessionOptions.log_severity_level"):
        ort.InferenceSession(_relu(), so, providers=["numpy"])


@pytest.mark.parametrize("default,session,expected", [
    (None, -1, True),                                  # nothing set: Python's logging decides
    (None, 1, True), (None, 0, True), (None, 2, False), (None, 3, False),
    (2, -1, False), (1, -1, True), (3, 1, True), (0, 2, False),
])
def test_optimizer_messages_follow_the_severity_set(caplog, default, session, expected):
    """The optimizer's per-pass counts are info messages (severity 1): with Python's logging open,
    recorded unless a severity above 1 is in force (the session's, else the default's)."""
    if default is not None:
        ort.set_default_logger_severity(default)
    caplog.set_level(logging.DEBUG, logger="onnxplug.optimizer")
    so = ort.SessionOptions()
    so.log_severity_level = session
    ort.InferenceSession(_relu(), so, providers=["numpy"])
    passes = [r for r in caplog.records if r.name == "onnxplug.optimizer" and r.getMessage().startswith("pass ")]
    assert bool(passes) == expected


def test_the_default_verbosity_takes_what_onnxruntime_takes():
    for value in (0, 3):
        onnxruntime.set_default_logger_verbosity(value)
        ort.set_default_logger_verbosity(value)
    with pytest.raises(OptionValueError, match="set_default_logger_verbosity"):
        ort.set_default_logger_verbosity(-1)
    onnxruntime.set_default_logger_verbosity(0)


def _random_normal(seed: float | None = None) -> bytes:
    attrs = {"shape": [4, 3]} if seed is None else {"shape": [4, 3], "seed": seed}
    graph = helper.make_graph([helper.make_node("RandomNormal", [], ["y"], **attrs)], "g", [],
                              [helper.make_tensor_value_info("y", F, [4, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _draw(model: bytes) -> np.ndarray:
    return ort.InferenceSession(model, providers=["numpy"]).run(None, {})[0]


def test_set_seed_makes_unseeded_random_ops_reproducible():
    """After set_seed, a RandomNormal without a seed attribute draws the same values in every
    session; another seed draws others; a node's own seed attribute still wins."""
    assert not np.array_equal(_draw(_random_normal()), _draw(_random_normal()))  # the OS's entropy
    ort.set_seed(5)
    first = _draw(_random_normal())
    np.testing.assert_array_equal(first, _draw(_random_normal()))
    ort.set_seed(6)
    assert not np.array_equal(first, _draw(_random_normal()))
    own = _draw(_random_normal(seed=1.0))
    ort.set_seed(7)
    np.testing.assert_array_equal(own, _draw(_random_normal(seed=1.0)))


@pytest.mark.parametrize("value", [1.5, "3", None])
def test_set_seed_takes_integers_as_onnxruntime_does(value):
    with pytest.raises(TypeError):
        onnxruntime.set_seed(value)
    with pytest.raises(OptionValueError, match="set_seed takes a 64-bit integer"):
        ort.set_seed(value)
    assert seeding.default_seed() is None


def test_version_build_info_and_telemetry_switches():
    assert ort.get_version_string() == ort.__version__
    info = ort.get_build_info()
    assert ort.__version__ in info and np.__version__ in info
    assert ort.disable_telemetry_events() is None and ort.enable_telemetry_events() is None
    for name in ("set_default_logger_severity", "set_default_logger_verbosity", "set_seed", "get_version_string",
                 "get_build_info", "disable_telemetry_events", "enable_telemetry_events"):
        assert callable(getattr(onnxruntime, name)) and callable(getattr(ort, name))
