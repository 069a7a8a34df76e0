"""``InferenceSession``: onnxruntime's Python API over the plugin runtime."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

from onnxplug import ep_devices, host_memory, logs
from onnxplug.device import CPU
from onnxplug.errors import (
    InputTypeError,
    InvalidInputError,
    InvalidOutputError,
    OptionValueError,
    OrtValueError,
    UnsupportedOptionError,
)
from onnxplug.executor import Plan, RunStats, SubgraphPlan, build_plan, run_plan
from onnxplug.feeds import check_feeds
from onnxplug.provider_specs import ProviderSpec, create_providers, options_report
from onnxplug.ir import Graph, Model, ModelSource, ValueInfo, load_model
from onnxplug.ir.free_dims import input_dim_names, override_free_dimensions
from onnxplug.kernel import Kernel, KernelContext
from onnxplug.options import RunOptions, SessionOptions, _refuse_call
from onnxplug.ort_value import OrtValue, parse_device
from onnxplug.partitioner import Group, fused_subgraph, partition

if TYPE_CHECKING:
    from onnxplug.io_binding import IOBinding

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
    """Which provider runs a node."""

    node_name: str
    op_type: str
    provider: str


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
    """Load a model, partition it across providers and run it, as ``onnxruntime.InferenceSession``."""

    def __init__(self, path_or_bytes: ModelSource, sess_options: SessionOptions | None = None,
                 providers: Sequence[ProviderSpec] | None = None,
                 provider_options: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any) -> None:
        if kwargs:
            raise UnsupportedOptionError(f"InferenceSession does not support argument(s) {', '.join(kwargs)}")
        self._source = path_or_bytes
        self._model: Model = load_model(path_or_bytes)
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._fix_free_dimensions()
        # read once, as onnxruntime copies its options at creation
        self._memory_arena = bool(self._options.enable_cpu_mem_arena) and host_memory.enable_arena()
        self._trim_after_run = not self._options.enable_cpu_mem_arena
        self._profile_lock = threading.Lock()
        self._profile_events: list[dict[str, Any]] = []
        self._profile_start_ns = time.time_ns()
        self._profile_origin = time.perf_counter()
        with logs.session_severity(self._options.log_severity_level):
            self._build(providers, provider_options)

    # --- construction ---------------------------------------------------------------------------

    def _fix_free_dimensions(self) -> None:
        """Apply ``add_free_dimension_override_by_name``; a name no input has is an error."""
        sizes = self._options.free_dimension_overrides
        if not sizes:
            return
        known = input_dim_names(self._model.graph)
        unknown = sorted(set(sizes) - known)
        if unknown:
            raise OptionValueError(
                f"{self._model.source}: add_free_dimension_override_by_name names {', '.join(map(repr, unknown))}, "
                f"which no input of the model has; its inputs' symbolic dimensions: "
                f"{', '.join(sorted(known)) or 'none'}")
        override_free_dimensions(self._model.graph, sizes)

    def _build(self, providers: Sequence[ProviderSpec] | None,
               provider_options: Sequence[Mapping[str, Any]] | None) -> None:
        providers, provider_options = ep_devices.session_providers(
            self._options, providers, provider_options, self._model.metadata_props)
        self._providers = create_providers(providers, provider_options, self._options)
        graph = self._model.graph
        level = int(self._options.graph_optimization_level)
        if level > 0:
            from onnxplug.optimizer import optimize_model

            optimize_model(self._model, level, self._providers)
        if self._options.optimized_model_filepath:
            import onnx

            onnx.save_model(self._model.to_proto(), self._options.optimized_model_filepath)
        self._plan, self._groups = self._plan_graph(graph, ())
        self._inputs = [vi for vi in graph.inputs]
        self._input_types = {vi.name: vi.type for vi in graph.inputs}
        self._defaults = {vi.name: graph.initializers[vi.name] for vi in graph.inputs
                          if vi.name in graph.initializers}

    def _plan_graph(self, graph: Graph, outer: Sequence[str]) -> tuple[Plan, list[Group]]:
        groups = partition(graph, self._providers, fallback_disabled=self._options.fallback_disabled,
                           source=self._model.source)
        threads = int(self._options.intra_op_num_threads)
        fed = {vi.name for vi in graph.inputs}
        constants = {name: value for name, value in graph.initializers.items() if name not in fed}

        def make_kernel(group: Group) -> Kernel:
            context = KernelContext(group.provider, threads, self._compile_subgraph, constants)
            if group.fused:
                return group.provider.compile(fused_subgraph(group, graph), context)
            return group.provider.create_kernel(group.nodes[0], context)

        return build_plan(graph, groups, make_kernel, outer), groups

    def _compile_subgraph(self, graph: Graph) -> SubgraphPlan:
        plan, _ = self._plan_graph(graph, graph.outer_scope_reads())
        return SubgraphPlan(plan, graph)

    # --- onnxruntime's API ------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name in _UNIMPLEMENTED_METHODS:
            return functools.partial(_refuse_call, f"InferenceSession.{name}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _wanted_outputs(self, output_names: Sequence[str] | None) -> list[str]:
        outputs = [vi.name for vi in self._model.graph.outputs]
        wanted = list(output_names) if output_names else outputs
        for name in wanted:
            if name not in outputs:
                raise InvalidOutputError(f"model {self._model.source}: {name!r} is not an output "
                                         f"(outputs: {', '.join(outputs)})")
        return wanted

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = None) -> list[Any]:
        """Run the model and return the requested outputs (all when ``output_names`` is None).
        Feeds are taken as onnxruntime takes them (:mod:`onnxplug.feeds`): numpy arrays, lists,
        :class:`OrtValue` (device values are copied to the host)."""
        wanted = self._wanted_outputs(output_names)
        feeds = self._check_feeds(input_feed)
        stats = RunStats() if self._options.enable_profiling else None
        result = run_plan(self._plan, feeds, None, stats)
        if stats is not None:
            self._record_profile(stats)
        outputs = [_own_memory(result[n]) for n in wanted]
        del result, feeds
        if self._trim_after_run:
            host_memory.release_free_memory()
        return outputs

    def _check_feeds(self, input_feed: Mapping[str, Any]) -> dict[str, Any]:
        return check_feeds(self._model.source, self._input_types, self._defaults, input_feed)

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
                raise InputTypeError(f"model {self._model.source}: run_with_ort_values takes OrtValues, "
                                     f"input {name!r} is a {type(value).__name__}")
        wanted = self._wanted_outputs(output_names)
        types = {vi.name: vi.type for vi in self._model.graph.outputs}
        devices = {p.device for p in self._providers} - {CPU}
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
        self._wanted_outputs(output_names)
        self._check_feeds(input_feed)
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
            provider = next((p for p in self._providers if p.device == device), None)
            if provider is None:
                devices = ", ".join(sorted({str(p.device) for p in self._providers}))
                raise OrtValueError(f"create_ortvalue_from_shape_and_type: no provider of this session runs on "
                                    f"{str(device)!r} (devices: {devices})")
        return OrtValue._allocate(shape, element_type, provider, "create_ortvalue_from_shape_and_type")

    def disable_fallback(self) -> None:
        """onnxruntime's switch for retrying a failed run on other providers: this runtime never
        retries, which is what disabling asks for (``enable_fallback`` is refused)."""

    def io_binding(self) -> IOBinding:
        """An IOBinding to feed device values and keep outputs on their device."""
        from onnxplug.io_binding import IOBinding

        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: RunOptions | None = None) -> None:
        """Run with the inputs and output devices of ``iobinding``; read results from it."""
        from onnxplug.io_binding import run_with_iobinding

        run_with_iobinding(self, iobinding, run_options)

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs, without initializers that feeds may override."""
        return [_node_arg(vi) for vi in self._inputs if vi.name not in self._defaults]

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Inputs that also have an initializer, used when not fed."""
        return [_node_arg(vi) for vi in self._inputs if vi.name in self._defaults]

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs."""
        return [_node_arg(vi) for vi in self._model.graph.outputs]

    def get_modelmeta(self) -> ModelMetadata:
        """The model's metadata."""
        m = self._model
        return ModelMetadata(m.producer_name, m.graph.name, m.domain, m.doc_string,
                             m.graph.doc_string, m.model_version, dict(m.metadata_props))

    def get_providers(self) -> list[str]:
        """The providers this session uses, in priority order (the default last)."""
        return [p.name for p in self._providers]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """Each provider's options, defaults filled in, as strings (onnxruntime's form)."""
        return options_report(self._providers)

    def set_providers(self, providers: Sequence[ProviderSpec] | None = None,
                      provider_options: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Re-plan the session for other providers, from the model as loaded (optimizations
        depend on the providers, so they are not stacked on the previous ones)."""
        self._model = load_model(self._source)
        with logs.session_severity(self._options.log_severity_level):
            self._build(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        """The options the session was created with."""
        return self._options

    def get_provider_graph_assignment_info(self) -> list[ep_devices.OrtEpAssignedSubgraph]:
        """Each kernel's nodes and provider (config entry ``session.record_ep_graph_assignment_info=1``)."""
        return ep_devices.graph_assignment_info(self)

    def get_node_assignments(self) -> list[NodeAssignment]:
        """One record per node, in execution order, naming the provider that runs it."""
        return [NodeAssignment(n.name, n.op_type, g.provider.name) for g in self._groups for n in g.nodes]

    def end_profiling(self) -> str:
        """Write the profile (Chrome trace format, as onnxruntime's) and return its path."""
        if not self._options.enable_profiling:
            return ""
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{self._options.profile_file_prefix}_{stamp}_{os.getpid()}.json"
        with self._profile_lock:
            events, self._profile_events = self._profile_events, []
        with open(path, "w", encoding="utf-8") as f:
            json.dump(events, f)
        return path

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started, in ns since the epoch."""
        return self._profile_start_ns

    def _record_profile(self, stats: RunStats) -> None:
        events = [{"cat": "Node" if kind != "copy" else "Copy", "name": name, "ph": "X", "pid": os.getpid(),
                   "tid": threading.get_ident(), "ts": (t0 - self._profile_origin) * 1e6, "dur": dur * 1e6,
                   "args": {"op_name": op_type, "provider": provider, "kind": kind}}
                  for name, kind, op_type, provider, t0, dur in stats.events]
        with self._profile_lock:
            self._profile_events.extend(events)


def _own_memory(value: Any) -> Any:
    """A result that shares no memory with a feed or a weight (Reshape and friends return views)."""
    if isinstance(value, np.ndarray) and value.base is not None:
        return value.copy()
    if isinstance(value, list):
        return [_own_memory(v) for v in value]
    return value
