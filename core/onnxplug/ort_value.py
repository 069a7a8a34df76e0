"""``OrtValue``: one value on the host or on a provider's device, as onnxruntime's ``OrtValue``.

A host value is a numpy array (or a list of arrays, a dict or None for sequence, map and absent
optional outputs). A device value is whatever the provider of that device computes with (a CuPy
array, a PyOpenCL array, ...), kept with its :class:`~onnxplug.device.Device` and the provider's
:class:`~onnxplug.device.DataTransfer`, which copies it to the host for :meth:`OrtValue.numpy`.

A device named by ``device_type`` and ``device_id`` is served by the first installed, available
provider whose device it is: each provider is created once with its default options (and, when its
default device has another index, with the option ``device_id`` or ``device`` set to the index).
"""

from __future__ import annotations

import math
import operator
import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from onnxplug.device import CPU, DataTransfer, Device
from onnxplug.errors import OrtValueError, UnsupportedOptionError
from onnxplug.ir.types import ValueType, elem_type_name, elem_type_of, numpy_dtype
from onnxplug.errors import refuse_call as _refuse_call

if TYPE_CHECKING:
    from onnxplug.provider import ExecutionProvider

# DLPack's DLDeviceType codes of the devices onnxplug providers run on (kDLCPU is the host)
_DLPACK_CPU = 1
_DLPACK_DEVICES = {2: "cuda", 4: "opencl", 13: "cuda"}


def parse_device(device_type: Any, device_id: Any = 0) -> Device:
    """onnxruntime's ``(device_type, device_id)`` pair as a :class:`Device` (the type is case-insensitive)."""
    kind = str(device_type).lower()
    return CPU if kind == "cpu" else Device(kind, int(device_id or 0))


