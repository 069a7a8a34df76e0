"""onnxruntime's status exceptions, the classes of ``onnxruntime.capi.onnxruntime_pybind11_state``.

onnxruntime raises one class per status code (``Fail``, ``InvalidArgument``, ``NoSuchFile``, ...),
each derived from ``Exception`` only. Here they are bases of :mod:`onnxplug.errors`' classes: every
onnxplug error also derives from the class onnxruntime raises in the same situation, so a client's
``except InvalidArgument:`` catches onnxplug's ``InputTypeError``. They are importable from
``onnxplug.capi.onnxruntime_pybind11_state`` under onnxruntime's names; onnxplug raises its own
subclasses, never these directly.
"""

from __future__ import annotations


class Fail(Exception):
    """onnxruntime's ``FAIL`` status: a generic failure (bad opset or IR version, a failed kernel)."""


class InvalidArgument(Exception):
    """onnxruntime's ``INVALID_ARGUMENT`` status: a bad feed, output name, option value or model reference."""


class NoSuchFile(Exception):
    """onnxruntime's ``NO_SUCHFILE`` status: a model file that does not exist."""


class NoModel(Exception):
    """onnxruntime's ``NO_MODEL`` status: no model was loaded."""


class EngineError(Exception):
    """onnxruntime's ``ENGINE_ERROR`` status."""


class RuntimeException(Exception):
    """onnxruntime's ``RUNTIME_EXCEPTION`` status: an exception while running (a failed kernel)."""


class InvalidProtobuf(Exception):
    """onnxruntime's ``INVALID_PROTOBUF`` status: the model bytes are not an ONNX protobuf."""


class ModelLoaded(Exception):
    """onnxruntime's ``MODEL_LOADED`` status: a model was loaded twice into one session."""


class NotImplemented(Exception):  # noqa: A001 - onnxruntime's name
    """onnxruntime's ``NOT_IMPLEMENTED`` status: no kernel for a node, or an unimplemented feature."""


class InvalidGraph(Exception):
    """onnxruntime's ``INVALID_GRAPH`` status: the model is not a valid ONNX graph."""


class EPFail(Exception):
    """onnxruntime's ``EP_FAIL`` status: an execution provider failed."""


class ModelLoadCanceled(Exception):
    """onnxruntime's ``MODEL_LOAD_CANCELED`` status (``set_load_cancellation_flag``)."""


class ModelRequiresCompilation(Exception):
    """onnxruntime's ``MODEL_REQUIRES_COMPILATION`` status."""


class NotFound(Exception):
    """onnxruntime's ``NOT_FOUND`` status."""


class DeviceReset(Exception):
    """onnxruntime's device-reset status."""


#: onnxruntime's status exception classes by name.
STATUS_EXCEPTIONS: dict[str, type[Exception]] = {
    cls.__name__: cls for cls in (Fail, InvalidArgument, NoSuchFile, NoModel, EngineError, RuntimeException,
                                  InvalidProtobuf, ModelLoaded, NotImplemented, InvalidGraph, EPFail,
                                  ModelLoadCanceled, ModelRequiresCompilation, NotFound, DeviceReset)
}
