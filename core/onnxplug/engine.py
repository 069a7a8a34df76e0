"""The engine behind :class:`~onnxplug.session.InferenceSession`: load -> optimise -> partition ->
plan -> run.

An engine is built for one model and one provider set (``set_providers`` builds a new one). Its
plan does not change after construction; IOBinding reaches it only through public operations:
:meth:`Engine.check_feeds`, :meth:`Engine.plan_for` (a plan variant for device-bound inputs and
outputs, cached by binding layout), :meth:`Engine.run_bound`, :meth:`Engine.provider_for`.
Profiled runs report to the session's :class:`~onnxplug.profiling.Profile`.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from onnxplug import allocation_limit, ep_devices, logs
from onnxplug.device import CPU, Device
from onnxplug.errors import InvalidOutputError, OptionValueError
from onnxplug.executor import Plan, RunStats, SubgraphPlan, bind_plan, build_plan, located, run_plan
from onnxplug.feeds import check_feeds
from onnxplug.ir import Graph, Model, ModelSource, ValueInfo, ValueType, load_model
from onnxplug.ir.free_dims import input_dim_names, override_free_dimensions
from onnxplug.kernel import Kernel, KernelContext
from onnxplug.options import SessionOptions
from onnxplug.partitioner import Group, fused_subgraph, partition
from onnxplug.plugins import get_catalog
from onnxplug.profiling import Profile
from onnxplug.provider import ExecutionProvider
from onnxplug.provider_specs import ProviderSpec, create_providers


def _outer_constants(graph: Graph, names: Sequence[str]) -> dict[str, Any]:
    """The values among ``names`` (a subgraph's outer-scope reads) that an enclosing graph holds as
    constant initializers (not also its inputs, which a feed may override): a body's kernels may
    treat them as constants as the enclosing graph's kernels do."""
    found: dict[str, Any] = {}
    defined: dict[int, set[str]] = {}  # each enclosing graph's names, gathered once
    for name in names:
        g = graph.parent
        while g is not None:
            if name in g.initializers:
                if all(vi.name != name for vi in g.inputs):
                    found[name] = g.initializers[name]
                break
            names_of_g = defined.get(id(g))
            if names_of_g is None:
                names_of_g = defined[id(g)] = g.defined_names()
            if name in names_of_g:
                break
            g = g.parent
    return found


@dataclass(frozen=True)
class BoundPlan:
    """A plan for inputs fed on devices and outputs left there (:meth:`Engine.plan_for`)."""

    plan: Plan
    inputs_on: Mapping[str, Device]

    def produced_on_host(self, output: str) -> bool:
        """Whether the run returns ``output`` as a host value (a host node computed it, or its copy
        to the host stays)."""
        return self.plan.outputs[output] == output


class Engine:
    """One model planned for one set of providers, and the runs of that plan."""

    def __init__(self, source: ModelSource, options: SessionOptions, providers: Sequence[ProviderSpec] | None,
                 provider_options: Sequence[Mapping[str, Any]] | None, profile: Profile) -> None:
        self.options = options
        self.profile = profile
        #: bytes one node may allocate (session.onnxplug.max_allocation_bytes; 0: no limit)
        self.allocation_limit = allocation_limit.limit_of(options._config)
        t0 = time.perf_counter()
        self.model: Model = load_model(source, computes=default_provider_computes)
        t1 = time.perf_counter()
        self.source = self.model.source
        self._fix_free_dimensions()
        providers, provider_options = ep_devices.session_providers(
            options, providers, provider_options, self.model.metadata_props)
        self.providers: list[ExecutionProvider] = create_providers(providers, provider_options, options)
        graph = self.model.graph
        level = int(options.graph_optimization_level)
        if level > 0:
            from onnxplug.optimizer import optimize_model

            optimize_model(self.model, level, self.providers)
        if options.optimized_model_filepath:
            import onnx

            onnx.save_model(self.model.to_proto(), options.optimized_model_filepath)
        #: the groups of each If/Loop/Scan body, as the bodies are planned
        self.subgraph_groups: list[tuple[Graph, list[Group]]] = []
        self.plan, self.groups = self._plan_graph(graph, ())
        self.inputs: list[ValueInfo] = list(graph.inputs)
        self.input_types: dict[str, ValueType | None] = {vi.name: vi.type for vi in graph.inputs}
        self.output_types: dict[str, ValueType | None] = {vi.name: vi.type for vi in graph.outputs}
        #: overridable initializers: inputs that also have a value, used when not fed
        self.defaults: dict[str, Any] = {vi.name: graph.initializers[vi.name] for vi in graph.inputs
                                         if vi.name in graph.initializers}
        self._bound: dict[tuple, BoundPlan] = {}
        self._bound_lock = threading.Lock()
        if options.enable_profiling:
            loading = "model_loading_uri" if isinstance(source, (str, os.PathLike)) else "model_loading_array"
            profile.session_event(loading, t0, t1)
            profile.session_event("session_initialization", t1, time.perf_counter())

    # --- construction ---------------------------------------------------------------------------

    def _fix_free_dimensions(self) -> None:
        """Apply ``add_free_dimension_override_by_name``; a name no input has is an error."""
        sizes = self.options.free_dimension_overrides
        if not sizes:
            return
        known = input_dim_names(self.model.graph)
        unknown = sorted(set(sizes) - known)
        if unknown:
            raise OptionValueError(
                f"{self.source}: add_free_dimension_override_by_name names {', '.join(map(repr, unknown))}, "
                f"which no input of the model has; its inputs' symbolic dimensions: "
                f"{', '.join(sorted(known)) or 'none'}")
        override_free_dimensions(self.model.graph, sizes)

    def _plan_graph(self, graph: Graph, outer: Sequence[str]) -> tuple[Plan, list[Group]]:
        groups = partition(graph, self.providers, fallback_disabled=self.options.fallback_disabled,
                           source=self.source)
        self._warn_fallback(graph, groups)
        threads = int(self.options.intra_op_num_threads)
        fed = {vi.name for vi in graph.inputs}
        constants = {name: value for name, value in graph.initializers.items() if name not in fed}
        constants.update(_outer_constants(graph, outer))

        def make_kernel(group: Group) -> Kernel:
            context = KernelContext(group.provider, threads, self._compile_subgraph, constants)
            if group.fused:
                t0 = time.perf_counter()
                kernel = group.provider.compile(fused_subgraph(group, graph), context)
                if self.options.enable_profiling:
                    self.profile.session_event("kernel_compilation", t0, time.perf_counter(),
                                               provider=group.provider.name, node=group.name,
                                               op_name="+".join(n.op_type for n in group.nodes))
                return kernel
            return group.provider.create_kernel(group.nodes[0], context)

        plan = build_plan(graph, groups, make_kernel, outer)
        if self.allocation_limit:
            self._guard_steps(graph, plan, groups)
        return plan, groups

    def _guard_steps(self, graph: Graph, plan: Plan, groups: Sequence[Group]) -> None:
        """Give the steps that could allocate past the limit their check (allocation_limit)."""
        kernel_steps = [s for s in plan.steps if s.kernel is not None]
        for step, group in zip(kernel_steps, groups):
            device = step.provider.device
            to_host = step.provider.data_transfer.to_host if device != CPU else None
            step.guard = allocation_limit.guard_for(str(self.source), graph, group.nodes, self.allocation_limit,
                                                    to_host)

    def _warn_fallback(self, graph: Graph, groups: Sequence[Group]) -> None:
        """A node the first provider declined is a warning (``log_severity_level`` decides), with
        the first reasons; ``get_node_assignments()`` has them all."""
        if len(self.providers) < 2:
            return
        first = self.providers[0].name
        fell = [(n, g.provider.name, d) for g in groups for n, d in zip(g.nodes, g.declined)
                if g.provider.name != first]
        if not fell:
            return
        where = f"subgraph {graph.name!r} of " if graph.parent is not None else ""
        shown = "; ".join(f"{n.op_type} {n.name!r} -> {p} ({d[0] if d else 'not offered'})"
                          for n, p, d in fell[:3])
        more = f"; and {len(fell) - 3} more" if len(fell) > 3 else ""
        logs.warn(f"{where}model {self.source}: provider {first!r} declined {len(fell)} node(s), which run "
                  f"on later providers: {shown}{more} (get_node_assignments() or `onnxplug run "
                  f"--explain` give every reason)", stacklevel=5)

    def _compile_subgraph(self, graph: Graph) -> SubgraphPlan:
        plan, groups = self._plan_graph(graph, graph.outer_scope_reads())
        self.subgraph_groups.append((graph, groups))
        scan_check = None
        owner = next((n for n in graph.parent.nodes if any(g is graph for g in n.subgraphs)), None) \
            if graph.parent is not None else None
        if self.allocation_limit and owner is not None and owner.op_type == "Loop":
            scan_check = allocation_limit.ScanCheck(str(self.source), owner, self.allocation_limit)
        return SubgraphPlan(plan, graph, scan_check)

    # --- operations ---------------------------------------------------------------------------------

    @property
    def output_names(self) -> list[str]:
        """The model's outputs, in order."""
        return list(self.output_types)

    def check_outputs(self, output_names: Sequence[str] | None) -> list[str]:
        """The outputs a run returns: ``output_names``, or all when None or empty."""
        outputs = self.output_names
        wanted = list(output_names) if output_names else outputs
        for name in wanted:
            if name not in outputs:
                raise InvalidOutputError(f"model {self.source}: {name!r} is not an output "
                                         f"(outputs: {', '.join(outputs)})")
        return wanted

    def check_feeds(self, input_feed: Mapping[str, Any]) -> dict[str, Any]:
        """The host feeds of one run by input name (:func:`onnxplug.feeds.check_feeds`)."""
        return check_feeds(self.source, self.input_types, self.defaults, input_feed)

    def run(self, feeds: Mapping[str, Any], wanted: Sequence[str]) -> list[Any]:
        """Run on checked host feeds; the ``wanted`` outputs share no memory with feeds or weights."""
        result = self._run(self.plan, feeds)
        return [own_memory(result[n]) for n in wanted]

    def provider_for(self, device: Device) -> ExecutionProvider | None:
        """This engine's (first) provider running on ``device``, or None."""
        return next((p for p in self.providers if p.device == device), None)

    @property
    def devices(self) -> list[Device]:
        """The devices of this engine's providers, in provider order, each once."""
        return list(dict.fromkeys(p.device for p in self.providers))

    def plan_for(self, bound_inputs: Mapping[str, Device], bound_outputs: Mapping[str, Device]) -> BoundPlan:
        """The plan for inputs fed on devices and outputs left on them (``name -> device``; host
        entries change nothing): copies the binding makes unnecessary are left out."""
        inputs_on = {n: d for n, d in bound_inputs.items() if d != CPU}
        outputs_on = {n: d for n, d in bound_outputs.items() if d != CPU}
        key = (frozenset(inputs_on.items()), frozenset(outputs_on.items()))
        with self._bound_lock:
            bound = self._bound.get(key)
            if bound is None:
                plan = bind_plan(self.plan, inputs_on, outputs_on, self._transfer_provider)
                bound = self._bound[key] = BoundPlan(plan, inputs_on)
        return bound

    def run_bound(self, bound: BoundPlan, host_feeds: Mapping[str, Any],
                  device_feeds: Mapping[str, Any]) -> dict[str, Any]:
        """Run a :meth:`plan_for` plan on host feeds and device feeds (by input name, on the devices
        the plan was made for); returns every output by name, device values as they are."""
        feeds: dict[Any, Any] = dict(host_feeds)
        for name, value in device_feeds.items():
            feeds[located(name, bound.inputs_on[name])] = value
        return self._run(bound.plan, feeds)

    def _transfer_provider(self, device: Device) -> ExecutionProvider:
        provider = self.provider_for(device)
        if provider is None:
            raise ValueError(f"no provider of this session runs on {device}")
        return provider

    def _run(self, plan: Plan, feeds: Mapping[Any, Any]) -> dict[str, Any]:
        if not self.options.enable_profiling:
            return run_plan(plan, feeds)
        stats = RunStats()
        t0 = time.perf_counter()
        result = run_plan(plan, feeds, None, stats)
        self.profile.session_event("model_run", t0, time.perf_counter())
        self.profile.record(stats)
        return result


def own_memory(value: Any) -> Any:
    """A result that shares no memory with a feed or a weight (Reshape and friends return views)."""
    if isinstance(value, np.ndarray) and value.base is not None:
        return value.copy()
    if isinstance(value, list):
        return [own_memory(v) for v in value]
    return value


def default_provider_computes(domain: str, op_type: str, version: int) -> bool:
    """Whether the catalog's default provider has a kernel for the op (the loader keeps calls to
    such functions of the project's domain as nodes)."""
    registry = get_catalog().default_provider()().kernel_registry
    return registry is not None and registry.resolve(domain, op_type, version) is not None
