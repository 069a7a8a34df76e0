"""The executor: turns partitioned groups into a plan of steps with copies, and runs it.

Values that cross devices get a copy step. Each intermediate is dropped right after its last
reader (liveness), so peak memory stays close to the largest live set.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from onnxplug.device import CPU, Device
from onnxplug.errors import KernelError, OnnxplugError
from onnxplug.ir import Graph
from onnxplug.kernel import Kernel
from onnxplug.partitioner import Group
from onnxplug.plan_compiler import CompiledLoop, CompiledPlan
from onnxplug.provider import ExecutionProvider


@dataclass
class Step:
    """One entry of the plan: a kernel (one node or a fused subgraph) or a copy between devices."""

    name: str
    kind: str  # "node", "fused" or "copy"
    provider: ExecutionProvider
    inputs: list[str]
    outputs: list[str]
    kernel: Kernel | None = None
    scope: list[str] = field(default_factory=list)  # implicit (outer-scope) inputs, by original name
    scope_values: list[str] = field(default_factory=list)  # the same values as planned on this device
    to_device: Device | None = None
    release: list[str] = field(default_factory=list)
    op_type: str = ""  # for profiles: the node's op type, or "A+B+..." for a fused subgraph


@dataclass
class Plan:
    """Steps in execution order, plus where graph outputs and constants are found."""

    steps: list[Step]
    constants: dict[str, Any]
    inputs: list[str]
    outputs: dict[str, str]  # graph output name -> planned value name on the host
    outer: list[str]  # outer-scope names a subgraph plan reads
    compiled: CompiledPlan | None = field(default=None, repr=False, compare=False)

    def compile(self) -> CompiledPlan:
        """The plan as one generated function (built on first use; a race only builds it twice)."""
        if self.compiled is None:
            self.compiled = CompiledPlan(self, _copy)
        return self.compiled

    @property
    def copy_count(self) -> int:
        """How many copy steps a run executes."""
        return sum(1 for s in self.steps if s.kind == "copy")


def _located(name: str, device: Device) -> str:
    return name if device == CPU else f"{name}@{device}"


def build_plan(graph: Graph, groups: Sequence[Group], make_kernel: Callable[[Group], Kernel],
               outer: Sequence[str] = ()) -> Plan:
    """Create the kernels and place copies wherever a value crosses devices."""
    where: dict[str, set[Device]] = {}  # original name -> devices it will be available on
    home: dict[str, Device] = {}
    for vi in graph.inputs:
        home[vi.name] = CPU
    for name in [*graph.initializers, *outer]:
        home.setdefault(name, CPU)
    constants: dict[str, Any] = {n: a for n, a in graph.initializers.items()
                                 if n not in {vi.name for vi in graph.inputs}}
    steps: list[Step] = []
    transfers: dict[Device, ExecutionProvider] = {}

    def ensure_on(name: str, device: Device, provider: ExecutionProvider) -> str:
        if device != CPU:
            transfers.setdefault(device, provider)
        src = home[name]
        if src == device or device in where.setdefault(name, set()):
            return _located(name, device)
        if name in constants and src == CPU:  # copy constants once, at session creation
            constants[_located(name, device)] = transfers[device].data_transfer.to_device(constants[name])
            where[name].add(device)
            return _located(name, device)
        if src != CPU and CPU not in where[name]:
            steps.append(Step(f"copy {name} {src}->cpu", "copy", transfers[src],
                              [_located(name, src)], [name], to_device=CPU))
            where[name].add(CPU)
        if device != CPU:
            steps.append(Step(f"copy {name} cpu->{device}", "copy", transfers[device],
                              [name], [_located(name, device)], to_device=device))
            where[name].add(device)
        return _located(name, device)

    for group in groups:
        p = group.provider
        dev = p.device
        node = group.nodes[0]
        explicit = group.inputs if group.fused else node.inputs
        ins = [ensure_on(n, dev, p) if n else "" for n in explicit]
        scope = [] if group.fused else node.implicit_inputs
        scope_values = [ensure_on(n, dev, p) for n in scope]
        for out in group.outputs:
            if out:
                home[out] = dev
                if dev != CPU:
                    transfers.setdefault(dev, p)
        outs = [_located(o, dev) if o else "" for o in group.outputs]
        steps.append(Step(group.name, "fused" if group.fused else "node", p, ins, outs,
                          make_kernel(group), scope, scope_values,
                          op_type="+".join(n.op_type for n in group.nodes)))

    outputs = {}
    for vi in graph.outputs:
        outputs[vi.name] = ensure_on(vi.name, CPU, None) if home.get(vi.name, CPU) != CPU else vi.name
    _plan_releases(steps, set(outputs.values()) | set(constants))
    return Plan(steps, constants, [vi.name for vi in graph.inputs], outputs, list(outer))


def _plan_releases(steps: list[Step], keep: set[str]) -> None:
    last_use: dict[str, int] = {}
    for i, step in enumerate(steps):
        for name in [*step.inputs, *step.scope_values, *step.outputs]:
            if name:
                last_use[name] = i
    for name, i in last_use.items():
        if name not in keep:
            steps[i].release.append(name)


@dataclass
class RunStats:
    """What a run measured when asked: step timings, the peak of live intermediate bytes, and the
    bytes of all intermediates together (the peak a runtime without liveness would reach)."""

    #: (step name, kind, op type, provider, start, duration) per step run
    events: list[tuple[str, str, str, str, float, float]] = field(default_factory=list)
    peak_live_bytes: int = 0
    produced_bytes: int = 0


def _nbytes(value: Any) -> int:
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0) or 0)


def _copy(step: Step, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_copy(step, v) for v in value]
    transfer = step.provider.data_transfer
    return transfer.to_host(value) if step.to_device == CPU else transfer.to_device(np.asarray(value))


def run_plan(plan: Plan, feeds: Mapping[str, Any], scope: Mapping[str, Any] | None = None,
             stats: RunStats | None = None) -> dict[str, Any]:
    """Run the plan on ``feeds`` (and outer-scope values) and return the graph outputs by name."""
    # a top-level run: ONNX wants inf/NaN at domain edges, not numpy warnings (nested runs inherit it)
    with np.errstate(all="ignore") if scope is None else contextlib.nullcontext():
        if stats is None:
            return dict(zip(plan.outputs, run_compiled(plan, feeds, scope)))
        # profiling: the step loop, which can time each step
        values: dict[str, Any] = dict(plan.constants)
        values.update(scope or {})
        values.update(feeds)
        _run_steps(plan, values, stats)
    return {name: values[planned] for name, planned in plan.outputs.items()}


def run_compiled(plan: Plan, feeds: Mapping[str, Any], scope: Mapping[str, Any] | None) -> tuple:
    """Run the plan's generated function; return the graph outputs in ``plan.outputs`` order."""
    compiled = plan.compile()
    try:
        return compiled.function(feeds, scope)
    except OnnxplugError:
        raise
    except Exception as e:
        _raise_for_step(compiled.failed_step(e.__traceback__), e)
        raise


