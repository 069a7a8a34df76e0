"""Compile a plan into one generated Python function: straight-line kernel calls on local variables.

Values are locals, liveness is ``del``, constants and kernels are closure variables, so a step
costs its kernel call and no dict lookups, stores or pops: small recurrent and control-flow models
run thousands of tiny steps. This is the only way plans run.

A Loop body can also be compiled with its loop (``CompiledLoop``): the iterations run inside one
generated function, so an iteration pays for its kernel calls only.

The instrumented variant (profiling) is the same function with a report around each step:
``stats.start(step, inputs, weights)``, the call, ``stats.stop(step, t0, produced)``, ``stats.drop(released)``.
A kernel that raises is found from the traceback's line number, so the error still names the node.
"""

from __future__ import annotations

import itertools
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from onnxplug.cancellation import check_terminate

if TYPE_CHECKING:
    from onnxplug.executor import Plan, Step

_counter = itertools.count()

PlanFunction = Callable[[Mapping[str, Any], "Mapping[str, Any] | None"], tuple]
#: ``loop(limit, use_cond, cond, carried, scope) -> (iterations, carried values, scan lists)``
LoopFunction = Callable[[int, bool, Any, Sequence[Any], Mapping[str, Any]], tuple]


def _first(result: tuple) -> Any:
    """The value of a single-output step whose kernel returned a tuple (``_outputs(result, 1)[0]``)."""
    return result[0] if result else None


def as_bool(value: Any) -> bool:
    """A condition tensor (any shape with one element) as a Python bool: a Loop's, an If's."""
    if value.__class__ is np.ndarray and value.ndim == 0:
        return bool(value)
    return bool(np.asarray(value).reshape(-1)[0])


def _outputs(result: Any, count: int) -> tuple:
    """The one normalisation of kernel results: a step's results, cut or padded with None to the
    node's outputs (kernels may compute optional outputs the node does not list, or omit trailing
    ones it does). A single non-tuple result is one output."""
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != count:
        return (result + (None,) * count)[:count]
    return result


class _GeneratedFunction:
    """A generated function, with the step each of its lines runs (for errors)."""

    def __init__(self, steps: list[Step], writer: _Writer, name: str, copy: Callable[[Step, Any], Any]) -> None:
        self.steps = steps
        self.filename = f"<onnxplug plan {next(_counter)}>"
        namespace: dict[str, Any] = {}
        factory_args = ", ".join(writer.closure)
        code = f"def _factory({factory_args}):\n{writer.source()}\n    return {name}\n"
        helpers = {"_copy": copy, "_first": _first, "_outputs": _outputs, "_as_bool": as_bool,
                   "_array": np.array, "_int64": np.dtype(np.int64), "_check_terminate": check_terminate}
        exec(compile(code, self.filename, "exec"), helpers, namespace)
        self.function = namespace["_factory"](*writer.closure.values())
        self._code: CodeType = self.function.__code__
        self._step_of_line = writer.step_of_line
        self._idents = dict(writer.names)

    def failed_step(self, tb: TracebackType | None) -> Step | None:
        """The step whose line raised, from a traceback through the generated function."""
        return self.failure(tb)[0]

    def failure(self, tb: TracebackType | None) -> tuple[Step | None, list[Any]]:
        """The step whose line raised and the values it was given (``None`` where unknown), read
        from the generated function's frame in the traceback."""
        line = frame = None
        while tb is not None:
            if tb.tb_frame.f_code is self._code:
                line, frame = tb.tb_lineno, tb.tb_frame
            tb = tb.tb_next
        index = self._step_of_line.get(line) if line is not None else None
        if index is None or frame is None:
            return None, []
        step = self.steps[index]
        values = frame.f_locals
        inputs = []
        for name in step.inputs:
            ident = self._idents.get(name, "")
            inputs.append(values.get(ident, values.get(f"c_{ident}")) if name else None)
        return step, inputs


