"""onnxruntime's device-based provider selection, mapped onto the plugin catalog.

``get_ep_devices()`` lists one :class:`OrtEpDevice` per device of each available provider (from
:meth:`~onnxplug.provider.ExecutionProvider.hardware_devices`, or derived from a provider made with
default options), in ``get_available_providers()`` order. A ``SessionOptions`` holds at most one
selection: explicit providers (``add_provider_for_devices``, ``add_provider``), a policy
(``set_provider_selection_policy``) or a delegate (``set_provider_selection_policy_delegate``); a
session created without ``providers=`` runs on it, and ``providers=`` wins with a warning, as in
onnxruntime. ``PREFER_X`` picks the first provider with a device of type ``X``, then the default
provider; the other policies map onto these as onnxruntime maps them. Provider plugins loaded at
run time (``register_execution_provider_library``) are :mod:`onnxplug.ep_libraries`'.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from onnxplug import logs
from onnxplug.device import HardwareDevice, host_cpu
from onnxplug.errors import NotRecordedError, OptionValueError
from onnxplug.errors import refuse_call as _refuse_call

if TYPE_CHECKING:
    from onnxplug.options import SessionOptions
    from onnxplug.provider import ExecutionProvider
    from onnxplug.partitioner import Group

#: The session config entry that makes a session keep its provider assignment for
#: ``get_provider_graph_assignment_info()``.
RECORD_ASSIGNMENT_KEY = "session.record_ep_graph_assignment_info"


class OrtHardwareDeviceType(enum.IntEnum):
    """A hardware device's type, as onnxruntime's enum of the same name."""

    CPU = 0
    GPU = 1
    NPU = 2


class OrtExecutionProviderDevicePolicy(enum.IntEnum):
    """How a session without explicit providers picks them, as onnxruntime's enum of the same name."""

    DEFAULT = 0
    PREFER_CPU = 1
    PREFER_NPU = 2
    PREFER_GPU = 3
    MAX_PERFORMANCE = 4
    MAX_EFFICIENCY = 5
    MIN_OVERALL_POWER = 6


_POLICY_DEVICE = {
    OrtExecutionProviderDevicePolicy.DEFAULT: OrtHardwareDeviceType.CPU,
    OrtExecutionProviderDevicePolicy.PREFER_CPU: OrtHardwareDeviceType.CPU,
    OrtExecutionProviderDevicePolicy.PREFER_NPU: OrtHardwareDeviceType.NPU,
    OrtExecutionProviderDevicePolicy.PREFER_GPU: OrtHardwareDeviceType.GPU,
    OrtExecutionProviderDevicePolicy.MAX_PERFORMANCE: OrtHardwareDeviceType.GPU,
    OrtExecutionProviderDevicePolicy.MAX_EFFICIENCY: OrtHardwareDeviceType.NPU,
    OrtExecutionProviderDevicePolicy.MIN_OVERALL_POWER: OrtHardwareDeviceType.NPU,
}


class OrtHardwareDevice:
    """A physical device, as onnxruntime's ``OrtHardwareDevice``."""

    def __init__(self, info: HardwareDevice) -> None:
        self._info = info

    @property
    def type(self) -> OrtHardwareDeviceType:
        """The device's type (CPU, GPU or NPU)."""
        return OrtHardwareDeviceType[self._info.kind]

    @property
    def vendor(self) -> str:
        """The vendor's name, e.g. ``"Intel"``."""
        return self._info.vendor

    @property
    def vendor_id(self) -> int:
        """The vendor's PCI id, 0 when unknown."""
        return self._info.vendor_id

    @property
    def device_id(self) -> int:
        """The device's id (onnxruntime: the PCI device id; here the provider's device index)."""
        return self._info.device_id

    @property
    def metadata(self) -> dict[str, str]:
        """String key/value pairs describing the device."""
        return dict(self._info.metadata)

    def __repr__(self) -> str:
        return f"OrtHardwareDevice(type={self.type.name}, vendor={self.vendor!r}, device_id={self.device_id})"


class OrtEpDevice:
    """A provider paired with a device it runs on, as onnxruntime's ``OrtEpDevice``."""

    def __init__(self, ep_name: str, ep_vendor: str, ep_metadata: Mapping[str, str], device: HardwareDevice) -> None:
        self._ep_name = ep_name
        self._ep_vendor = ep_vendor
        self._ep_metadata = dict(ep_metadata)
        self._device = OrtHardwareDevice(device)

    @property
    def ep_name(self) -> str:
        """The provider's name, as ``get_available_providers()`` lists it."""
        return self._ep_name

    @property
    def ep_vendor(self) -> str:
        """The distribution that ships the provider, e.g. ``"onnxplug-numba"``."""
        return self._ep_vendor

    @property
    def ep_metadata(self) -> dict[str, str]:
        """The provider's version and aliases."""
        return dict(self._ep_metadata)

    @property
    def ep_options(self) -> dict[str, str]:
        """The provider options that select this device (empty for a provider's only device)."""
        return dict(self._device._info.options)

    @property
    def device(self) -> OrtHardwareDevice:
        """The device."""
        return self._device

    def memory_info(self, *args: Any) -> Any:
        """onnxruntime's memory descriptions: not implemented (values are placed with OrtValue's
        ``device_type`` and ``device_id``)."""
        _refuse_call("OrtEpDevice.memory_info")

    def create_sync_stream(self, *args: Any) -> Any:
        """onnxruntime's device streams: not implemented (providers synchronise their own work)."""
        _refuse_call("OrtEpDevice.create_sync_stream")

    def __repr__(self) -> str:
        return f"OrtEpDevice(ep_name={self.ep_name!r}, device={self.device!r})"


