"""The API table accounts for every public name of the installed onnxruntime, and onnxplug does what
it says: a ``same`` or ``no-op`` name exists on onnxplug's object, a ``refused`` one raises
UnsupportedOptionError; docs/onnxruntime-api.md is the table as generated."""

from __future__ import annotations

import enum
import functools
import inspect
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug
from onnxplug.api_coverage import markdown, onnxruntime_surface
from onnxplug.as_onnxruntime import namespace
from onnxplug.errors import UnsupportedOptionError
from onnxplug.ort_api_table import NOOP, REFUSED, SAME, STATUSES, TABLE

from .conftest import make_model

SURFACE = onnxruntime_surface(onnxruntime)
DOC = Path(__file__).resolve().parents[1] / "docs" / "onnxruntime-api.md"


@functools.lru_cache(maxsize=1)
def instances() -> dict[str, Any]:
    """One onnxplug object per onnxruntime class whose members are instance attributes."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [("x", TensorProto.FLOAT, [2])],
                       [("y", TensorProto.FLOAT, [2])])
    options = onnxplug.SessionOptions()
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = onnxplug.InferenceSession(model.SerializeToString(), options)
    subgraph = session.get_provider_graph_assignment_info()[0]
    device = onnxplug.get_ep_devices()[0]
    return {"InferenceSession": session, "SessionOptions": onnxplug.SessionOptions(),
            "RunOptions": onnxplug.RunOptions(), "IOBinding": session.io_binding(),
            "OrtValue": onnxplug.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32)),
            "NodeArg": session.get_inputs()[0], "ModelMetadata": session.get_modelmeta(), "OrtEpDevice": device,
            "OrtHardwareDevice": device.device, "OrtEpAssignedSubgraph": subgraph,
            "OrtEpAssignedNode": subgraph.get_nodes()[0]}


def owner(head: str) -> Any:
    """onnxplug's object for ``head``: an instance, an enum member, or the class itself."""
    cls = getattr(namespace, head)
    if head in instances():
        return instances()[head]
    if isinstance(cls, type) and issubclass(cls, enum.Enum):  # `name` and `value` are the members'
        return next(iter(cls))
    return cls


def is_stand_in(obj: Any) -> bool:
    """Whether ``obj`` is the stand-in of a refused name."""
    return type(obj).__name__ == "_RefusedMeta"


def test_every_onnxruntime_name_is_in_the_table() -> None:
    missing = [name for name in SURFACE if name not in TABLE]
    assert not missing, f"onnxruntime names the table does not account for: {missing}"


def test_entries_have_a_status_and_say_why_when_not_the_same() -> None:
    for name, (status, reason) in TABLE.items():
        assert status in STATUSES, name
        assert status == SAME or reason.strip(), f"{name}: a {status} entry needs its reason"


def test_the_document_is_the_generated_table() -> None:
    assert DOC.read_text() == markdown(onnxruntime), "regenerate: python -m onnxplug.api_coverage > " \
                                                     "docs/onnxruntime-api.md"


@pytest.mark.parametrize("name", [n for n in SURFACE if TABLE.get(n, ("",))[0] in (SAME, NOOP)])
def test_same_and_no_op_names_exist(name: str) -> None:
    head, _, member = name.partition(".")
    assert not is_stand_in(getattr(namespace, head))
    if member:
        assert not is_stand_in(getattr(owner(head), member))


def _refused(call: Any) -> None:
    """``call`` raises UnsupportedOptionError, given None for each argument it requires."""
    try:
        required = [p for p in inspect.signature(call).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        required = []
    with pytest.raises(UnsupportedOptionError):
        call(*[None] * len(required))


@pytest.mark.parametrize("name", [n for n in SURFACE if TABLE.get(n, ("",))[0] == REFUSED])
def test_refused_names_raise_unsupported_option_error(name: str) -> None:
    head, _, member = name.partition(".")
    obj = getattr(namespace, head)  # present, so feature checks with hasattr see it
    if not member:
        _refused(lambda: obj())
        return
    target = owner(head)
    try:
        value = getattr(target, member)
    except UnsupportedOptionError:
        return
    except AttributeError:  # an option attribute: setting it is refused
        _refused(lambda: setattr(target, member, object()))
        return
    if callable(value):
        _refused(value)
    else:
        _refused(lambda: setattr(target, member, object()))


def test_no_op_functions_accept_onnxruntimes_arguments() -> None:
    namespace.disable_telemetry_events()
    namespace.enable_telemetry_events()
    namespace.preload_dlls(cuda=True, cudnn=True, msvc=False, directory=None)
    namespace.set_global_thread_pool_sizes(2, 1)


def test_top_level_module_attributes_match_onnxruntimes_kinds() -> None:
    for name in ("version", "package_name", "cuda_version", "__version__"):
        assert isinstance(getattr(namespace, name), str) and isinstance(getattr(onnxruntime, name), str)
    assert namespace.version == namespace.__version__ == namespace.get_version_string()
    assert namespace.import_capi_exception is onnxruntime.import_capi_exception is None
