"""Every elementwise op of the code generator as a single-node kernel (a one-step program)."""

from __future__ import annotations

import threading

import numpy as np
from onnxplug_sdk import GraphView, KernelContext, Node

from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import FUSED_DOMAIN, RULES, step_for
from onnxplug_numba.fusion.runner import Call, ElementwiseRunner
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider, elementwise_opset_ok


class ElementwiseKernel(NumbaKernel):
    """One elementwise node, compiled for the dtypes it meets (one generated loop per dtype set)."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._runners: dict[tuple[str, ...], tuple[ElementwiseRunner, list[int]]] = {}
        self._calls: dict[tuple[tuple[tuple[int, ...], np.dtype], ...], Call] = {}
        self._lock = threading.Lock()

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return elementwise_opset_ok(node) and step_for(node, view.dtype_of) is not None

    def _runner(self, inputs: tuple[np.ndarray | None, ...]) -> tuple[ElementwiseRunner, list[int]]:
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
                program = Program(tuple(names), tuple(dtypes[n].name for n in names), (step,), (step.out,))
                found = (ElementwiseRunner(program, self.threads), positions)
                self._runners[key] = found
        return found

    def _call_for(self, inputs: tuple[np.ndarray | None, ...]) -> Call:
        """The runner's planned call for these inputs, reading each distinct input once."""
        runner, positions = self._runner(inputs)
        call = runner.call_for(tuple([inputs[i].shape for i in positions]))  # type: ignore[union-attr]
        if positions == list(range(len(inputs))):
            return call
        return lambda arrays: call([arrays[i] for i in positions])

    def compute(self, *inputs: np.ndarray | None) -> np.ndarray:
        try:
            call = self._calls[tuple([(x.shape, x.dtype) for x in inputs])]  # type: ignore[union-attr]
        except AttributeError:  # an omitted input (None) or a value that is not an array
            runner, positions = self._runner(tuple(None if x is None else np.asarray(x) for x in inputs))
            return runner(*[inputs[i] for i in positions])[0]
        except KeyError:
            call = self._calls[tuple([(x.shape, x.dtype) for x in inputs])] = self._call_for(inputs)
        return call(inputs)[0]

for _op in RULES:
    if _op != "Identity":  # Identity is a layout kernel (any dtype, no copy)
        NumbaProvider.kernel(_op)(ElementwiseKernel)
NumbaProvider.kernel("Gelu", domain=FUSED_DOMAIN)(ElementwiseKernel)
