"""``InferenceSession``: onnxruntime's Python API over the plugin runtime.

The session is a facade: it keeps the options, the profile and the memory policy, and hands the
work to an :class:`~onnxplug.engine.Engine` (load -> optimise -> partition -> plan -> run), which
``set_providers`` replaces. IOBinding reaches the engine through :attr:`InferenceSession.engine`.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from onnxplug import cancellation, ep_devices, host_memory, logs
from onnxplug.device import CPU
from onnxplug.engine import Engine
from onnxplug.errors import InputTypeError, InvalidInputError, OrtValueError, UnsupportedOptionError
from onnxplug.errors import refuse_call as _refuse_call
from onnxplug.io_binding import IOBinding, run_with_iobinding
from onnxplug.ir import ModelSource, ValueInfo
from onnxplug.options import RunOptions, SessionOptions
from onnxplug.ort_value import OrtValue, parse_device
from onnxplug.profiling import Profile
from onnxplug.provider_specs import ProviderSpec, options_report

# onnxruntime's InferenceSession methods this runtime does not implement: calling one raises
# UnsupportedOptionError naming it (rather than AttributeError, or a silent no-op)
_UNIMPLEMENTED_METHODS = ("run_with_ortvaluevector", "get_input_memory_infos", "get_output_memory_infos",
                          "get_input_epdevices", "get_tuning_results",
                          "set_tuning_results", "set_ep_dynamic_options", "release_captured_graph",
                          "enable_fallback")


class NodeArg(NamedTuple):
    """An input or output of the model, as onnxruntime's NodeArg: ``type`` like ``'tensor(float)'``."""

    name: str
    type: str
    shape: list[Any]


class NodeAssignment(NamedTuple):
    """Which provider runs a node, and why each provider offered it before declined it."""

    node_name: str
    op_type: str
    provider: str
    #: :class:`~onnxplug.provider.Decline` (``provider``, ``kind``, ``reason``) of each earlier provider.
    declined: tuple = ()


@dataclass(frozen=True)
class ModelMetadata:
    """The model's metadata, as onnxruntime's ``ModelMetadata``."""

    producer_name: str
    graph_name: str
    domain: str
    description: str
    graph_description: str
    version: int
    custom_metadata_map: dict[str, str]


def _node_arg(vi: ValueInfo) -> NodeArg:
    t = vi.type
    if t is None:
        return NodeArg(vi.name, "unknown", [])
    return NodeArg(vi.name, t.ort_string(), list(t.shape) if t.shape is not None else [])


