"""The executor: turns partitioned groups into a plan of steps with copies, and runs it.

A plan names each value by where it lives: a host value by its name, a device value by
``OnDevice(name, device)``. Values that cross devices get a ``COPY`` step. Each intermediate is
dropped right after its last reader (liveness). Plans run as one generated function
(:mod:`onnxplug.plan_compiler`); profiling runs an instrumented variant of the same function, which
also times the steps of If/Loop/Scan bodies.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, Mapping, NamedTuple, Sequence, Union

import numpy as np

from onnxplug.cancellation import check_terminate
from onnxplug.device import CPU, Device
from onnxplug.errors import KernelError, OnnxplugError
from onnxplug.ir import Graph
from onnxplug.kernel import Kernel
from onnxplug.partitioner import Group
from onnxplug.plan_compiler import CompiledLoop, CompiledPlan, as_bool
from onnxplug.provider import ExecutionProvider
from onnxplug.step_events import StepEvent, type_shape


class StepKind(str, Enum):
    """What a step runs: one node's kernel, a fused subgraph's kernel, or a copy between devices."""

    NODE = "node"
    FUSED = "fused"
    COPY = "copy"

    def __str__(self) -> str:
        return self.value


class OnDevice(NamedTuple):
    """A value as planned on a device other than the host."""

    name: str
    device: Device


#: a value as a plan names it: the name of a host value, or where on a device it lives
PlannedValue = Union[str, OnDevice]


def located(name: str, device: Device) -> PlannedValue:
    """How a plan names value ``name`` on ``device``."""
    return name if device == CPU else OnDevice(name, device)


@dataclass
class Step:
    """One entry of the plan: a kernel (one node or a fused subgraph) or a copy between devices."""

    name: str
    kind: StepKind
    provider: ExecutionProvider
    inputs: list[PlannedValue]
    outputs: list[PlannedValue]
    kernel: Kernel | None = None
    scope: list[str] = field(default_factory=list)  # implicit (outer-scope) inputs, by original name
    scope_values: list[PlannedValue] = field(default_factory=list)  # the same values as planned here
    to_device: Device | None = None
    release: list[PlannedValue] = field(default_factory=list)
    op_type: str = ""  # for profiles: the node's op type, or "A+B+..." for a fused subgraph
    #: called with the step's inputs before its kernel (onnxplug.allocation_limit); None for most steps
    guard: Callable[..., None] | None = None
    expects: list[Any] = field(default_factory=list)  # per output: its inferred ValueType, or None
    shape_warned: set[int] = field(default_factory=set, repr=False, compare=False)  # outputs reported


@dataclass
class Plan:
    """Steps in execution order, plus where graph outputs and constants are found."""

    steps: list[Step]
    constants: dict[PlannedValue, Any]
    inputs: list[str]
    outputs: dict[str, PlannedValue]  # graph output name -> planned value
    outer: list[str]  # outer-scope names a subgraph plan reads
    # an If/Loop/Scan body: shape inference types loop-carried values from their first iteration,
    # so its outputs are checked for class and element type only
    body: bool = False
    compiled: CompiledPlan | None = field(default=None, repr=False, compare=False)
    instrumented: CompiledPlan | None = field(default=None, repr=False, compare=False)

    def compile(self, instrumented: bool = False) -> CompiledPlan:
        """The plan as one generated function (built on first use; a race only builds it twice).
        The instrumented variant takes a :class:`RunStats` as third argument and reports each step."""
        if instrumented:
            if self.instrumented is None:
                self.instrumented = CompiledPlan(self, _copy, instrumented=True)
            return self.instrumented
        if self.compiled is None:
            self.compiled = CompiledPlan(self, _copy)
        return self.compiled

    @property
    def copy_count(self) -> int:
        """How many copy steps a run executes."""
        return sum(1 for s in self.steps if s.kind == StepKind.COPY)


def build_plan(graph: Graph, groups: Sequence[Group], make_kernel: Callable[[Group], Kernel],
               outer: Sequence[str] = ()) -> Plan:
    """Create the kernels and place copies wherever a value crosses devices."""
    where: dict[str, set[Device]] = {}  # original name -> devices it will be available on
    home: dict[str, Device] = {}
    for vi in graph.inputs:
        home[vi.name] = CPU
    for name in [*graph.initializers, *outer]:
        home.setdefault(name, CPU)
    constants: dict[PlannedValue, Any] = {n: a for n, a in graph.initializers.items()
                                          if n not in {vi.name for vi in graph.inputs}}
    steps: list[Step] = []
    transfers: dict[Device, ExecutionProvider] = {}

    def ensure_on(name: str, device: Device, provider: ExecutionProvider | None) -> PlannedValue:
        if device != CPU and provider is not None:
            transfers.setdefault(device, provider)
        src = home[name]
        if src == device or device in where.setdefault(name, set()):
            return located(name, device)
        if name in constants and src == CPU:  # copy constants once, at session creation
            constants[located(name, device)] = transfers[device].data_transfer.to_device(constants[name])
            where[name].add(device)
            return located(name, device)
        if src != CPU and CPU not in where[name]:
            steps.append(Step(f"copy {name} {src}->cpu", StepKind.COPY, transfers[src],
                              [located(name, src)], [name], to_device=CPU))
            where[name].add(CPU)
        if device != CPU:
            steps.append(Step(f"copy {name} cpu->{device}", StepKind.COPY, transfers[device],
                              [name], [located(name, device)], to_device=device))
            where[name].add(device)
        return located(name, device)

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
        outs = [located(o, dev) if o else "" for o in group.outputs]
        steps.append(Step(group.name, StepKind.FUSED if group.fused else StepKind.NODE, p, ins, outs,
                          make_kernel(group), scope, scope_values,
                          op_type="+".join(n.op_type for n in group.nodes),
                          expects=[graph.type_of(o) if o else None for o in group.outputs]))

    outputs: dict[str, PlannedValue] = {}
    for vi in graph.outputs:
        outputs[vi.name] = ensure_on(vi.name, CPU, None) if home.get(vi.name, CPU) != CPU else vi.name
    _plan_releases(steps, set(outputs.values()) | set(constants))
    return Plan(steps, constants, [vi.name for vi in graph.inputs], outputs, list(outer),
                body=graph.parent is not None)


def _plan_releases(steps: list[Step], keep: set[PlannedValue]) -> None:
    last_use: dict[PlannedValue, int] = {}
    for i, step in enumerate(steps):
        for name in [*step.inputs, *step.scope_values, *step.outputs]:
            if name:
                last_use[name] = i
    for name, i in last_use.items():
        if name not in keep:
            steps[i].release.append(name)


def bind_plan(base: Plan, inputs_on: Mapping[str, Device], outputs_on: Mapping[str, Device],
              provider_for: Callable[[Device], ExecutionProvider]) -> Plan:
    """``base`` for inputs fed on a device (``inputs_on``: input name -> device) and outputs left on
    one (``outputs_on``): the copy of a device-fed input to its device is dropped, and so is the final
    copy of a device-left output to the host. A device-fed input still read on the host gets a copy
    back. The result's feeds are keyed ``located(name, device)``."""
    fed = {located(n, d) for n, d in inputs_on.items() if d != CPU}
    steps = [s for s in base.steps if not (s.kind == StepKind.COPY and s.outputs[0] in fed)]
    outputs = dict(base.outputs)
    read = {n for s in steps for n in [*s.inputs, *s.scope_values]}
    for name, device in outputs_on.items():
        if device == CPU:
            continue
        planned = OnDevice(name, device)
        copy = next((s for s in steps if s.kind == StepKind.COPY and s.inputs == [planned] and s.outputs == [name]),
                    None)
        if copy is not None and name not in read:
            steps.remove(copy)
            outputs[name] = planned
    keep = set(outputs.values())
    steps = [replace(s, release=[n for n in s.release if n not in keep]) for s in steps]
    for value in fed:
        if value.name in read:  # a CPU node reads it: copy it back to the host first
            steps.insert(0, Step(f"copy {value.name} {value.device}->cpu (bound input)", StepKind.COPY,
                                 provider_for(value.device), [value], [value.name], to_device=CPU))
    return replace(base, steps=steps, outputs=outputs, compiled=None, instrumented=None)