# --- devices -------------------------------------------------------------------------------------

_instances: dict[type, Any] = {}
_lock = threading.Lock()


def _devices_of(cls: type[ExecutionProvider]) -> list[HardwareDevice]:
    declared = cls.hardware_devices()
    if declared is not None:
        return list(declared)
    with _lock:
        provider = _instances.get(cls)
        if provider is None:
            provider = _instances[cls] = cls()
    kind = provider.device.type
    if kind == "cpu":
        return [host_cpu()]
    if kind == "cuda":
        return [HardwareDevice("GPU", "NVIDIA", 0x10DE, provider.device.index)]
    return [HardwareDevice("GPU", "", 0, provider.device.index)]


def forget_providers_of(module_name: str) -> None:
    """Drop the providers made for devices from classes of ``module_name`` (a plugin going away)."""
    with _lock:
        for cls in [c for c in _instances if c.__module__.split(".")[0] == module_name]:
            del _instances[cls]


def get_ep_devices() -> list[OrtEpDevice]:
    """One :class:`OrtEpDevice` per device of each available provider, the default provider last."""
    from onnxplug.plugins import available_providers, get_catalog

    catalog = get_catalog()
    found = []
    for name in available_providers():
        cls = catalog.get(name)
        record = next((p for p in catalog.plugins if p.name == catalog.owner.get(cls.name)), None)
        vendor = record.distribution if record is not None else catalog.owner.get(cls.name, "")
        metadata = {"version": cls.version or (record.version if record else ""), "aliases": ",".join(cls.aliases)}
        try:
            devices = _devices_of(cls)
        except Exception as e:  # one provider failing must not hide the others; it is reported
            logs.warn(f"get_ep_devices: provider {name!r} cannot describe its devices: {type(e).__name__}: {e}")
            continue
        found.extend(OrtEpDevice(name, vendor, metadata, device) for device in devices)
    return found


# --- selection on SessionOptions -----------------------------------------------------------------

@dataclass
class Selection:
    """What a ``SessionOptions`` says about providers when a session is given none."""

    providers: list[tuple[str, dict[str, Any]]]
    policy: OrtExecutionProviderDevicePolicy | None = None
    delegate: Callable[..., Sequence[OrtEpDevice]] | None = None


def add_provider_for_devices(options: SessionOptions, ep_devices: Sequence[OrtEpDevice],
                             provider_options: Mapping[str, Any]) -> None:
    """``SessionOptions.add_provider_for_devices``: all devices must be of one provider."""
    devices = list(ep_devices)
    if not devices or not all(isinstance(d, OrtEpDevice) for d in devices):
        raise OptionValueError("add_provider_for_devices: pass one or more OrtEpDevice from get_ep_devices()")
    names = sorted({d.ep_name for d in devices})
    if len(names) != 1:
        raise OptionValueError(f"add_provider_for_devices: the devices belong to several providers "
                               f"({', '.join(names)}); add each provider with its own call")
    merged: dict[str, Any] = {}
    for d in devices:
        merged.update(d.ep_options)
    add_provider(options, names[0], {**merged, **dict(provider_options)})


def add_provider(options: SessionOptions, name: str, provider_options: Mapping[str, Any]) -> None:
    """``SessionOptions.add_provider``: append a provider with its options to the selection."""
    selection = _selection(options)
    if selection.policy is not None or selection.delegate is not None:
        raise OptionValueError(f"add_provider({name!r}): these options already select providers by policy")
    selection.providers.append((str(name), dict(provider_options)))


def set_policy(options: SessionOptions, policy: Any) -> None:
    """``SessionOptions.set_provider_selection_policy``."""
    try:
        chosen = OrtExecutionProviderDevicePolicy(int(policy))
    except (TypeError, ValueError):
        raise OptionValueError(f"set_provider_selection_policy: {policy!r} is not an "
                               f"OrtExecutionProviderDevicePolicy") from None
    selection = _selection(options)
    if selection.providers:
        raise OptionValueError("set_provider_selection_policy: these options already name providers")
    selection.policy, selection.delegate = chosen, None