class CompiledPlan(_GeneratedFunction):
    """A plan as one generated function ``run(feeds, scope) -> outputs in plan.outputs order``."""

    def __init__(self, plan: Plan, copy: Callable[[Step, Any], Any], instrumented: bool = False) -> None:
        """``instrumented``: the function is ``run(feeds, scope, stats)`` and reports each step to
        ``stats`` (:class:`onnxplug.executor.RunStats`)."""
        self.output_names = list(plan.outputs)
        writer = _Writer(plan, instrumented)
        writer.line("def _run(feeds, scope, stats):" if instrumented else "def _run(feeds, scope):", indent=1)
        outer, inputs = set(plan.outer), set(plan.inputs)
        writer.load_reads(lambda value: "scope" if value in outer and value not in inputs else "feeds")
        writer.write_steps(indent=2)
        writer.line(f"return ({writer.tuple_of(plan.outputs.values())})")
        super().__init__(plan.steps, writer, "_run", copy)
        self.function: PlanFunction


class CompiledLoop(_GeneratedFunction):
    """A Loop body (inputs: iteration number, condition, carried values; outputs: condition, carried
    values, scan values) compiled with its loop into one function ``loop(limit, use_cond, cond,
    carried, scope)``: it runs while the condition holds (when ``use_cond``) and fewer than
    ``limit`` iterations have run, and returns the iterations run, the last carried values and a
    list per scan output of the values of each iteration. Outer-scope values are read once."""

    def __init__(self, plan: Plan, copy: Callable[[Step, Any], Any], outputs: Sequence[str],
                 scan_check: Callable[..., int] | None = None) -> None:
        """``outputs``: the planned value of each body output, in order; ``scan_check(i, counted,
        *scan lists)`` counts the scan outputs now and then and returns when to count next."""
        if len(plan.inputs) < 2 or len(outputs) < len(plan.inputs) - 1:
            raise ValueError("a Loop body takes (iteration, condition, carried...) and returns "
                             "(condition, carried..., scans...)")
        iteration, cond, *carried = plan.inputs
        n_carried = len(carried)
        scans = outputs[1 + n_carried:]
        writer = _Writer(plan)
        w = writer.ident
        writer.line("def _loop(limit, use_cond, cond, carried, scope):", indent=1)
        writer.load_reads(lambda value: "scope", skip=set(plan.inputs))
        writer.line(f"{w(cond)} = cond")
        if carried:
            writer.line(f"{writer.tuple_of(carried, ident=True)} = carried")
        lists = [f"scan{k}" for k in range(len(scans))]  # (s<i> names copy steps)
        for name in lists:
            writer.line(f"{name} = []")
        writer.line("i = 0")
        check = scan_check is not None and bool(lists)
        if check:
            writer.closure["scan_check"] = scan_check
            writer.line("next_check, counted = 1, []")
        writer.line("keep_going = _as_bool(cond) if use_cond else True")
        writer.line("while keep_going and i < limit:")
        writer.line("_check_terminate(' in a Loop body')", indent=3)  # RunOptions.terminate, per iteration
        writer.line(f"{w(iteration)} = _array(i, _int64)", indent=3)  # a fresh int64 scalar tensor
        writer.write_steps(indent=3, keep=set(writer.loaded))  # outer values serve every iteration
        # the next iteration's condition and carried values, assigned together (one may read another)
        targets = writer.tuple_of([cond, *carried], ident=True)
        writer.line(f"{targets} = {writer.tuple_of(outputs[:1 + n_carried])}", indent=3)
        for name, value in zip(lists, scans):
            writer.line(f"{name}.append({writer.ref(value)})", indent=3)
        if check:  # the allocation limit, counted as the scan outputs grow
            writer.line(f"if i + 1 >= next_check: next_check = scan_check(i + 1, counted, {', '.join(lists)})",
                        indent=3)
        writer.line(f"if use_cond: keep_going = _as_bool({w(cond)})", indent=3)
        writer.line("i += 1", indent=3)
        writer.line(f"return i, ({writer.tuple_of(carried, ident=True)}), [{', '.join(lists)}]")
        super().__init__(plan.steps, writer, "_loop", copy)
        self.function: LoopFunction


