"""Every elementwise op of the code generator as a single-node kernel (a one-step program)."""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node
from onnxplug_sdk.helpers import untyped_reason

from onnxplug_numba.fusion import calls
from onnxplug_numba.fusion.calls import Call
from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import CHAIN_ONLY, FUSED_DOMAIN, RULES, dtype_name, step_for
from onnxplug_numba.fusion.runner import ElementwiseRunner
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider, elementwise_opset_ok


class ElementwiseKernel(NumbaKernel):
    """One elementwise node, compiled for the dtypes it meets (one generated loop per dtype set).

    ``compute`` is a function generated per kernel (fusion/calls.py) that picks the call planned
    for the inputs' shapes and dtypes, and returns the output as a 1-tuple.
    """

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._runners: dict[tuple[str, ...], tuple[ElementwiseRunner, list[int]]] = {}
        self._calls: dict[tuple[Any, ...], Call] = {}  # by input shapes and dtypes
        # compute is the generated dispatcher itself (the executor binds kernel.compute once; a
        # method around it would add a frame and an argument tuple): it returns a 1-tuple, which
        # the Kernel contract allows for a single output
        dispatch = calls.dispatcher(len(node.inputs), self._calls, self._first_call, with_dtypes=True)
        self.compute = dispatch  # type: ignore[method-assign]
        self._lock = threading.Lock()

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        if not elementwise_opset_ok(node):
            return Decline("attribute", "a binary op before opset 7 (its broadcast attribute) is not generated")
        if step_for(node, view.dtype_of) is None:
            untyped = next((n for n in node.inputs if n and view.dtype_of(n) is None), None)
            if untyped is not None:
                return Decline("dtype", untyped_reason(view, untyped))
            types = ", ".join(str(view.dtype_of(n)) for n in node.inputs if n)
            return Decline("dtype", f"no generated {node.op_type} loop for input types ({types})")
        return True

    def _runner(self, inputs: Sequence[np.ndarray | None]) -> tuple[ElementwiseRunner, list[int]]:
        key = tuple([x.dtype if x is not None else None for x in inputs])  # dtype objects hash fast
        found = self._runners.get(key)
        if found is None:
            with self._lock:
                dtypes = {name: np.dtype(d) for name, d in zip(self.node.inputs, key) if name}
                step = step_for(self.node, lambda n: dtypes.get(n))
                if step is None:
                    raise TypeError(f"{self.node.describe()}: inputs of dtypes {[str(d) for d in key]} are not "
                                    "supported by the numba provider")
                names = list(dict.fromkeys(n for n in self.node.inputs if n))
                positions = [self.node.inputs.index(n) for n in names]
                program = Program(tuple(names), tuple(dtype_name(dtypes[n]) for n in names), (step,), (step.out,))
                found = (ElementwiseRunner(program, self.threads), positions)
                self._runners[key] = found
        return found

    def _first_call(self, *inputs: np.ndarray | None) -> tuple[np.ndarray, ...]:
        """Plan the call for these input shapes and dtypes; inputs that are omitted (None) or not
        arrays take the unplanned path on every call."""
        if not all(isinstance(x, np.ndarray) for x in inputs):
            runner, positions = self._runner([None if x is None else np.asarray(x) for x in inputs])
            return runner(*[inputs[i] for i in positions])
        runner, positions = self._runner(inputs)
        call = runner.call_for(tuple([inputs[i].shape for i in positions]))  # type: ignore[union-attr]
        if positions != list(range(len(inputs))):  # a repeated input is passed once
            loop = call
            call = lambda *xs: loop(*[xs[i] for i in positions])  # noqa: E731
        self._calls[calls.shape_key(inputs, with_dtypes=True)] = call
        return call(*inputs)


for _op in RULES:
    if _op != "Identity" and _op not in CHAIN_ONLY:  # Identity is a layout kernel (any dtype, no copy)
        NumbaProvider.kernel(_op)(ElementwiseKernel)
NumbaProvider.kernel("Gelu", domain=FUSED_DOMAIN)(ElementwiseKernel)