@dataclass
class RunStats:
    """What a run measured when asked: step timings (body steps of If/Loop/Scan with their parent
    step), the peak of live intermediate bytes of the top-level plan, and the bytes of all its
    intermediates together (the peak a runtime without liveness would reach). The instrumented
    plan function reports to it through :meth:`start`, :meth:`stop` and :meth:`drop`."""

    #: one :class:`StepEvent` per step run
    events: list[StepEvent] = field(default_factory=list)
    peak_live_bytes: int = 0
    produced_bytes: int = 0
    _running: list[Step] = field(default_factory=list, repr=False)
    _inputs: list[tuple[tuple, tuple]] = field(default_factory=list, repr=False)
    _live: int = field(default=0, repr=False)

    def start(self, step: Step, inputs: tuple = (), weights: tuple = ()) -> float:
        """A step starts on ``inputs`` (``weights`` flags those that are initializers); the steps of
        bodies it runs record it as their parent."""
        self._running.append(step)
        self._inputs.append((inputs, weights))
        return time.perf_counter()

    def stop(self, step: Step, t0: float, produced: tuple) -> None:
        """A step ended with ``produced`` values."""
        duration = time.perf_counter() - t0
        self._running.pop()
        inputs, weights = self._inputs.pop()
        parent = self._running[-1].name if self._running else ""
        flags = tuple(weights) + (False,) * (len(inputs) - len(weights))
        self.events.append(StepEvent(
            step.name, str(step.kind), step.op_type, step.provider.name if step.provider else "", t0, duration,
            parent, [type_shape(v) for v in inputs], [type_shape(v) for v in produced],
            sum(_nbytes(v) for v, w in zip(inputs, flags) if not w),
            sum(_nbytes(v) for v, w in zip(inputs, flags) if w), sum(map(_nbytes, produced))))
        if not self._running:
            size = sum(map(_nbytes, produced))
            self._live += size
            self.produced_bytes += size
            self.peak_live_bytes = max(self.peak_live_bytes, self._live)

    def drop(self, released: tuple) -> None:
        """Values released after their last reader."""
        if not self._running:
            self._live -= sum(map(_nbytes, released))


