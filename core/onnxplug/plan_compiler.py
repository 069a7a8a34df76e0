"""Compile a plan into one generated Python function: straight-line kernel calls on local variables.

Values are locals, liveness is ``del``, constants and kernels are closure variables, so a step costs
its kernel call and no dict lookups, stores or pops. This is the only way plans run; a Loop body can
also be compiled with its loop (``CompiledLoop``), so an iteration pays for its kernel calls only.
The profiling variant reports around each step (``stats.start``, the call, ``stats.stop``,
``stats.drop``). A kernel that raises is found from the traceback's line number, so the error names
the node. Each kernel output read later, whose type is known, is checked on one line (class, element
type by identity, rank or whole known shape, not a graph output's declared shape); only a mismatch
goes to :func:`check_output`, which raises ``KernelError`` naming node and provider (a dimension
other than a static inferred one only warns, as onnxruntime does). Steps of a
provider whose allocator tracks allocations (``Allocator.tracked``) are bracketed by a leak check.
"""

from __future__ import annotations

import itertools
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from onnxplug import logs
from onnxplug.cancellation import check_terminate
from onnxplug.device import CPU
from onnxplug.errors import KernelError
from onnxplug.shape_memo import Memo, memo_steps, own

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


def _expected(step: Step, index: int) -> tuple[tuple[type, ...], np.dtype, tuple] | None:
    """What output ``index`` of ``step`` is checked against: (classes, dtype, shape with None for
    unknown dimensions), or None when it is not checked (unknown or non-tensor type, a device whose
    allocator declares no array types)."""
    vtype = step.expects[index] if index < len(step.expects) else None
    if vtype is None or vtype.kind != "tensor" or vtype.shape is None:
        return None
    try:
        dtype = vtype.dtype
    except (KeyError, ValueError, TypeError):  # an element type numpy has no dtype for
        return None
    if dtype is None:
        return None
    classes = (np.ndarray,) if step.provider.device == CPU else tuple(getattr(step.provider.allocator,
                                                                               "array_types", ()))
    if not classes:
        return None
    return classes, dtype, tuple(d if isinstance(d, int) and d >= 0 else None for d in vtype.shape)


def check_output(value: Any, spec: tuple) -> Any:
    """The slow path of an output check: ``value`` as the step's output (a host scalar becomes a 0-d
    array), or KernelError naming node, provider, output and what was expected. A dimension other
    than a static inferred one is a warning, once per output, as in onnxruntime."""
    step, index, classes, dtype, shape = spec
    if isinstance(value, np.generic) and np.ndarray in classes:
        value = np.asarray(value)
    expected = str(dtype) if shape is None else f"{dtype}[{', '.join('?' if d is None else str(d) for d in shape)}]"
    if not isinstance(value, classes):
        named = (type(value), *classes)
        # classes of one short name (numpy's and CuPy's ndarray) are told apart by their package
        clash = len({c.__name__ for c in named}) < len(named)
        got, *want = (f"{c.__module__.split('.')[0]}.{c.__qualname__}" if clash else c.__name__ for c in named)
        _bad_output(step, index, f"a {got}, not a {' or '.join(want)} {expected}")
    got_dtype = getattr(value, "dtype", None)
    if got_dtype != dtype and not (dtype.kind == "O" and getattr(got_dtype, "kind", "") in "OUS"):
        _bad_output(step, index, f"element type {got_dtype}, not {dtype} (expected {expected})")
    got_shape = tuple(value.shape)
    if shape is None:
        return value
    if len(got_shape) != len(shape):
        _bad_output(step, index, f"shape {list(got_shape)}, not {expected}")
    if any(d is not None and d != g for d, g in zip(shape, got_shape)) and index not in step.shape_warned:
        # shape inference can be wrong where kernels are right (ceil_mode pools whose last window
        # starts in the padding): onnxruntime warns and runs on, and so does this
        step.shape_warned.add(index)
        name = step.outputs[index]
        logs.warn(f"{_describe(step)} on provider {step.provider.name!r}: output {index} "
                  f"{getattr(name, 'name', name)!r} has shape {list(got_shape)} where shape inference "
                  f"gives {expected}")
    return value


def _describe(step: Step) -> str:
    return step.kernel.node.describe() if step.kind == "node" and step.kernel is not None else \
        f"{step.kind} step {step.name!r}"


def _bad_output(step: Step, index: int, what: str) -> None:
    name = step.outputs[index]
    node = _describe(step)
    raise KernelError(f"{node} on provider {step.provider.name!r} returned output {index} "
                      f"{getattr(name, 'name', name)!r} of {what}, as shape inference gives it")