class _Writer:
    """Writes a generated function's lines: value names become identifiers, constants and kernels
    closure variables, and each step's lines are mapped back to the step."""

    def __init__(self, plan: Plan, instrumented: bool = False) -> None:
        self.plan = plan
        self.instrumented = instrumented
        self.names: dict[Any, str] = {}  # planned value -> python identifier
        self.closure: dict[str, Any] = {}
        self.produced = {o for s in plan.steps for o in s.outputs if o}
        self.lines: list[str] = []
        self.step_of_line: dict[int, int] = {}
        self.loaded: set[str] = set()

    def ident(self, value: str) -> str:
        if value not in self.names:
            self.names[value] = f"v{len(self.names)}"
        return self.names[value]

    def ref(self, value: str) -> str:
        """An expression for a value read by a step or returned."""
        plan = self.plan
        if not value:
            return "None"
        if value not in self.produced and value in plan.constants and value not in plan.inputs:
            key = f"c_{self.ident(value)}"
            self.closure[key] = plan.constants[value]
            return key
        return self.ident(value)

    def tuple_of(self, values: Sequence[str], ident: bool = False) -> str:
        """A tuple display of values (identifiers to assign to when ``ident``)."""
        items = [self.ident(v) if ident else self.ref(v) for v in values]
        return ", ".join(items) + ("," if len(items) == 1 else "")

    def line(self, text: str, indent: int = 2, step_index: int | None = None) -> None:
        if step_index is not None:
            self.step_of_line[2 + len(self.lines)] = step_index  # line 1 is "def _factory"
        self.lines.append("    " * indent + text)

    def source(self) -> str:
        return "\n".join(self.lines)

    def load_reads(self, source_of: Callable[[str], str], skip: set[str] = frozenset()) -> None:
        """Load the values read before any step defines them (feeds, then outer scope) into locals;
        constants are closure cells."""
        plan = self.plan
        reads = [n for s in plan.steps for n in (*s.inputs, *s.scope_values)] + list(plan.outputs.values())
        for value in reads:
            if not value or value in self.produced or value in self.loaded or value in skip:
                continue
            if value in plan.constants and value not in plan.inputs:
                continue
            self.loaded.add(value)
            key = repr(value)
            if not isinstance(value, str):  # a device value (OnDevice): its key is a closure cell
                key = f"key_{self.ident(value)}"
                self.closure[key] = value
            self.line(f"{self.ident(value)} = {source_of(value)}[{key}]")

    def write_steps(self, indent: int, keep: set[str] = frozenset()) -> None:
        """One call per step, its outputs into locals, then ``del`` of the values it read last
        (except ``keep``)."""
        for index, step in enumerate(self.plan.steps):
            args = ", ".join(self.ref(n) for n in step.inputs)
            if step.guard is not None:  # refuses before the kernel allocates (onnxplug.allocation_limit)
                self.closure[f"g{index}"] = step.guard
                self.line(f"g{index}({args})", indent, index)
            if self.instrumented:
                self.closure[f"s{index}"] = step
                # which inputs are weights: a profile counts them as parameters, not activations
                self.closure[f"w{index}"] = tuple(n in self.plan.constants for n in step.inputs)
                self.line(f"t0 = stats.start(s{index}, ({args}{',' if args else ''}), w{index})", indent, index)
            if step.kernel is None:  # a copy between devices
                self.closure[f"s{index}"] = step
                call = f"_copy(s{index}, {args})"
            else:
                self.closure[f"k{index}"] = step.kernel.compute
                if step.kernel.wants_scope:
                    scope_items = ", ".join(f"{orig!r}: {self.ref(v)}"
                                            for orig, v in zip(step.scope, step.scope_values))
                    args = f"{args}, " if args else ""
                    call = f"k{index}({args}scope={{{scope_items}}})"
                else:
                    call = f"k{index}({args})"
            targets = [self.ident(o) if o else "_" for o in step.outputs]
            if not targets:  # a step whose outputs nothing reads (kept for its checks)
                self.line(call, indent, index)
            elif len(targets) == 1:
                self.line(f"{targets[0]} = {call}", indent, index)
                if targets[0] != "_":
                    self.line(f"if {targets[0]}.__class__ is tuple: {targets[0]} = _first({targets[0]})",
                              indent, index)
            else:
                self.line(f"{', '.join(targets)}, = _outputs({call}, {len(targets)})", indent, index)
            dead = [self.names[n] for n in step.release if n not in keep and (
                n in self.produced or n in self.loaded or n in self.names and n in self.plan.inputs)]
            if self.instrumented:
                produced = [t for t in targets if t != "_"]
                self.line(f"stats.stop(s{index}, t0, ({''.join(t + ', ' for t in produced)}))", indent, index)
                if dead:
                    self.line(f"stats.drop(({''.join(d + ', ' for d in dead)}))", indent, index)
            if dead:
                self.line(f"del {', '.join(dead)}", indent)