#: the stats of the profiled run in progress on this thread, which body plans report to as well
_current_stats: contextvars.ContextVar[RunStats | None] = contextvars.ContextVar("onnxplug_run_stats",
                                                                                  default=None)


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


def run_plan(plan: Plan, feeds: Mapping[Any, Any], scope: Mapping[str, Any] | None = None,
             stats: RunStats | None = None) -> dict[str, Any]:
    """Run the plan on ``feeds`` (and outer-scope values) and return the graph outputs by name;
    with ``stats``, the instrumented function runs and reports to it."""
    # a top-level run: ONNX wants inf/NaN at domain edges, not numpy warnings (nested runs inherit it)
    with np.errstate(all="ignore") if scope is None else contextlib.nullcontext():
        if stats is None:
            if scope is not None:  # a body's run reports to the profiled run it is part of, if any
                stats = _current_stats.get()
            return dict(zip(plan.outputs, run_compiled(plan, feeds, scope, stats)))
        token = _current_stats.set(stats)
        try:
            return dict(zip(plan.outputs, run_compiled(plan, feeds, scope, stats)))
        finally:
            _current_stats.reset(token)


def run_compiled(plan: Plan, feeds: Mapping[Any, Any], scope: Mapping[str, Any] | None,
                 stats: RunStats | None = None) -> tuple:
    """Run the plan's generated function (instrumented with ``stats``); return the graph outputs
    in ``plan.outputs`` order."""
    compiled = plan.compile(stats is not None)
    try:
        if stats is None:
            return compiled.function(feeds, scope)
        return compiled.function(feeds, scope, stats)  # type: ignore[call-arg]
    except Exception as e:
        _fail(compiled, e)
        raise


def _fail(compiled: CompiledPlan | CompiledLoop, error: Exception) -> None:
    """Turn an error out of a generated function into a KernelError naming its step, then drop the
    failed run's values: the traceback would otherwise keep its intermediates (device buffers too)
    alive as long as the caller keeps the error."""
    kernel_error = None
    try:
        if not isinstance(error, OnnxplugError):
            kernel_error = _error_for_step(*compiled.failure(error.__traceback__), error)
    finally:
        compiled.release(error.__traceback__)
    if kernel_error is not None:
        raise kernel_error from error


def _error_for_step(step: Step | None, inputs: list[Any], error: Exception) -> KernelError | None:
    """A KernelError naming the step a generated function failed in, if it is known, and the
    types and shapes it was given."""
    if step is None:
        return None
    given = ", ".join(f"{getattr(n, 'name', n) or '<omitted>'}: {_given(v)}" for n, v in zip(step.inputs, inputs))
    return KernelError(f"{_describe(step)} failed on provider {step.provider.name!r} given ({given}): "
                       f"{type(error).__name__}: {error}")