class InferenceSession:
    """Load a model, partition it across providers and run it, as ``onnxruntime.InferenceSession``:
    the API over an :class:`~onnxplug.engine.Engine`, which does the work."""

    def __init__(self, path_or_bytes: ModelSource, sess_options: SessionOptions | None = None,
                 providers: Sequence[ProviderSpec] | None = None,
                 provider_options: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any) -> None:
        if kwargs:
            raise UnsupportedOptionError(f"InferenceSession does not support argument(s) {', '.join(kwargs)}")
        self._source = path_or_bytes
        self._options = sess_options if sess_options is not None else SessionOptions()
        # read once, as onnxruntime copies its options at creation
        self._memory_arena = bool(self._options.enable_cpu_mem_arena) and host_memory.enable_arena()
        self._trim_after_run = not self._options.enable_cpu_mem_arena
        self._profile = Profile()
        with logs.session_severity(self._options.log_severity_level):
            self._engine = Engine(path_or_bytes, self._options, providers, provider_options, self._profile)

    @property
    def engine(self) -> Engine:
        """The engine that loads, plans and runs this session's model (onnxplug's own; IOBinding
        runs through it)."""
        return self._engine

    # --- onnxruntime's API ------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name in _UNIMPLEMENTED_METHODS:
            return functools.partial(_refuse_call, f"InferenceSession.{name}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = None) -> list[Any]:
        """Run the model and return the requested outputs (all when ``output_names`` is None).
        Feeds are taken as onnxruntime takes them (:mod:`onnxplug.feeds`): numpy arrays, lists,
        :class:`OrtValue` (device values are copied to the host)."""
        engine = self._engine
        wanted = engine.check_outputs(output_names)
        feeds = engine.check_feeds(input_feed)
        token = cancellation.current_run_options.set(run_options)
        try:
            cancellation.check_terminate()
            outputs = engine.run(feeds, wanted)
        finally:
            cancellation.current_run_options.reset(token)
        if self._trim_after_run:
            host_memory.release_free_memory()
        return outputs

    def run_with_ort_values(self, output_names: Sequence[str] | None, input_dict_ort_values: Mapping[str, OrtValue],
                            run_options: RunOptions | None = None) -> list[OrtValue]:
        """Run on OrtValue feeds and return the requested outputs as host OrtValues. A device OrtValue
        of a device that a provider of this session runs on is fed there as is (no host round trip);
        one of another device is copied to the host."""
        if not isinstance(input_dict_ort_values, Mapping):
            raise InvalidInputError(f"input_dict_ort_values must be a dict of input name to OrtValue, "
                                    f"not {type(input_dict_ort_values).__name__}")
        for name, value in input_dict_ort_values.items():
            if not isinstance(value, OrtValue):
                raise InputTypeError(f"model {self._engine.source}: run_with_ort_values takes OrtValues, "
                                     f"input {name!r} is a {type(value).__name__}")
        wanted = self._engine.check_outputs(output_names)
        types = self._engine.output_types
        devices = set(self._engine.devices) - {CPU}
        if not any(v.device in devices for v in input_dict_ort_values.values()):
            results = self.run(wanted, input_dict_ort_values, run_options)
            return [OrtValue(r, value_type=types[n]) for n, r in zip(wanted, results)]
        binding = self.io_binding()
        for name, value in input_dict_ort_values.items():
            if value.device in devices:
                binding.bind_ortvalue_input(name, value)
            else:
                binding.bind_cpu_input(name, value)
        binding.run(run_options)
        by_name = dict(zip(types, binding.get_outputs()))
        return [by_name[n] for n in wanted]

    def run_async(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
                  callback: Callable[[list[Any], Any, str], None], user_data: Any,
                  run_options: RunOptions | None = None) -> None:
        """Run on another thread and call ``callback(results, user_data, error)`` from it, with the
        outputs and ``""``, or ``[]`` and the error's message. Bad output names or feeds raise here."""
        self._engine.check_outputs(output_names)
        self._engine.check_feeds(input_feed)
        feeds = dict(input_feed)  # the caller may reuse its dict while the run waits

        def work() -> None:
            try:
                results = self.run(output_names, feeds, run_options)
            except Exception as e:  # reported to the callback, as onnxruntime's status string
                callback([], user_data, f"{type(e).__name__}: {e}")
                return
            callback(results, user_data, "")

        threading.Thread(target=work, name="onnxplug-run-async", daemon=True).start()

    def create_ortvalue_from_shape_and_type(self, shape: Sequence[int], element_type: Any, device_type: str,
                                            device_id: int = 0, vendor_id: int = -1) -> OrtValue:
        """An uninitialised tensor on the host, or from the allocator of this session's provider of the
        device (:class:`~onnxplug.errors.OrtValueError` when none of its providers runs there)."""
        if vendor_id != -1:
            raise UnsupportedOptionError("InferenceSession.create_ortvalue_from_shape_and_type: vendor_id is not "
                                         "implemented by onnxplug (name the device with device_type and device_id)")
        device = parse_device(device_type, device_id)
        provider = None
        if device != CPU:
            provider = self._engine.provider_for(device)
            if provider is None:
                devices = ", ".join(sorted(map(str, self._engine.devices)))
                raise OrtValueError(f"create_ortvalue_from_shape_and_type: no provider of this session runs on "
                                    f"{str(device)!r} (devices: {devices})")
        return OrtValue._allocate(shape, element_type, provider, "create_ortvalue_from_shape_and_type")

    def disable_fallback(self) -> None:
        """onnxruntime's switch for retrying a failed run on other providers: this runtime never
        retries, which is what disabling asks for (``enable_fallback`` is refused)."""

    def io_binding(self) -> IOBinding:
        """An IOBinding to feed device values and keep outputs on their device."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: RunOptions | None = None) -> None:
        """Run with the inputs and output devices of ``iobinding``; read results from it."""
        run_with_iobinding(self, iobinding, run_options)

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs, without initializers that feeds may override."""
        return [_node_arg(vi) for vi in self._engine.inputs if vi.name not in self._engine.defaults]

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Inputs that also have an initializer, used when not fed."""
        return [_node_arg(vi) for vi in self._engine.inputs if vi.name in self._engine.defaults]

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs."""
        return [_node_arg(vi) for vi in self._engine.model.graph.outputs]

    def get_modelmeta(self) -> ModelMetadata:
        """The model's metadata."""
        m = self._engine.model
        return ModelMetadata(m.producer_name, m.graph.name, m.domain, m.doc_string,
                             m.graph.doc_string, m.model_version, dict(m.metadata_props))

    def get_providers(self) -> list[str]:
        """The providers this session uses, in priority order (the default last)."""
        return [p.name for p in self._engine.providers]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """Each provider's options, defaults filled in, as strings (onnxruntime's form)."""
        return options_report(self._engine.providers)

    def set_providers(self, providers: Sequence[ProviderSpec] | None = None,
                      provider_options: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Re-plan the session for other providers, from the model as loaded (optimizations
        depend on the providers, so they are not stacked on the previous ones)."""
        with logs.session_severity(self._options.log_severity_level):
            self._engine = Engine(self._source, self._options, providers, provider_options, self._profile)

    def get_session_options(self) -> SessionOptions:
        """The options the session was created with."""
        return self._options

    def get_provider_graph_assignment_info(self) -> list[ep_devices.OrtEpAssignedSubgraph]:
        """Each kernel's nodes and provider (config entry ``session.record_ep_graph_assignment_info=1``)."""
        return ep_devices.graph_assignment_info(self._options, self._engine.groups)

    def get_node_assignments(self) -> list[NodeAssignment]:
        """One record per node, in execution order, naming the provider that runs it."""
        return [NodeAssignment(n.name, n.op_type, g.provider.name, tuple(d))
                for g in self._engine.groups for n, d in zip(g.nodes, g.declined)]

    def end_profiling(self) -> str:
        """Write the profile (Chrome trace format, as onnxruntime's) and return its path."""
        if not self._options.enable_profiling:
            return ""
        return self._profile.end(self._options.profile_file_prefix)

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started, in ns since the epoch."""
        return self._profile.start_ns