def check_leaks(step: Step, mark: Any, produced: tuple) -> None:
    """After a step of a provider whose allocator tracks allocations: free the buffers the step
    allocated on this thread and did not return, and raise KernelError naming them."""
    allocator = step.provider.allocator
    leaked = [b for b in allocator.allocated_since(mark) if not any(b is p for p in produced)]
    if leaked:
        for buffer in leaked:
            allocator.free(buffer)
        node = step.kernel.node.describe() if step.kernel is not None else f"step {step.name!r}"
        raise KernelError(f"{node} on provider {step.provider.name!r} left {len(leaked)} device "
                          f"buffer(s) allocated that it did not return (freed after the step)")


def _clear(frame: Any) -> None:
    """Drop a finished frame's locals, and the snapshot ``f_locals`` made of them (``failure``)."""
    try:
        frame.f_locals.clear()
        frame.clear()
    except RuntimeError:  # still executing: not expected once the call has raised
        pass


class _GeneratedFunction:
    """A generated function, with the step each of its lines runs (for errors)."""

    def __init__(self, steps: list[Step], writer: _Writer, name: str, copy: Callable[[Step, Any], Any]) -> None:
        self.steps = steps
        self.filename = f"<onnxplug plan {next(_counter)}>"
        namespace: dict[str, Any] = {}
        factory_args = ", ".join(writer.closure)
        code = f"def _factory({factory_args}):\n{writer.source()}\n    return {name}\n"
        helpers = {"_copy": copy, "_first": _first, "_outputs": _outputs, "_as_bool": as_bool,
                   "_array": np.array, "_int64": np.dtype(np.int64), "_check_terminate": check_terminate,
                   "_check_output": check_output, "_check_leaks": check_leaks, "_own": own}
        exec(compile(code, self.filename, "exec"), helpers, namespace)
        self.function = namespace["_factory"](*writer.closure.values())
        self._code: CodeType = self.function.__code__
        self._step_of_line = writer.step_of_line
        self._idents = dict(writer.names)

    def failed_step(self, tb: TracebackType | None) -> Step | None:
        """The step whose line raised, from a traceback through the generated function."""
        return self.failure(tb)[0]

    def release(self, tb: TracebackType | None) -> None:
        """After a failed call: free what the failing step of a tracked allocator allocated, and
        clear the function's frame in ``tb`` and the (finished) frames it called, so the run's
        values, kernel locals included, are dropped now."""
        below = False
        while tb is not None:
            frame = tb.tb_frame
            if below and frame.f_code is not self._code:
                _clear(frame)
            elif frame.f_code is self._code:
                below = True
                index = self._step_of_line.get(tb.tb_lineno)
                mark = frame.f_locals.get(f"m{index}") if index is not None else None
                if mark is not None:
                    allocator = self.steps[index].provider.allocator
                    for buffer in allocator.allocated_since(mark):
                        allocator.free(buffer)
                _clear(frame)
            tb = tb.tb_next

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
        if not instrumented:  # a profile shows every step run
            writer.memo_start(*memo_steps(plan))
        writer.write_steps(indent=2)
        writer.memo_end()
        returned = [f"_own({writer.ref(v)})" if v in writer.memo_values else writer.ref(v) for v in plan.outputs.values()]
        writer.line(f"return ({', '.join(returned)}{',' if len(returned) == 1 else ''})")
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
        self.shared_keys: dict[int, str] = {}  # id of a class or dtype -> its closure variable
        self.read = {n for s in plan.steps for n in (*s.inputs, *s.scope_values) if n} | set(plan.outputs.values())
        self.memo_indices: set[int] = set()  # steps skipped when the feeds' shapes were seen (shape_memo)
        self.memo_values: set[Any] = set()  # their outputs
        self.memo_exported: list[Any] = []  # those other steps read or the plan returns

    def memo_start(self, indices: set[int], exported: set[Any]) -> None:
        """Key the run by the feeds' shapes and element types, and load the memo values other
        steps read when the key was seen (``onnxplug.shape_memo``)."""
        if not indices:
            return
        self.memo_indices = indices
        self.memo_values = {o for i in indices for o in self.plan.steps[i].outputs if o}
        self.memo_exported = sorted(exported, key=str)
        feeds = [self.ident(v) for v in self.plan.inputs if v in self.loaded]
        self.closure["memo"] = Memo()
        self.line("try:")
        self.line(f"_mk = ({''.join(f'{f}.shape, {f}.dtype, ' for f in feeds)})", 3)
        self.line("except AttributeError:")  # a feed that is not a tensor: no key
        self.line("_mk = None", 3)
        self.line("_m = None if _mk is None else memo.get(_mk)")
        if self.memo_exported:
            self.line("if _m is not None:")
            self.line(f"{self.tuple_of(self.memo_exported, ident=True)} = _m", 3)

    def memo_end(self) -> None:
        """Keep this run's memo values when they were computed."""
        if self.memo_indices:
            self.line(f"if _m is None and _mk is not None: memo.keep(_mk, ({self.tuple_of(self.memo_exported)}))")

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
        (except ``keep``). Memo steps run only when the run's key was not seen (``if _m is None``)."""
        in_block = False
        memo_idents = {self.ident(v) for v in self.memo_values}
        for index, step in enumerate(self.plan.steps):
            memo = index in self.memo_indices
            if memo and not in_block:
                self.line("if _m is None:", indent)
            in_block = memo
            ind = indent + 1 if memo else indent
            args = ", ".join(self.ref(n) for n in step.inputs)
            if step.guard is not None:  # refuses before the kernel allocates (onnxplug.allocation_limit)
                self.closure[f"g{index}"] = step.guard
                self.line(f"g{index}({args})", ind, index)
            if self.instrumented:
                self.closure[f"s{index}"] = step
                # which inputs are weights: a profile counts them as parameters, not activations
                self.closure[f"w{index}"] = tuple(n in self.plan.constants for n in step.inputs)
                self.line(f"t0 = stats.start(s{index}, ({args}{',' if args else ''}), w{index})", ind, index)
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
            tracked = step.kernel is not None and getattr(step.provider.allocator, "tracked", False)
            if tracked:
                self.closure[f"a{index}"] = step.provider.allocator.allocation_mark
                self.closure[f"s{index}"] = step
                self.line(f"m{index} = a{index}()", ind, index)
            if not targets:  # a step whose outputs nothing reads (kept for its checks)
                self.line(call, ind, index)
            elif len(targets) == 1:
                self.line(f"{targets[0]} = {call}", ind, index)
                if targets[0] != "_":
                    self.line(f"if {targets[0]}.__class__ is tuple: {targets[0]} = _first({targets[0]})",
                              ind, index)
            else:
                self.line(f"{', '.join(targets)}, = _outputs({call}, {len(targets)})", ind, index)
            if step.kernel is not None:
                self.write_checks(step, index, targets, ind)
            if tracked:
                produced = "".join(t + ", " for t in targets if t != "_")
                self.line(f"_check_leaks(s{index}, m{index}, ({produced}))", ind, index)
                self.line(f"del m{index}", ind)
            dead = [self.names[n] for n in step.release if n not in keep and (
                n in self.produced or n in self.loaded or n in self.names and n in self.plan.inputs)]
            if self.instrumented:
                produced = [t for t in targets if t != "_"]
                self.line(f"stats.stop(s{index}, t0, ({''.join(t + ', ' for t in produced)}))", ind, index)
                if dead:
                    self.line(f"stats.drop(({''.join(d + ', ' for d in dead)}))", ind, index)
            if dead and self.memo_values:
                # memo values others read stay for the run's end (kept then); the rest of a memo
                # step's values exist only when it ran; other values exist either way
                inner = [self.names[n] for n in step.release if self.names.get(n) in dead and n in self.memo_values
                         and n not in self.memo_exported]
                outer = [d for d in dead if d not in memo_idents]
                if inner:
                    self.line(f"del {', '.join(inner)}", ind)
                if outer:
                    self.line(f"del {', '.join(outer)}", indent)
                    in_block = False
            elif dead:
                self.line(f"del {', '.join(dead)}", ind)

    def write_checks(self, step: Step, index: int, targets: list[str], indent: int) -> None:
        """One line per checked output: class, dtype identity and rank (or whole static shape);
        anything else goes to ``_check_output``."""
        for i, (value, target) in enumerate(zip(step.outputs, targets)):
            if target == "_" or value not in self.read:
                continue
            spec = _expected(step, i)
            if spec is None:
                continue
            classes, dtype, shape = spec
            if self.plan.body or getattr(value, "name", value) in self.plan.outputs:
                # a graph output's shape is the model's declaration, which onnxruntime does not
                # enforce (it warns): models declaring [1, ?] for a [16, 1, 8210] output run there
                shape = None
                spec = (classes, dtype, None)
            cls = self.shared(classes[0]) if len(classes) == 1 else None
            self.closure[f"x{index}_{i}"] = (step, i, *spec)
            type_test = f"{target}.__class__ is not {cls}" if cls else f"not isinstance({target}, {self.shared(classes)})"
            shape_test = ("" if shape is None else f" or {target}.shape != {shape!r}"
                          if all(d is not None for d in shape) else f" or {target}.ndim != {len(shape)}")
            self.line(f"if {type_test} or {target}.dtype is not {self.shared(dtype)}{shape_test}: "
                      f"{target} = _check_output({target}, x{index}_{i})", indent, index)

    def shared(self, obj: Any) -> str:
        """A closure variable holding ``obj`` (classes, dtypes), one per distinct object."""
        key = self.shared_keys.get(id(obj))
        if key is None:
            key = self.shared_keys[id(obj)] = f"o_{len(self.shared_keys)}"
            self.closure[key] = obj
        return key