def _raise_for_step(step: Step | None, error: Exception) -> None:
    """Raise a KernelError naming the step a generated function failed in, if it is known."""
    if step is not None:
        raise KernelError(f"{_describe(step)} failed on provider {step.provider.name!r}: "
                          f"{type(error).__name__}: {error}") from error


class SubgraphPlan:
    """A planned subgraph (If branch, Loop or Scan body), as the session hands it to control-flow
    kernels: a SubgraphRunner, ``plan(input_values, scope) -> output values``, and for a Loop body
    ``run_loop``, which runs all the iterations in one generated function."""

    def __init__(self, plan: Plan, graph: Graph) -> None:
        self.plan = plan
        self.input_names = [vi.name for vi in graph.inputs]
        self.output_names = [vi.name for vi in graph.outputs]
        #: the planned value of each graph output, in order (an output may be listed twice)
        self._output_values = [plan.outputs[name] for name in self.output_names]
        self._in_plan_order = self.output_names == list(plan.outputs)
        self._loop: CompiledLoop | None = None

    def __call__(self, inputs: Sequence[Any], scope: Mapping[str, Any]) -> list[Any]:
        feeds = dict(zip(self.input_names, inputs))
        if self._in_plan_order:
            return list(run_compiled(self.plan, feeds, scope))
        result = run_plan(self.plan, feeds, scope)
        return [result[n] for n in self.output_names]

    def run_loop(self, limit: int, use_cond: bool, cond: Any, carried: Sequence[Any],
                 scope: Mapping[str, Any]) -> tuple[int, tuple, list[list]]:
        """Run this Loop body (inputs: iteration number, condition, carried values) while
        ``use_cond`` is false or its condition holds, for at most ``limit`` iterations, starting from
        ``cond`` and ``carried``. Returns the iterations run, the last carried values, and per scan
        output the list of its values."""
        if self._loop is None:  # a race only builds it twice
            self._loop = CompiledLoop(self.plan, _copy, self._output_values)
        compiled = self._loop
        try:
            return compiled.function(limit, use_cond, cond, carried, scope)
        except OnnxplugError:
            raise
        except Exception as e:
            _raise_for_step(compiled.failed_step(e.__traceback__), e)
            raise


