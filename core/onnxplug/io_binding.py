"""IOBinding: run a session on inputs that already live on a provider's device, and leave outputs there
(usage: :class:`IOBinding`).

Device values go through the optional methods of the provider's ``DataTransfer`` (``adopt``,
``from_pointer``, ``copy_into``, ``synchronize``, declared on :class:`onnxplug.device.DataTransfer`);
a device whose transfer offers none of them can still bind host arrays.

A run asks the session's engine for the plan of its binding layout (``Engine.plan_for``): the copy
of a device-bound input to its device is dropped (the bound value is fed in its place), and the
final copy of a device-bound output to the host is dropped (the device value is returned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from onnxplug.cancellation import cancellable
from onnxplug.device import CPU, Device
from onnxplug.errors import (
    BindingError,
    InvalidInputError,
    InvalidOutputError,
    MissingInputError,
    UnknownInputError,
)
from onnxplug.engine import Engine, own_memory
from onnxplug.feeds import check_value
from onnxplug.ir import elem_type_of
from onnxplug.ort_value import OrtValue, parse_device
from onnxplug.provider import ExecutionProvider

if TYPE_CHECKING:
    from onnxplug.options import RunOptions
    from onnxplug.session import InferenceSession


@dataclass
class _Output:
    device: Device
    target: Any = None  # a pre-allocated buffer (host array or device value) to copy the result into


class IOBinding:
    """Inputs and outputs of one session bound to host or device memory (onnxruntime's IOBinding).

    onnxruntime's API (``session.io_binding()``, ``session.run_with_iobinding(binding)``)::

        binding = session.io_binding()                     # or IOBinding(session)
        binding.bind_input("x", x_gpu)                     # a CuPy array, or anything with DLPack /
                                                           # __cuda_array_interface__ on the device
        binding.bind_input("x", x_cl, "opencl", 0)         # a value of a named device, fed as is
        binding.bind_input("x", "cuda", 0, np.float32, shape, ptr)   # or a raw device pointer
        binding.bind_ortvalue_input("x", x_ortvalue)       # an OrtValue, on the host or a device
        binding.bind_output("y", "cuda")                   # leave y on the device
        binding.bind_ortvalue_output("z", z_ortvalue)      # or write z into an OrtValue's memory
        binding.run()                                      # session.run_with_iobinding(binding)
        y = binding.get_outputs()[0]                       # an OrtValue: y.numpy() copies it to the host,
        y_gpu = y.value()                                  # y.value() is the device array itself
    """

    def __init__(self, session: InferenceSession) -> None:
        self._session = session
        self._inputs: dict[str, tuple[Device, Any]] = {}
        self._outputs: dict[str, _Output] = {}
        self._results: list[OrtValue] | None = None

    # --- binding -----------------------------------------------------------------------------------

    @property
    def _engine(self) -> Engine:
        return self._session.engine  # looked up each time: set_providers makes a new engine

    def _provider_for(self, device: Device, what: str) -> ExecutionProvider:
        provider = self._engine.provider_for(device)
        if provider is None:
            devices = ", ".join(sorted(map(str, self._engine.devices)))
            raise BindingError(f"{what}: no provider of this session runs on {device} (devices: {devices})")
        return provider

    def _check_input_name(self, name: str) -> None:
        inputs = self._engine.input_types
        if name not in inputs:
            raise UnknownInputError(f"{name!r} is not an input of the model (inputs: {', '.join(inputs)})")

    def _check_output_name(self, name: str) -> None:
        outputs = self._engine.output_names
        if name not in outputs:
            raise InvalidOutputError(f"{name!r} is not an output of the model (outputs: {', '.join(outputs)})")

    def _native(self, provider: ExecutionProvider, value: Any, what: str) -> Any:
        """``value`` as a value of ``provider``'s device, through its transfer's ``adopt`` when it has one."""
        transfer = provider.data_transfer
        native = transfer.adopt(value) if transfer.offers("adopt") else value
        if native is None:
            raise BindingError(f"{what}: a {type(value).__name__} is not a value of {provider.device}")
        return native

    def bind_cpu_input(self, name: str, array: Any) -> None:
        """Bind a host array, or an OrtValue's value on the host (copied there when it is a device's);
        the run copies it to a device where a provider needs it there."""
        self._check_input_name(name)
        if isinstance(array, OrtValue):
            self._inputs[name] = (CPU, array._host())
            return
        self._inputs[name] = (CPU, np.asarray(array))

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        """Bind an OrtValue: a host value as a host array, a device value on its device, fed as is
        (a provider of the session must run on that device)."""
        self._check_input_name(name)
        if not isinstance(ortvalue, OrtValue):
            raise BindingError(f"input {name!r}: bind_ortvalue_input takes an OrtValue, not {type(ortvalue).__name__}")
        if ortvalue.device == CPU:
            self._inputs[name] = (CPU, ortvalue.value())
            return
        provider = self._provider_for(ortvalue.device, f"input {name!r}")
        self._inputs[name] = (provider.device, self._native(provider, ortvalue.value(), f"input {name!r}"))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """Write output ``name`` into an OrtValue's memory (a host array, or a device value through its
        provider's ``copy_into``); its shape and element type must be the result's."""
        self._check_output_name(name)
        if not isinstance(ortvalue, OrtValue) or not ortvalue.is_tensor():
            raise BindingError(f"output {name!r}: bind_ortvalue_output takes an OrtValue holding a tensor, "
                               f"not {ortvalue!r}")
        if ortvalue.device == CPU:
            self._outputs[name] = _Output(CPU, ortvalue.value())
            return
        provider = self._provider_for(ortvalue.device, f"output {name!r}")
        if not provider.data_transfer.offers("copy_into"):
            raise BindingError(f"output {name!r}: provider {provider.name!r} cannot write into existing device memory")
        self._outputs[name] = _Output(provider.device, self._native(provider, ortvalue.value(), f"output {name!r}"))

    def bind_input(self, name: str, value: Any, device_type: Any = None, device_id: int = 0,
                   element_type: Any = None, shape: Sequence[int] | None = None,
                   buffer_ptr: int | None = None) -> None:
        """Bind input ``name`` to a value, in any of these spellings:

        * ``bind_input(name, array)``: a numpy array (host), an :class:`OrtValue`, or a device value
          found by asking each provider's transfer to ``adopt`` it (DLPack,
          ``__cuda_array_interface__``, its own type);
        * ``bind_input(name, value, device_type, device_id)``: a value of that device, fed as is;
        * ``bind_input(name, device_type, device_id, element_type, shape, buffer_ptr)``: raw device
          memory, as onnxruntime spells it (the provider's transfer must offer ``from_pointer``).
        """
        self._check_input_name(name)
        if isinstance(value, OrtValue):
            if device_type is not None and parse_device(device_type, device_id) != value.device:
                raise BindingError(f"input {name!r}: the OrtValue is on {value.device}, "
                                   f"not {parse_device(device_type, device_id)}")
            self.bind_ortvalue_input(name, value)
            return
        if isinstance(value, str):  # onnxruntime's raw-pointer form, shifted by one argument
            raw_device = parse_device(value, int(device_type or 0))
            element_type, shape, buffer_ptr = device_id, element_type, shape  # type: ignore[assignment]
            if raw_device == CPU:
                raise BindingError(f"input {name!r}: bind host arrays with bind_cpu_input or bind_input(name, array)")
            if buffer_ptr is None or shape is None or element_type is None:
                raise BindingError(f"input {name!r}: a device binding needs element_type, shape and buffer_ptr")
            provider = self._provider_for(raw_device, f"input {name!r}")
            transfer = provider.data_transfer
            if not transfer.offers("from_pointer"):
                raise BindingError(f"input {name!r}: provider {provider.name!r} cannot wrap raw device pointers")
            self._inputs[name] = (raw_device, transfer.from_pointer(int(buffer_ptr), tuple(int(d) for d in shape),  # type: ignore[arg-type]
                                                  np.dtype(element_type)))
            return
        if device_type is not None:
            device = parse_device(device_type, device_id)
            if device == CPU:
                self._inputs[name] = (CPU, np.asarray(value))
                return
            provider = self._provider_for(device, f"input {name!r}")
            self._inputs[name] = (device, self._native(provider, value, f"input {name!r}"))
            return
        if isinstance(value, np.ndarray):
            self._inputs[name] = (CPU, value)
            return
        for provider in self._engine.providers:
            transfer = provider.data_transfer
            native = transfer.adopt(value) if provider.device != CPU and transfer.offers("adopt") else None
            if native is not None:
                self._inputs[name] = (provider.device, native)
                return
        raise BindingError(f"input {name!r}: a {type(value).__name__} lives on no device of this session's "
                           "providers; pass a numpy array, or the device with bind_input(name, value, type, id)")

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0, element_type: Any = None,
                    shape: Sequence[int] | None = None, buffer_ptr: int | None = None) -> None:
        """Leave output ``name`` on a device (or the host); with ``buffer_ptr``, the result is copied
        into that device memory (``element_type`` and ``shape`` describe it)."""
        self._check_output_name(name)
        device = parse_device(device_type, device_id)
        target = None
        if buffer_ptr is not None:
            if device == CPU or shape is None or element_type is None:
                raise BindingError(f"output {name!r}: a buffer binding needs a device, element_type and shape")
            provider = self._provider_for(device, f"output {name!r}")
            transfer = provider.data_transfer
            if not (transfer.offers("from_pointer") and transfer.offers("copy_into")):
                raise BindingError(f"output {name!r}: provider {provider.name!r} cannot write into raw device memory")
            target = transfer.from_pointer(int(buffer_ptr), tuple(int(d) for d in shape), np.dtype(element_type))
        elif device != CPU:
            self._provider_for(device, f"output {name!r}")
        self._outputs[name] = _Output(device, target)

    def clear_binding_inputs(self) -> None:
        """Forget every input binding."""
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        """Forget every output binding (unbound outputs come back on the host)."""
        self._outputs.clear()

    def synchronize_inputs(self) -> None:
        """Wait for pending work on the devices of bound inputs."""
        self._synchronize({d for d, _ in self._inputs.values()})

    def synchronize_outputs(self) -> None:
        """Wait for pending work on the devices of bound outputs (``run`` already does)."""
        self._synchronize({o.device for o in self._outputs.values()})

    def _synchronize(self, devices: set[Device]) -> None:
        for device in devices - {CPU}:
            self._provider_for(device, "synchronize").data_transfer.synchronize()

    # --- running -----------------------------------------------------------------------------------

    def run(self, run_options: RunOptions | None = None) -> None:
        """Run the session on the bound inputs; results are kept for :meth:`get_outputs`."""
        engine = self._engine
        host, on_device = self._feeds(engine)
        bound = engine.plan_for({n: self._inputs[n][0] for n in on_device},
                                {n: b.device for n, b in self._outputs.items()})
        with cancellable(run_options):  # RunOptions.terminate, as InferenceSession.run
            result = engine.run_bound(bound, host, on_device)
        values = []
        for name, declared in engine.output_types.items():
            value = result[name]
            binding = self._outputs.get(name)
            device = binding.device if binding is not None else CPU
            transfer = self._provider_for(device, name).data_transfer if device != CPU else None
            if transfer is not None and bound.produced_on_host(name):
                # produced on the host (a CPU node): the only copy a device binding needs
                value = transfer.to_device(np.asarray(value))
            if binding is not None and binding.target is not None:
                _check_target(name, binding.target, value)
                if transfer is None:
                    np.copyto(binding.target, value)
                else:
                    transfer.copy_into(binding.target, value)
                value = binding.target
            elif transfer is None:
                value = own_memory(value)  # as run(): no output shares memory with a feed
            values.append(OrtValue(value, device, transfer, declared))
        self.synchronize_outputs()
        self._results = values

    def _feeds(self, engine: Engine) -> tuple[dict[str, Any], dict[str, Any]]:
        """(host feeds, device feeds), both by input name, checked against the declared types."""
        host: dict[str, Any] = {}
        on_device: dict[str, Any] = {}
        for name, declared in engine.input_types.items():
            if name not in self._inputs:
                if name in engine.defaults:
                    host[name] = engine.defaults[name]
                    continue
                raise MissingInputError(f"model {engine.source}: input {name!r} is not bound")
            device, value = self._inputs[name]
            if device == CPU:
                host[name] = check_value(engine.source, name, value, declared)
            else:
                _check_device_value(engine.source, name, value, declared)
                on_device[name] = value
        return host, on_device

    def get_outputs(self) -> list[OrtValue]:
        """The outputs of the last run as OrtValues, in the model's output order: device values for
        device-bound outputs (``.value()`` is the device array, ``.numpy()`` a host copy), host
        values otherwise."""
        if self._results is None:
            raise InvalidOutputError("IOBinding.get_outputs: run the binding first")
        return list(self._results)

    def get_outputs_as_ortvaluevector(self) -> list[OrtValue]:
        """onnxruntime's raw output vector; here the same list as :meth:`get_outputs`."""
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list[Any]:
        """The outputs of the last run as host arrays (lists for sequences)."""
        return [value._host() for value in self.get_outputs()]


def _check_target(name: str, target: Any, value: Any) -> None:
    """A result must fit the buffer it is written into (onnxruntime fails the run otherwise)."""
    try:
        want = (np.dtype(target.dtype), tuple(int(d) for d in target.shape))
        got = (np.dtype(value.dtype), tuple(int(d) for d in value.shape))
    except (AttributeError, TypeError):
        return  # an opaque device value: its transfer's copy_into is the judge
    if want != got:
        raise BindingError(f"output {name!r}: the result is {got[0]}{list(got[1])}, the bound buffer "
                           f"holds {want[0]}{list(want[1])}")


def _check_device_value(src: str, name: str, value: Any, declared: Any) -> None:
    """Element type and fixed dimensions of a device value against the declared input type."""
    if declared is None or declared.kind != "tensor":
        return
    if not (hasattr(value, "dtype") and hasattr(value, "shape")):
        return  # an opaque device value: its provider's kernels are the judge
    try:
        elem = elem_type_of(np.dtype(value.dtype))
        shape = tuple(int(d) for d in value.shape)
    except (KeyError, TypeError, ValueError):
        raise InvalidInputError(f"model {src}: bound input {name!r} has no readable dtype and shape") from None
    if declared.elem_type and elem != declared.elem_type:
        raise InvalidInputError(f"model {src}: bound input {name!r} is {np.dtype(value.dtype)}, "
                                f"the model expects {declared.ort_string()}")
    if declared.shape is not None:
        if len(shape) != len(declared.shape) or any(isinstance(w, int) and w != h
                                                    for w, h in zip(declared.shape, shape)):
            raise InvalidInputError(f"model {src}: bound input {name!r} has shape {list(shape)}, the model "
                                    f"expects {[d if d is not None else '?' for d in declared.shape]}")


def run_with_iobinding(session: InferenceSession, binding: IOBinding, run_options: RunOptions | None = None) -> None:
    """onnxruntime's ``session.run_with_iobinding(binding)``."""
    if binding._session is not session:
        raise BindingError("this IOBinding belongs to another session")
    binding.run(run_options)