def _given(value: Any) -> str:
    """``float32[1, 3]`` for a tensor, as much as is known otherwise."""
    if value is None:
        return "None"
    ts = type_shape(value)
    return ", ".join(f"{t}{s if isinstance(s, list) else f'({s})'}" for t, s in ts.items()) or type(value).__name__


class SubgraphPlan:
    """A planned subgraph (If branch, Loop or Scan body), as the session hands it to control-flow
    kernels: a SubgraphRunner, ``plan(input_values, scope) -> output values``, and for a Loop body
    ``run_loop``, which runs all the iterations in one generated function. In a profiled run both
    run the instrumented function, so body steps are timed too."""

    def __init__(self, plan: Plan, graph: Graph, scan_check: Callable[..., int] | None = None) -> None:
        """``scan_check``: counts a Loop body's scan outputs (:class:`onnxplug.allocation_limit.ScanCheck`)."""
        self.plan = plan
        self.scan_check = scan_check
        self.input_names = [vi.name for vi in graph.inputs]
        self.output_names = [vi.name for vi in graph.outputs]
        #: the planned value of each graph output, in order (an output may be listed twice)
        self._output_values = [plan.outputs[name] for name in self.output_names]
        self._in_plan_order = self.output_names == list(plan.outputs)
        self._loop: CompiledLoop | None = None

    def __call__(self, inputs: Sequence[Any], scope: Mapping[str, Any]) -> list[Any]:
        check_terminate(" in a subgraph (Loop or Scan body, If branch)")  # RunOptions.terminate, per call
        return self._run(inputs, scope)

    def _run(self, inputs: Sequence[Any], scope: Mapping[str, Any]) -> list[Any]:
        feeds = dict(zip(self.input_names, inputs))
        stats = _current_stats.get()
        if self._in_plan_order:
            return list(run_compiled(self.plan, feeds, scope, stats))
        result = dict(zip(self.plan.outputs, run_compiled(self.plan, feeds, scope, stats)))
        return [result[n] for n in self.output_names]

    @property
    def profiled(self) -> bool:
        """Whether the run in progress on this thread is profiled: a kernel that runs this body its
        own way (a compiled loop) should then call it per iteration, so its steps are timed too."""
        return _current_stats.get() is not None

    def run_loop(self, limit: int, use_cond: bool, cond: Any, carried: Sequence[Any],
                 scope: Mapping[str, Any]) -> tuple[int, tuple, list[list]]:
        """Run this Loop body (inputs: iteration number, condition, carried values) while
        ``use_cond`` is false or its condition holds, for at most ``limit`` iterations, starting from
        ``cond`` and ``carried``. Returns the iterations run, the last carried values, and per scan
        output the list of its values."""
        if _current_stats.get() is not None:
            return self._profiled_loop(limit, use_cond, cond, carried, scope)
        if self._loop is None:  # a race only builds it twice
            self._loop = CompiledLoop(self.plan, _copy, self._output_values, self.scan_check)
        compiled = self._loop
        try:
            return compiled.function(limit, use_cond, cond, carried, scope)
        except Exception as e:
            _fail(compiled, e)
            raise

    def _profiled_loop(self, limit: int, use_cond: bool, cond: Any, carried: Sequence[Any],
                       scope: Mapping[str, Any]) -> tuple[int, tuple, list[list]]:
        """``run_loop`` one instrumented body call per iteration."""
        n_carried = len(carried)
        scans: list[list] = [[] for _ in range(len(self.output_names) - 1 - n_carried)]
        carried = tuple(carried)
        keep_going = as_bool(cond) if use_cond else True
        i, next_check, counted = 0, 1, []
        while keep_going and i < limit:
            check_terminate(" in a Loop body")
            out = self._run([np.array(i, np.int64), cond, *carried], scope)  # checked just above
            cond, carried = out[0], tuple(out[1:1 + n_carried])
            for values, value in zip(scans, out[1 + n_carried:]):
                values.append(value)
            if self.scan_check is not None and scans and i + 1 >= next_check:
                next_check = self.scan_check(i + 1, counted, *scans)
            if use_cond:
                keep_going = as_bool(cond)
            i += 1
        return i, carried, scans


def _describe(step: Step) -> str:
    if step.kind == StepKind.NODE and step.kernel is not None:
        return step.kernel.node.describe()
    return f"{step.kind} step {step.name!r}"
