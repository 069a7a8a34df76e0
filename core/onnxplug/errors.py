"""Typed errors raised by onnxplug.

Every error derives from :class:`OnnxplugError`, and each message names the culprit:
the model, node (name, op, domain, version), value or input at fault. Where onnxruntime
users would catch a builtin (``ValueError``, ``RuntimeError``), the error derives from it too, and
from the status class onnxruntime raises in the same situation (:mod:`onnxplug.ort_status`:
``InvalidArgument`` for a bad feed, ``NoSuchFile`` for a missing model, ...), so clients' handlers
for onnxruntime's exceptions catch onnxplug's.
"""

from __future__ import annotations

from typing import Any, NoReturn

from onnxplug import ort_status as _s


class OnnxplugError(Exception):
    """Base class of every error onnxplug raises on purpose."""


# --- loading and validating models -------------------------------------------------------------

class ModelLoadError(OnnxplugError, ValueError, _s.Fail):
    """The model cannot be read: missing file, truncated or corrupt protobuf."""


class ModelFileError(ModelLoadError, _s.NoSuchFile):
    """The model file does not exist or cannot be read."""


class ModelProtobufError(ModelLoadError, _s.InvalidProtobuf):
    """The model's bytes are not an ONNX protobuf holding a graph (truncated, corrupt, empty)."""


class ExternalDataError(ModelLoadError):
    """An external-data location is absolute, escapes the model's folder, or cannot be read."""


class ModelValidationError(OnnxplugError, ValueError, _s.InvalidGraph):
    """The model is readable but not a valid ONNX graph."""


class GraphCycleError(ModelValidationError):
    """The graph has a cycle, so no topological order exists."""


class UndefinedValueError(ModelValidationError, _s.InvalidArgument):
    """A node reads a value that no input, initializer or earlier node defines."""


class DuplicateDefinitionError(ModelValidationError):
    """Two producers (nodes, inputs or initializers) define the same value name."""


class UnsupportedIRVersionError(ModelValidationError, _s.Fail):
    """The model's IR version is outside the range this runtime reads."""


class UnsupportedOpsetError(ModelValidationError, _s.Fail):
    """The model imports an opset version newer than this runtime knows."""


class UnknownOpError(ModelValidationError):
    """A node's op type does not exist in its domain at the imported version."""


# --- sessions and providers --------------------------------------------------------------------

class UnsupportedOptionError(OnnxplugError, ValueError, _s.NotImplemented):
    """A session, run or provider option that this runtime does not implement was set."""


class OptionValueError(OnnxplugError, ValueError, _s.InvalidArgument):
    """An option was given a value it cannot take, or one that does not fit the model."""


class ProviderError(OnnxplugError, RuntimeError, _s.EPFail):
    """Base class of provider discovery and selection errors."""


class UnknownProviderError(ProviderError, ValueError, _s.InvalidArgument):
    """A provider name is neither installed nor an alias of an installed provider."""


class ProviderLibraryError(ProviderError, _s.Fail):
    """``register_execution_provider_library`` cannot load a provider plugin from the path, or
    ``unregister_execution_provider_library`` names one that was not registered."""


class ProviderUnavailableError(ProviderError):
    """The provider is installed but cannot run here; the message carries its reason."""


class DuplicateKernelError(OnnxplugError, ValueError, _s.Fail):
    """A kernel is registered twice for the same (domain, op_type, since_version)."""


class NotImplementedOpError(OnnxplugError, NotImplementedError, _s.NotImplemented):
    """No provider of the session can run a node."""


class FallbackDisabledError(NotImplementedOpError):
    """CPU fallback is disabled and the requested providers left nodes unclaimed."""


class PartitionError(OnnxplugError, RuntimeError, _s.Fail):
    """A provider's claims cannot be turned into a valid execution plan."""


class NotRecordedError(OnnxplugError, RuntimeError, _s.Fail):
    """A session was asked for information that its options did not ask it to record."""


class UnsupportedModuleError(OnnxplugError, ImportError):
    """An onnxruntime module that onnxplug does not provide was imported (its own Python tools)."""


# --- running -----------------------------------------------------------------------------------

class InvalidInputError(OnnxplugError, ValueError, _s.InvalidArgument):
    """A feed given to ``run`` does not match the model's declared inputs."""


class MissingInputError(InvalidInputError):
    """A required graph input was not fed."""


class UnknownInputError(InvalidInputError):
    """A fed name is not an input of the model."""


class InputTypeError(InvalidInputError):
    """A feed's element type differs from the declared one."""


class InputShapeError(InvalidInputError):
    """A feed's rank or a fixed dimension differs from the declared shape."""


class InvalidOutputError(OnnxplugError, ValueError, _s.InvalidArgument):
    """A requested output name is not an output of the model."""


class BindingError(OnnxplugError, ValueError, _s.InvalidArgument):
    """An IOBinding names a device no provider of the session runs on, or a value it cannot take."""


class OrtValueError(OnnxplugError, ValueError, _s.InvalidArgument):
    """An OrtValue cannot be made, read or written as asked: no available provider runs on the named
    device, the data is not an array, or its shape or element type differs from the value's."""


class RunTerminatedError(OnnxplugError, RuntimeError, _s.Fail):
    """A run stopped because its ``RunOptions.terminate`` was set (:mod:`onnxplug.cancellation`)."""


class KernelError(OnnxplugError, RuntimeError, _s.Fail, _s.RuntimeException):
    """A kernel failed while computing a node; the message names the node and provider."""


class AllocationLimitError(OnnxplugError, MemoryError, _s.Fail, _s.RuntimeException):
    """A node would allocate more than ``session.onnxplug.max_allocation_bytes``; refused before
    allocating (:mod:`onnxplug.allocation_limit`), the message names the node, shape and bytes."""


def refuse_call(method: str, *args: Any, **kwargs: Any) -> NoReturn:
    """What an onnxruntime method this runtime does not implement does when called."""
    raise UnsupportedOptionError(f"{method}() is not implemented by onnxplug")