def _run_steps(plan: Plan, values: dict[str, Any], stats: RunStats | None) -> None:
    """The step loop, kept lean: it is the per-node cost of every model."""
    live = 0
    get = values.__getitem__
    for step in plan.steps:
        t0 = time.perf_counter() if stats is not None else 0.0
        ins = step.inputs
        # map() runs in C; the comprehension (a frame of its own) only when an optional input is omitted
        args = list(map(get, ins)) if all(ins) else [values[n] if n else None for n in ins]
        kernel = step.kernel
        try:
            if kernel is None:  # a copy between devices
                results: Any = _copy(step, args[0])
            elif kernel.wants_scope:
                sc = {orig: values[v] for orig, v in zip(step.scope, step.scope_values)}
                results = kernel.compute(*args, scope=sc)
            else:
                results = kernel.compute(*args)
        except OnnxplugError:
            raise
        except Exception as e:
            raise KernelError(f"{_describe(step)} failed on provider {step.provider.name!r}: "
                              f"{type(e).__name__}: {e}") from e
        outputs = step.outputs
        if not isinstance(results, tuple):  # a single output (lists are sequence values)
            if outputs[0]:
                values[outputs[0]] = results
            produced = 1
        else:
            for name, value in zip(outputs, results):
                if name:
                    values[name] = value
            produced = len(results)
        if produced < len(outputs):  # trailing optional outputs the kernel did not produce
            for name in outputs[produced:]:
                if name:
                    values[name] = None
        if stats is not None:
            live = _account(stats, step, values, live, plan, t0)
        for name in step.release:
            values.pop(name, None)


def _account(stats: RunStats, step: Step, values: dict[str, Any], live: int, plan: Plan, t0: float) -> int:
    """Record a step's timing and the live bytes after it (``enable_profiling``)."""
    stats.events.append((step.name, step.kind, step.op_type, step.provider.name if step.provider else "",
                         t0, time.perf_counter() - t0))
    produced = sum(_nbytes(values.get(n)) for n in step.outputs if n)
    live += produced
    stats.produced_bytes += produced
    stats.peak_live_bytes = max(stats.peak_live_bytes, live)
    return live - sum(_nbytes(values.get(n)) for n in step.release if n not in plan.constants)


def _describe(step: Step) -> str:
    if step.kind == "node" and step.kernel is not None:
        return step.kernel.node.describe()
    return f"{step.kind} step {step.name!r}"
