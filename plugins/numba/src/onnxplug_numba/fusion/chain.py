"""The kernel of a fused elementwise chain: one generated numba loop for the whole subgraph."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from onnxplug_sdk import FusedSubgraph, Kernel, KernelContext

from onnxplug_numba.fusion import calls
from onnxplug_numba.fusion.calls import Call
from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import Step, dtype_name, step_for
from onnxplug_numba.fusion.runner import ElementwiseRunner
from onnxplug_numba.threads import ThreadControl


def _static_shape(subgraph: FusedSubgraph, name: str) -> tuple[int, ...] | None:
    t = subgraph.view.type_of(name)
    if t is None or t.shape is None:
        return None
    return tuple(d if isinstance(d, int) else 1 for d in t.shape)  # symbolic dims: batch 1


def written_outputs(steps: Sequence[Step], outputs: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...] | None]:
    """The values the loop writes, and for each chain output its position among them (None when
    they are the chain's outputs).

    A chain output that Identity steps copy from a value the loop computes is returned as that
    value's array, as the single-node Identity kernel does (no copy): one array fewer to allocate
    and write. (A Loop body's scan output is often such a copy of its carried state.)"""
    source = {s.out: s.args[0] for s in steps if s.op == "Identity"}
    produced = {s.out for s in steps}
    written: list[str] = []
    index = []
    for out in outputs:
        root = out
        while root in source and source[root] in produced:
            root = source[root]  # type: ignore[assignment]
        if root not in written:
            written.append(root)
        index.append(written.index(root))
    if len(written) == len(outputs):
        return outputs, None
    return tuple(written), tuple(index)


class ChainKernel(Kernel):
    """Computes a chain of elementwise nodes in one pass over the output.

    The loop is compiled when the session is created (for the shapes the model declares) and
    cached on disk. When a call's shapes make some chain output smaller than the full broadcast
    shape, the chain runs as one loop per run of consecutive steps of one shape. ``compute`` is
    a function generated per kernel (fusion/calls.py) that picks the call planned for the shapes.
    """

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.subgraph = subgraph
        view = subgraph.view
        if view.graph.parent is not None:  # a subgraph: the element types the provider claimed with
            from onnxplug_numba.subgraph_types import TypedView

            view = TypedView(view)
        steps = []
        for node in subgraph.nodes:
            step = step_for(node, view.dtype_of)
            if step is None:
                raise ValueError(f"{node.describe()} cannot join a fused chain of the numba provider")
            steps.append(step)
        self.steps = tuple(steps)
        dtypes = tuple(dtype_name(view.dtype_of(n)) for n in subgraph.inputs)
        self.input_dtypes = dict(zip(subgraph.inputs, dtypes))
        written, returned = written_outputs(self.steps, tuple(subgraph.outputs))
        self.program = Program(tuple(subgraph.inputs), dtypes, self.steps, written)
        self.threads: ThreadControl = getattr(context.provider, "threads", None) or \
            ThreadControl(context.intra_op_num_threads)
        self.runner = ElementwiseRunner(self.program, self.threads, returned)
        self._calls: dict[tuple[Any, ...], Call] = {}
        # compute is the generated dispatcher itself: the executor binds kernel.compute once, and
        # a method around it would add a frame and an argument tuple to every call
        dispatch = calls.dispatcher(len(subgraph.inputs), self._calls, self._first_call)
        self.compute = dispatch  # type: ignore[method-assign]
        shapes = [_static_shape(subgraph, n) for n in subgraph.inputs]
        if all(s is not None for s in shapes):
            try:
                self.runner.warm(shapes)  # type: ignore[arg-type]
            except ValueError:  # shapes that cannot broadcast: left to the call to report
                pass

    def _fits_in_one_loop(self, shapes: tuple[tuple[int, ...], ...]) -> bool:
        """Whether every chain output has the full broadcast shape of the chain's inputs (False
        when the inputs do not broadcast together although every step's do)."""
        known = dict(zip(self.subgraph.inputs, shapes))
        for step in self.steps:
            known[step.out] = tuple(np.broadcast_shapes(*[known[a] for a in step.args if a is not None]))
        try:
            full = tuple(np.broadcast_shapes(*shapes))
        except ValueError:  # branches of different shapes joined only through a shared input
            return False
        return all(known[o] == full for o in self.subgraph.outputs)

    def _first_call(self, *inputs: Any) -> tuple[np.ndarray, ...]:
        """Plan the call for these shapes: one loop for the whole chain when they allow it, else
        one loop per run of consecutive steps of one shape (``_by_shape``)."""
        arrays = [np.asarray(x) for x in inputs]
        shapes = tuple([a.shape for a in arrays])
        fits = self._fits_in_one_loop(shapes)
        call = self._calls[shapes] = self.runner.call_for(shapes) if fits else self._by_shape(shapes)
        return call(*arrays)

    def _by_shape(self, shapes: tuple[tuple[int, ...], ...]) -> Call:
        """The chain as loops over runs of consecutive steps whose outputs have one shape (an
        attention mask's Where, then the scores' Mul and Add): each run is a program of its own,
        reading chain inputs and earlier runs' values."""
        known = dict(zip(self.subgraph.inputs, shapes))
        runs: list[list[Step]] = []
        last: tuple[int, ...] | None = None
        for step in self.steps:
            shape = known[step.out] = tuple(np.broadcast_shapes(*[known[a] for a in step.args if a is not None]))
            if shape != last:
                runs.append([])
                last = shape
            runs[-1].append(step)
        dtypes = {**self.input_dtypes, **{step.out: step.dtype for step in self.steps}}
        plans = []
        for index, run in enumerate(runs):
            produced = {step.out for step in run}
            reads = list(dict.fromkeys(a for step in run for a in step.args if a is not None and a not in produced))
            later = {a for other in runs[index + 1:] for step in other for a in step.args} | set(self.subgraph.outputs)
            written = tuple(step.out for step in run if step.out in later)
            program = Program(tuple(reads), tuple(dtypes[n] for n in reads), tuple(run), written)
            plans.append((ElementwiseRunner(program, self.threads), tuple(reads), written))
        return calls.sequence(self.subgraph.inputs, plans, self.subgraph.outputs)
