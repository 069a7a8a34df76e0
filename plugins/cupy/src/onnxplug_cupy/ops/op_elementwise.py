"""Every elementwise op of the generator as a single-node kernel, compiled at session creation.

float16 nodes compute in float32 (inputs widened, result rounded back), as the generated C
has no half type.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.codegen.elementwise import Program
from onnxplug_cupy.codegen.expressions import FUSED_DOMAIN, FUSED_RULES, RULES, step_for
from onnxplug_cupy.ops._base import CupyKernel
from onnxplug_cupy.provider import CupyProvider
from onnxplug_cupy.runtime.elementwise import ElementwiseRunner

_HALF = np.dtype(np.float16)
_SINGLE = np.dtype(np.float32)


def _widened(dtype_of: Callable[[str], Any]) -> Callable[[str], Any]:
    def lookup(name: str) -> Any:
        dtype = dtype_of(name)
        return _SINGLE if dtype == _HALF else dtype
    return lookup


class ElementwiseKernel(CupyKernel):
    """One elementwise node as a generated kernel."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return step_for(node, _widened(view.dtype_of)) is not None

    def setup(self) -> None:
        view, node = self.view, self.node
        step = step_for(node, _widened(view.dtype_of))
        assert step is not None  # supports() said so when the node was claimed
        names = list(dict.fromkeys(n for n in node.inputs if n))
        self.positions = [node.inputs.index(n) for n in names]
        dtypes = [step.arg_dtypes[node.inputs.index(n)] for n in names]
        self.widen = [view.dtype_of(n) == _HALF for n in names]
        self.narrow = view.dtype_of(node.outputs[0]) == _HALF
        program = Program(tuple(names), tuple(d or "" for d in dtypes), (step,), (step.out,))
        out_type = view.type_of(node.outputs[0])
        rank = len(out_type.shape) if out_type is not None and out_type.shape is not None else None
        self.runner = ElementwiseRunner(self.backend, program, rank, node.describe())

    def run(self, *inputs: Any) -> Any:
        arrays = [inputs[i] for i in self.positions]
        arrays = [a.astype(np.float32) if w else a for a, w in zip(arrays, self.widen)]
        y = self.runner(*arrays)[0]
        return y.astype(np.float16) if self.narrow else y


for _op in RULES:
    if _op not in ("Identity", "BiasGelu"):  # Identity is a layout kernel (any dtype, no copy)
        CupyProvider.kernel(_op)(ElementwiseKernel)
for _op in FUSED_RULES:
    CupyProvider.kernel(_op, domain=FUSED_DOMAIN)(ElementwiseKernel)