def set_delegate(options: SessionOptions, delegate: Callable[..., Sequence[OrtEpDevice]]) -> None:
    """``SessionOptions.set_provider_selection_policy_delegate``."""
    if not callable(delegate):
        raise OptionValueError(f"set_provider_selection_policy_delegate: {delegate!r} is not callable")
    selection = _selection(options)
    if selection.providers:
        raise OptionValueError("set_provider_selection_policy_delegate: these options already name providers")
    selection.policy, selection.delegate = None, delegate


def has_providers(options: SessionOptions) -> bool:
    """``SessionOptions.has_providers``: whether the options select providers on their own."""
    selection = options.__dict__.get("_ep_selection")
    return selection is not None and bool(selection.providers or selection.policy is not None
                                          or selection.delegate is not None)


def _selection(options: SessionOptions) -> Selection:
    selection = options.__dict__.get("_ep_selection")
    if selection is None:
        selection = options._ep_selection = Selection([])
    return selection


def session_providers(options: SessionOptions, providers: Any, provider_options: Any,
                      model_metadata: Mapping[str, str]) -> tuple[Any, Any]:
    """The ``providers`` and ``provider_options`` a session is built with: its arguments when given,
    else what its options select, else ``(None, None)`` (the default provider)."""
    if not has_providers(options):
        return providers, provider_options
    if providers or provider_options:
        logs.warn("providers were passed to InferenceSession but SessionOptions already selects providers; "
                  "the session uses only those passed to InferenceSession", stacklevel=5)
        return providers, provider_options
    selection: Selection = options._ep_selection
    if selection.providers:
        return [(name, dict(opts)) for name, opts in selection.providers], None
    devices = get_ep_devices()
    if selection.delegate is not None:
        chosen = list(selection.delegate(devices, dict(model_metadata), {}, len(devices)))
        if not chosen or not all(isinstance(d, OrtEpDevice) for d in chosen):
            raise OptionValueError("the provider selection delegate must return one or more OrtEpDevice")
    else:
        kind = _POLICY_DEVICE[selection.policy or OrtExecutionProviderDevicePolicy.DEFAULT]
        chosen = [d for d in devices if d.device.type == kind][:1]
    from onnxplug.plugins import DEFAULT_PROVIDER

    picked: list[tuple[str, dict[str, Any]]] = []
    for device in chosen:
        if device.ep_name not in [n for n, _ in picked]:
            picked.append((device.ep_name, device.ep_options))
    if DEFAULT_PROVIDER not in [n for n, _ in picked]:
        picked.append((DEFAULT_PROVIDER, {}))
    return picked, None


# --- graph assignment ----------------------------------------------------------------------------

class OrtEpAssignedNode:
    """A node and the provider that runs it, as onnxruntime's ``OrtEpAssignedNode``; ``declined``
    (onnxplug's addition) holds the :class:`~onnxplug.provider.Decline` of each provider offered
    the node before the one that runs it."""

    def __init__(self, name: str, op_type: str, domain: str, declined: Sequence[Any] = ()) -> None:
        self.name = name
        self.op_type = op_type
        self.domain = domain
        self.declined = tuple(declined)

    def __repr__(self) -> str:
        return f"OrtEpAssignedNode(name={self.name!r}, op_type={self.op_type!r}, domain={self.domain!r})"


class OrtEpAssignedSubgraph:
    """Nodes that one provider runs as one kernel (one node, or a fused group), as onnxruntime's
    ``OrtEpAssignedSubgraph``."""

    def __init__(self, ep_name: str, nodes: Sequence[OrtEpAssignedNode]) -> None:
        self.ep_name = ep_name
        self._nodes = list(nodes)

    def get_nodes(self) -> list[OrtEpAssignedNode]:
        """The subgraph's nodes, in execution order."""
        return list(self._nodes)

    def __repr__(self) -> str:
        return f"OrtEpAssignedSubgraph(ep_name={self.ep_name!r}, nodes={len(self._nodes)})"


def graph_assignment_info(options: SessionOptions, groups: Sequence[Group]) -> list[OrtEpAssignedSubgraph]:
    """``InferenceSession.get_provider_graph_assignment_info``: one subgraph per kernel group of the
    main graph, in execution order; needs the config entry ``session.record_ep_graph_assignment_info=1``."""
    try:
        recorded = options.get_session_config_entry(RECORD_ASSIGNMENT_KEY) == "1"
    except KeyError:
        recorded = False
    if not recorded:
        raise NotRecordedError(f"get_provider_graph_assignment_info: set the session config entry "
                               f"{RECORD_ASSIGNMENT_KEY!r} to '1' to record the assignment")
    return [OrtEpAssignedSubgraph(group.provider.name,
                                  [OrtEpAssignedNode(n.name, n.op_type, n.domain, d)
                                   for n, d in zip(group.nodes, group.declined)])
            for group in groups]
