"""``InferenceSession``: onnxruntime's Python API over the plugin runtime."""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence, Union

import numpy as np

from onnxplug import host_memory
from onnxplug.errors import (
    InputShapeError,
    InputTypeError,
    InvalidInputError,
    InvalidOutputError,
    MissingInputError,
    OptionValueError,
    ProviderUnavailableError,
    UnknownInputError,
    UnsupportedOptionError,
)
from onnxplug.executor import Plan, RunStats, build_plan, run_compiled, run_plan
from onnxplug.ir import Graph, Model, ModelSource, ValueInfo, ValueType, elem_type_of, load_model
from onnxplug.ir.free_dims import input_dim_names, override_free_dimensions
from onnxplug.kernel import Kernel, KernelContext, SubgraphRunner
from onnxplug.options import RunOptions, SessionOptions
from onnxplug.partitioner import Group, fused_subgraph, partition
from onnxplug.plugins import DEFAULT_PROVIDER, get_catalog
from onnxplug.provider import ExecutionProvider

if TYPE_CHECKING:
    from onnxplug.io_binding import IOBinding

ProviderSpec = Union[str, tuple[str, Mapping[str, Any]]]


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

    def _compile_subgraph(self, graph: Graph) -> SubgraphRunner:
        plan, _ = self._plan_graph(graph, graph.outer_scope_reads())
        names = [vi.name for vi in graph.inputs]
        outputs = [vi.name for vi in graph.outputs]

        if outputs == list(plan.outputs):
            def runner(inputs: Sequence[Any], scope: Mapping[str, Any]) -> list[Any]:
                return list(run_compiled(plan, dict(zip(names, inputs)), scope))
        else:  # an output listed twice
            def runner(inputs: Sequence[Any], scope: Mapping[str, Any]) -> list[Any]:
                result = run_plan(plan, dict(zip(names, inputs)), scope)
                return [result[n] for n in outputs]

        return runner

    # --- onnxruntime's API ------------------------------------------------------------------------

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = None) -> list[Any]:
        """Run the model and return the requested outputs (all when ``output_names`` is None)."""
        outputs = [vi.name for vi in self._model.graph.outputs]
        wanted = list(output_names) if output_names else outputs
        for name in wanted:
            if name not in outputs:
                raise InvalidOutputError(f"model {self._model.source}: {name!r} is not an output "
                                         f"(outputs: {', '.join(outputs)})")
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
        if not isinstance(input_feed, Mapping):
            raise InvalidInputError(f"input_feed must be a dict of input name to value, "
                                    f"not {type(input_feed).__name__}")
        src = self._model.source
        known = self._input_types
        for name in input_feed:
            if name not in known:
                raise UnknownInputError(f"model {src}: {name!r} is not an input of the model "
                                        f"(inputs: {', '.join(known)})")
        feeds: dict[str, Any] = {}
        for name, declared in known.items():
            if name not in input_feed:
                if name in self._defaults:
                    feeds[name] = self._defaults[name]
                    continue
                raise MissingInputError(f"model {src}: required input {name!r} was not fed "
                                        f"(expected {_describe_type(declared)})")
            feeds[name] = _check_value(src, name, input_feed[name], declared)
        return feeds

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

    def get_provider_options(self) -> dict[str, dict[str, Any]]:
        """Each provider's options, defaults filled in."""
        return {p.name: dict(p.options) for p in self._providers}

    def set_providers(self, providers: Sequence[ProviderSpec] | None = None,
                      provider_options: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Re-plan the session for other providers, from the model as loaded (optimizations
        depend on the providers, so they are not stacked on the previous ones)."""
        self._model = load_model(self._source)
        self._build(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        """The options the session was created with."""
        return self._options

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


def create_providers(providers: Sequence[ProviderSpec] | None,
                     provider_options: Sequence[Mapping[str, Any]] | None,
                     options: SessionOptions) -> list[ExecutionProvider]:
    """Instantiate the requested providers in order, the default last unless fallback is disabled.

    An unavailable provider is skipped with a warning, or raises when fallback is disabled.
    """
    catalog = get_catalog()
    specs: list[tuple[str, Mapping[str, Any]]] = []
    for i, spec in enumerate(providers if providers is not None else [DEFAULT_PROVIDER]):
        name, opts = (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1]))
        if provider_options is not None:
            if len(provider_options) != len(providers or ()):
                raise UnsupportedOptionError("provider_options must have one entry per provider")
            opts = {**opts, **provider_options[i]}
        specs.append((catalog.resolve_name(name), opts))
    fallback_disabled = options.fallback_disabled
    if not fallback_disabled and DEFAULT_PROVIDER not in [n for n, _ in specs]:
        specs.append((DEFAULT_PROVIDER, {}))
    created: list[ExecutionProvider] = []
    threads = int(options.intra_op_num_threads)
    for name, opts in specs:
        if any(p.name == name for p in created):
            raise UnsupportedOptionError(f"provider {name!r} is listed twice")
        cls = catalog.providers[name]
        availability = cls.availability()
        if not availability:
            message = f"provider {name!r} is not available: {availability.reason}"
            if fallback_disabled:
                raise ProviderUnavailableError(message)
            warnings.warn(f"{message}; falling back to the next provider", RuntimeWarning, stacklevel=3)
            continue
        created.append(cls(opts, intra_op_num_threads=threads))
    return created


def _own_memory(value: Any) -> Any:
    """A result that shares no memory with a feed or a weight (Reshape and friends return views)."""
    if isinstance(value, np.ndarray) and value.base is not None:
        return value.copy()
    if isinstance(value, list):
        return [_own_memory(v) for v in value]
    return value


def _describe_type(t: ValueType | None) -> str:
    if t is None:
        return "a value of unknown type"
    if t.kind == "tensor":
        shape = "?" if t.shape is None else str([d if d is not None else "?" for d in t.shape])
        return f"{t.ort_string()} with shape {shape}"
    return t.ort_string()


def _check_value(src: str, name: str, value: Any, declared: ValueType | None) -> Any:
    if declared is None or declared.kind != "tensor":
        return value
    if not isinstance(value, np.ndarray):
        raise InputTypeError(f"model {src}: input {name!r} expects a numpy array "
                             f"({_describe_type(declared)}), got {type(value).__name__}")
    try:
        got = elem_type_of(value.dtype)
    except (KeyError, TypeError, ValueError):
        got = -1
    if declared.elem_type and got != declared.elem_type:
        raise InputTypeError(f"model {src}: input {name!r} expects {_describe_type(declared)}, "
                             f"got tensor({value.dtype}) with shape {list(value.shape)}")
    if declared.shape is not None:
        if value.ndim != len(declared.shape):
            raise InputShapeError(f"model {src}: input {name!r} expects rank {len(declared.shape)} "
                                  f"({_describe_type(declared)}), got rank {value.ndim} "
                                  f"with shape {list(value.shape)}")
        for axis, (want, have) in enumerate(zip(declared.shape, value.shape)):
            if isinstance(want, int) and want != have:
                raise InputShapeError(f"model {src}: input {name!r} expects dimension {axis} to be "
                                      f"{want} ({_describe_type(declared)}), got shape {list(value.shape)}")
    if value.dtype == object or value.dtype.kind in "US":
        return value.astype(object) if value.dtype.kind in "US" else value
    return value