class OrtValue:
    """One value on the host or a provider's device, with onnxruntime's ``OrtValue`` methods.

    Make one with the factories (:meth:`ortvalue_from_numpy`, :meth:`ortvalue_from_shape_and_type`,
    :meth:`from_dlpack`); sessions and bindings return them. :meth:`value` gives the held value
    itself (the numpy array or the provider's device array) without a copy.

    ::

        x = ort.OrtValue.ortvalue_from_numpy(array)                   # host: shares the array's memory
        x_cl = ort.OrtValue.ortvalue_from_numpy(array, "opencl", 0)   # copied to the device
        y = session.run_with_ort_values(None, {"x": x})[0].numpy()
        binding.get_outputs()[0].value()                              # the device array itself, no copy
    """

    def __init__(self, value: Any, device: Device = CPU, data_transfer: DataTransfer | None = None,
                 value_type: ValueType | None = None) -> None:
        """Wrap ``value``, a host value, or a value of ``device`` that ``data_transfer`` can copy
        to the host; ``value_type`` is the declared type, read by :meth:`data_type` for values
        that do not carry one (an empty sequence, an absent optional)."""
        if device != CPU and data_transfer is None:
            raise OrtValueError(f"an OrtValue on {device} needs the data transfer of a provider of that device")
        if device == CPU and value is not None and not isinstance(value, (np.ndarray, list, dict)):
            value = np.asarray(value)
        self._value = value
        self._device = device
        self._transfer = data_transfer
        self._type = value_type
        self._meta: tuple[tuple[int, ...], np.dtype] | None = None  # a device tensor's shape and dtype

    # --- factories (onnxruntime's) ---------------------------------------------------------------

    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj: np.ndarray, /, device_type: str = "cpu", device_id: int = 0,
                            vendor_id: int = -1) -> OrtValue:
        """A tensor holding ``numpy_obj``: on the host it shares the array's memory (a copy only when
        the array is not C-contiguous, as onnxruntime), on a device it is a copy."""
        _refuse_vendor(vendor_id, "ortvalue_from_numpy")
        if not isinstance(numpy_obj, np.ndarray):
            raise OrtValueError(f"OrtValue.ortvalue_from_numpy takes a numpy array, not {type(numpy_obj).__name__}")
        array = numpy_obj
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        array = _contiguous(array)
        device = parse_device(device_type, device_id)
        if device == CPU:
            return cls(array)
        if array.dtype.kind in "OUS":
            raise OrtValueError(f"OrtValue.ortvalue_from_numpy: string tensors stay on the host, not {device}")
        provider = provider_for_device(device)
        value = cls(provider.data_transfer.to_device(array), provider.device, provider.data_transfer)
        value._meta = (tuple(array.shape), array.dtype)
        return value

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data: np.ndarray, /, onnx_element_type: int) -> OrtValue:
        """A host tensor over ``data``'s memory, reinterpreted as the ONNX element type
        ``onnx_element_type`` of the same size (e.g. uint16 bits as bfloat16)."""
        if not isinstance(data, np.ndarray):
            raise OrtValueError(f"OrtValue.ortvalue_from_numpy_with_onnx_type takes a numpy array, "
                                f"not {type(data).__name__}")
        dtype = _dtype_of(onnx_element_type, "ortvalue_from_numpy_with_onnx_type")
        if dtype.itemsize != data.dtype.itemsize:
            raise OrtValueError(f"OrtValue.ortvalue_from_numpy_with_onnx_type: {data.dtype} elements are "
                                f"{data.dtype.itemsize} bytes, tensor({elem_type_name(int(onnx_element_type))}) "
                                f"elements {dtype.itemsize}")
        return cls(_contiguous(data).view(dtype))

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape: Sequence[int], element_type: Any, device_type: str = "cpu",
                                     device_id: int = 0, vendor_id: int = -1, memory_info: Any = None) -> OrtValue:
        """An uninitialised tensor of ``shape`` and ``element_type`` (a numpy type or an ONNX element
        type number) on the host, or from the allocator of the device's provider."""
        _refuse_vendor(vendor_id, "ortvalue_from_shape_and_type")
        if memory_info is not None:
            raise UnsupportedOptionError("OrtValue.ortvalue_from_shape_and_type: memory_info is not implemented by "
                                         "onnxplug (name the device with device_type and device_id)")
        device = parse_device(device_type, device_id)
        provider = None if device == CPU else provider_for_device(device)
        return cls._allocate(shape, element_type, provider, "ortvalue_from_shape_and_type")

    @classmethod
    def _allocate(cls, shape: Sequence[int], element_type: Any, provider: ExecutionProvider | None,
                  method: str) -> OrtValue:
        """An uninitialised tensor on the host (``provider`` None) or from ``provider``'s allocator."""
        dims = _shape_of(shape, method)
        dtype = _dtype_of(element_type, method)
        if dtype.kind in "OUS":
            raise OrtValueError(f"OrtValue.{method}: string tensors cannot be allocated (as in onnxruntime)")
        if provider is None:
            return cls(np.empty(dims, dtype))
        value = cls(provider.allocator.alloc(dims, dtype), provider.device, provider.data_transfer)
        value._meta = (dims, dtype)
        return value

    @classmethod
    def from_dlpack(cls, data: Any, /) -> OrtValue:
        """A tensor sharing the memory of an object with ``__dlpack__``: a host array, or a device array
        that the provider of its device takes without a copy (its transfer's ``adopt``)."""
        if not hasattr(data, "__dlpack__") or not hasattr(data, "__dlpack_device__"):
            raise OrtValueError(f"OrtValue.from_dlpack takes an object with __dlpack__ and __dlpack_device__, "
                                f"not {type(data).__name__} (raw DLPack capsules are not supported)")
        kind, index = (int(x) for x in data.__dlpack_device__())
        if kind == _DLPACK_CPU:
            return cls(np.from_dlpack(data))
        if kind not in _DLPACK_DEVICES:
            raise OrtValueError(f"OrtValue.from_dlpack: DLPack device type {kind} is not a device onnxplug "
                                f"providers run on (known: cpu, {', '.join(sorted(set(_DLPACK_DEVICES.values())))})")
        provider = provider_for_device(Device(_DLPACK_DEVICES[kind], index))
        transfer = provider.data_transfer
        native = transfer.adopt(data) if transfer.offers("adopt") else None
        if native is None:
            raise OrtValueError(f"OrtValue.from_dlpack: provider {provider.name!r} of {provider.device} cannot "
                                f"take a {type(data).__name__} without a copy")
        return cls(native, provider.device, provider.data_transfer)

    @classmethod
    def ort_value_from_sparse_tensor(cls, sparse_tensor: Any) -> OrtValue:
        """Not implemented: onnxplug has no sparse tensors (raises UnsupportedOptionError)."""
        _refuse_call("OrtValue.ort_value_from_sparse_tensor")

    def as_sparse_tensor(self) -> Any:
        """Not implemented: onnxplug has no sparse tensors (raises UnsupportedOptionError)."""
        _refuse_call("OrtValue.as_sparse_tensor")

    # --- what it holds ---------------------------------------------------------------------------

    def value(self) -> Any:
        """The held value itself, without a copy: the numpy array, or the provider's device array
        (e.g. a ``cupy.ndarray`` or ``pyopencl.array.Array``); a list for a sequence."""
        return self._value

    @property
    def device(self) -> Device:
        """The device the value lives on (``CPU`` for host values)."""
        return self._device

    def device_name(self) -> str:
        """``'cpu'``, or the device type of the value's provider, e.g. ``'cuda'`` or ``'opencl'``."""
        return self._device.type

    def has_value(self) -> bool:
        """False only for an optional value that is absent."""
        return self._value is not None

    def is_tensor(self) -> bool:
        """True when the value is a tensor (on the host or a device)."""
        return self._kind() == "tensor"

    def is_tensor_sequence(self) -> bool:
        """True when the value is a sequence of tensors."""
        return self._kind() == "sequence"

    def is_sparse_tensor(self) -> bool:
        """Always False: onnxplug has no sparse tensors."""
        return False

    def data_type(self) -> str:
        """onnxruntime's type string, e.g. ``'tensor(float)'`` or ``'seq(tensor(int64))'``."""
        kind = self._kind()
        if kind == "tensor":
            return f"tensor({elem_type_name(elem_type_of(self._shape_dtype()[1]))})"
        if self._type is not None:
            return self._type.ort_string()
        if kind == "sequence" and self._value:
            return f"seq(tensor({elem_type_name(elem_type_of(np.asarray(self._value[0]).dtype))}))"
        return {"sequence": "seq(?)", "map": "map(?)"}.get(kind, "optional(?)")

    def element_type(self) -> int:
        """The ONNX element type number of a tensor, or of a sequence's tensors (onnxruntime returns
        this number, e.g. 1 for float, not a numpy type)."""
        kind = self._kind()
        if kind == "tensor":
            return elem_type_of(self._shape_dtype()[1])
        if kind == "sequence":
            if self._type is not None and self._type.element is not None and self._type.element.elem_type:
                return self._type.element.elem_type
            if self._value:
                return elem_type_of(np.asarray(self._value[0]).dtype)
        raise OrtValueError(f"OrtValue.element_type() needs a tensor or a tensor sequence; "
                            f"this OrtValue holds {self.data_type()}")

    def shape(self) -> list[int]:
        """The tensor's dimensions."""
        self._require_tensor("shape")
        return list(self._shape_dtype()[0])

    def tensor_size_in_bytes(self) -> int:
        """The tensor's size in bytes (element count times element size)."""
        self._require_tensor("tensor_size_in_bytes")
        shape, dtype = self._shape_dtype()
        return math.prod(shape) * dtype.itemsize

    def data_ptr(self) -> int:
        """The address of the tensor's first element (0 for an empty host tensor, as in onnxruntime):
        the host array's, or the device pointer the
        device value exposes (CuPy's ``data.ptr``, ``__cuda_array_interface__``, PyOpenCL's
        ``data.int_ptr``, a ``cl_mem`` handle)."""
        self._require_tensor("data_ptr")
        if self._device == CPU:
            return int(self._value.ctypes.data) if self._value.size else 0  # onnxruntime's for an empty tensor
        pointer = _device_pointer(self._value)
        if pointer is None:
            raise OrtValueError(f"OrtValue.data_ptr(): the {type(self._value).__name__} on {self._device} "
                                f"exposes no device pointer")
        return pointer

    def numpy(self) -> np.ndarray:
        """The tensor as a host array: for a host value an array sharing its memory (writes show in
        the value, as in onnxruntime), for a device value a copy."""
        self._require_tensor("numpy")
        if self._device == CPU:
            return self._value.view()
        return np.asarray(self._transfer.to_host(self._value))  # type: ignore[union-attr]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(value)``: :meth:`numpy`, cast to ``dtype`` when given."""
        array = self.numpy()
        if copy is not None:
            return np.array(array, dtype=dtype, copy=copy)
        return array if dtype is None else np.asarray(array, dtype=dtype)

    # --- writing ---------------------------------------------------------------------------------

    def update_inplace(self, data: np.ndarray | OrtValue) -> None:
        """Copy ``data`` (a numpy array or another OrtValue) into this tensor's memory. Shape and
        element type must equal this tensor's (onnxruntime only compares the byte size)."""
        self._require_tensor("update_inplace")
        if isinstance(data, OrtValue):
            data._require_tensor("update_inplace")
            shape, dtype = data._shape_dtype()
        elif isinstance(data, np.ndarray):
            shape, dtype = tuple(data.shape), data.dtype
        else:
            raise OrtValueError(f"OrtValue.update_inplace takes a numpy array or an OrtValue, "
                                f"not {type(data).__name__}")
        want_shape, want_dtype = self._shape_dtype()
        if tuple(shape) != tuple(want_shape) or dtype != want_dtype:
            raise OrtValueError(f"OrtValue.update_inplace: this value is {want_dtype}{list(want_shape)}, the new "
                                f"data is {dtype}{list(shape)}; shape and element type must be the same")
        if self._device == CPU:
            np.copyto(self._value, data.numpy() if isinstance(data, OrtValue) else data)
            return
        if self._transfer is None or not self._transfer.offers("copy_into"):
            raise OrtValueError(f"OrtValue.update_inplace: the data transfer of {self._device} cannot write "
                                f"into existing device memory (it has no copy_into)")
        if isinstance(data, OrtValue) and data._device == self._device:
            source = data._value  # device to device, no host round trip
        else:
            host = data.numpy() if isinstance(data, OrtValue) else data
            source = self._transfer.to_device(_contiguous(host))  # type: ignore[union-attr]
        self._transfer.copy_into(self._value, source)

    # --- zero-copy exchange ----------------------------------------------------------------------

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        """A DLPack capsule of the held tensor (the host array's, or the device value's own when it
        supports DLPack); no copy."""
        self._require_tensor("__dlpack__")
        export = getattr(self._value, "__dlpack__", None)
        if export is None:
            raise OrtValueError(f"the {type(self._value).__name__} this OrtValue holds on {self._device} "
                                f"does not support DLPack")
        return export(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's ``(device_type, device_id)`` of the held tensor."""
        self._require_tensor("__dlpack_device__")
        where = getattr(self._value, "__dlpack_device__", None)
        if where is None:
            raise OrtValueError(f"the {type(self._value).__name__} this OrtValue holds on {self._device} "
                                f"does not support DLPack")
        kind, index = where()
        return int(kind), int(index)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The device value's ``__cuda_array_interface__`` (so ``cupy.asarray(value)`` takes it
        without a copy). An AttributeError when the value has none, as the protocol expects."""
        interface = getattr(self._value, "__cuda_array_interface__", None)
        if interface is None:
            raise AttributeError(f"the {type(self._value).__name__} this OrtValue holds on {self._device} "
                                 f"has no __cuda_array_interface__")
        return interface

    def __repr__(self) -> str:
        if self._kind() == "tensor":
            shape, dtype = self._shape_dtype()
            return f"OrtValue({dtype}{list(shape)} on {self._device})"
        return f"OrtValue({self.data_type()} on {self._device})"

    # --- helpers ---------------------------------------------------------------------------------

    def _kind(self) -> str:
        if self._value is None:
            return "none"
        if isinstance(self._value, list):
            return "sequence"
        if isinstance(self._value, dict):
            return "map"
        return "tensor"

    def _require_tensor(self, method: str) -> None:
        if self._kind() != "tensor":
            raise OrtValueError(f"OrtValue.{method}() needs a tensor; this OrtValue holds {self.data_type()}")

    def _shape_dtype(self) -> tuple[tuple[int, ...], np.dtype]:
        if self._device == CPU:
            return tuple(self._value.shape), self._value.dtype
        if self._meta is None:
            try:
                self._meta = (tuple(int(d) for d in self._value.shape), np.dtype(self._value.dtype))
            except (AttributeError, TypeError):  # an opaque device value: ask its host copy, once
                host = np.asarray(self._transfer.to_host(self._value))  # type: ignore[union-attr]
                self._meta = (tuple(host.shape), host.dtype)
        return self._meta

    def _host(self) -> Any:
        """The value on the host: the array itself for host values, a copy for device values."""
        return self._value if self._device == CPU else self.numpy()


# --- finding a device's provider ---------------------------------------------------------------------

_lookup_lock = threading.Lock()
_created: dict[tuple[type, tuple[tuple[str, Any], ...]], ExecutionProvider] = {}


def provider_for_device(device: Device) -> ExecutionProvider:
    """A provider of an installed, available plugin that runs on ``device`` (created once and
    reused); raises :class:`~onnxplug.errors.OrtValueError` naming the device when there is none."""
    from onnxplug.plugins import get_catalog

    seen: list[str] = []
    with _lookup_lock:
        for name, cls in sorted(get_catalog().providers.items()):
            if not cls.availability():
                continue
            candidates: list[dict[str, Any]] = [{}]
            while candidates:
                options = candidates.pop(0)
                key = (cls, tuple(sorted(options.items())))
                provider = _created.get(key)
                if provider is None:
                    try:
                        provider = _created[key] = cls(options)
                    except Exception as e:  # one provider failing must not hide the others; it is reported
                        seen.append(f"{name} ({type(e).__name__}: {e})")
                        continue
                if provider.device == device:
                    return provider
                seen.append(f"{name} on {provider.device}")
                if not options and provider.device.type == device.type:
                    candidates.extend(_index_options(cls, device.index))
    raise OrtValueError(f"no available provider runs on device {str(device)!r} (found: {', '.join(seen) or 'none'})")


def _index_options(cls: type[ExecutionProvider], index: int) -> list[dict[str, Any]]:
    """The options that would select device ``index`` of a provider, by the option names providers use."""
    if "device_id" in cls.default_options:
        return [{"device_id": index}]
    if "device" in cls.default_options:
        return [{"device": str(index)}]
    return []


def _refuse_vendor(vendor_id: int, method: str) -> None:
    if vendor_id != -1:
        raise UnsupportedOptionError(f"OrtValue.{method}: vendor_id is not implemented by onnxplug "
                                     f"(name the device with device_type and device_id)")


def _shape_of(shape: Sequence[int], method: str) -> tuple[int, ...]:
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise OrtValueError(f"OrtValue.{method}: shape {shape!r} is not a sequence of integers") from None
    if any(d < 0 for d in dims):
        raise OrtValueError(f"OrtValue.{method}: shape {list(dims)} has a negative dimension")
    return dims


def _dtype_of(element_type: Any, method: str) -> np.dtype:
    """A numpy type, dtype or name, or an ONNX element type number, as a numpy dtype."""
    try:
        if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
            return numpy_dtype(int(element_type))
        return np.dtype(element_type)
    except (KeyError, TypeError, ValueError):
        raise OrtValueError(f"OrtValue.{method}: {element_type!r} is neither a numpy type nor an ONNX "
                            f"element type") from None


def _contiguous(array: np.ndarray) -> np.ndarray:
    """``array``, or a C-ordered copy (``np.ascontiguousarray`` would make a 0-d array 1-d)."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def _device_pointer(value: Any) -> int | None:
    """The device address a device array exposes, or None."""
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict) and interface.get("data"):
        return int(interface["data"][0])
    try:
        data = value.data  # PyOpenCL raises (not AttributeError) for an array at an offset
    except Exception:
        return None
    for attribute in ("ptr", "int_ptr"):
        pointer = getattr(data, attribute, None)
        if isinstance(pointer, int):
            return pointer
    return None
