"""Compile a plan into one generated Python function: straight-line kernel calls on local variables.

The step loop pays for a dict lookup per input, a store per output and a pop per released value on
every step; small recurrent and control-flow models run thousands of tiny steps, so that bookkeeping
is a large share of their time. The generated function does the same work with local variables:
values are locals, liveness is ``del``, constants and kernels are closure variables.

A kernel that raises is found from the traceback's line number, so the error still names the node.
"""

from __future__ import annotations

import itertools
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from onnxplug.executor import Plan, Step

_counter = itertools.count()

PlanFunction = Callable[[Mapping[str, Any], "Mapping[str, Any] | None"], tuple]


def _first(result: tuple) -> Any:
    """The value of a single-output step whose kernel returned a tuple."""
    return result[0] if result else None


def _outputs(result: Any, count: int) -> tuple:
    """A multi-output step's results, cut or padded with None to the node's outputs (kernels may
    compute optional outputs the node does not list, or omit trailing ones it does)."""
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != count:
        return (result + (None,) * count)[:count]
    return result


class CompiledPlan:
    """A plan as one generated function ``run(feeds, scope) -> outputs in plan.outputs order``."""

    def __init__(self, plan: Plan, copy: Callable[[Step, Any], Any]) -> None:
        self.steps = plan.steps
        self.output_names = list(plan.outputs)
        source, closure, self._step_of_line = _generate(plan)
        self.filename = f"<onnxplug plan {next(_counter)}>"
        namespace: dict[str, Any] = {}
        factory_args = ", ".join(closure)
        code = f"def _factory({factory_args}):\n{source}\n    return _run\n"
        exec(compile(code, self.filename, "exec"), {"_copy": copy, "_first": _first,
                                                    "_outputs": _outputs}, namespace)
        self.function: PlanFunction = namespace["_factory"](*closure.values())
        self._code: CodeType = self.function.__code__

    def failed_step(self, tb: TracebackType | None) -> Step | None:
        """The step whose line raised, from a traceback through the generated function."""
        line = None
        while tb is not None:
            if tb.tb_frame.f_code is self._code:
                line = tb.tb_lineno
            tb = tb.tb_next
        index = self._step_of_line.get(line) if line is not None else None
        return None if index is None else self.steps[index]


def _generate(plan: Plan) -> tuple[str, dict[str, Any], dict[int, int]]:
    """The body of ``_run`` (indented for the factory), its closure values, and line -> step."""
    names: dict[str, str] = {}  # value name -> python identifier
    closure: dict[str, Any] = {}
    produced = {o for s in plan.steps for o in s.outputs if o}
    outer = set(plan.outer)

    def ident(value: str) -> str:
        if value not in names:
            names[value] = f"v{len(names)}"
        return names[value]

    def ref(value: str) -> str:
        """An expression for a value read by a step or returned."""
        if not value:
            return "None"
        if value not in produced and value in plan.constants and value not in plan.inputs:
            key = f"c_{ident(value)}"
            closure[key] = plan.constants[value]
            return key
        return ident(value)

    lines: list[str] = []
    step_of_line: dict[int, int] = {}
    loaded: set[str] = set()
    first_line = 3  # "def _factory", "def _run", then the body

    def emit(text: str, step_index: int | None = None) -> None:
        if step_index is not None:
            step_of_line[first_line + len(lines)] = step_index
        lines.append(f"        {text}")

    # values read before any step defines them: feeds, then outer scope (constants are closure cells)
    reads = [n for s in plan.steps for n in (*s.inputs, *s.scope_values)] + list(plan.outputs.values())
    for value in reads:
        if not value or value in produced or value in loaded:
            continue
        if value in plan.constants and value not in plan.inputs:
            continue
        loaded.add(value)
        source = "scope" if value in outer and value not in plan.inputs else "feeds"
        emit(f"{ident(value)} = {source}[{value!r}]")

    for index, step in enumerate(plan.steps):
        args = ", ".join(ref(n) for n in step.inputs)
        if step.kernel is None:  # a copy between devices
            closure[f"s{index}"] = step
            call = f"_copy(s{index}, {args})"
        else:
            closure[f"k{index}"] = step.kernel.compute
            if step.kernel.wants_scope:
                scope_items = ", ".join(f"{orig!r}: {ref(v)}" for orig, v in zip(step.scope, step.scope_values))
                args = f"{args}, " if args else ""
                call = f"k{index}({args}scope={{{scope_items}}})"
            else:
                call = f"k{index}({args})"
        targets = [ident(o) if o else "_" for o in step.outputs]
        if not targets:  # a step whose outputs nothing reads (kept for its checks)
            emit(call, index)
        elif len(targets) == 1:
            emit(f"{targets[0]} = {call}", index)
            if targets[0] != "_":
                emit(f"if {targets[0]}.__class__ is tuple: {targets[0]} = _first({targets[0]})", index)
        else:
            emit(f"{', '.join(targets)}, = _outputs({call}, {len(targets)})", index)
        dead = [names[n] for n in step.release if n in produced or n in loaded]
        if dead:
            emit(f"del {', '.join(dead)}")

    returned = ", ".join(ref(v) for v in plan.outputs.values())
    emit(f"return ({returned}{',' if len(plan.outputs) == 1 else ''})")
    body = "\n".join(lines) if lines else "        pass"
    return f"    def _run(feeds, scope):\n{body}", closure, step_of_line
