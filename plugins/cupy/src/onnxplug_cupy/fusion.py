"""A claimed chain of elementwise nodes as one generated CUDA kernel, compiled at session creation."""

from __future__ import annotations

from typing import Any

from onnxplug_sdk import FusedSubgraph, Kernel, KernelContext, errors

from onnxplug_cupy.codegen.elementwise import Program
from onnxplug_cupy.codegen.expressions import step_for
from onnxplug_cupy.runtime.elementwise import ElementwiseRunner


def _rank(subgraph: FusedSubgraph) -> int | None:
    ranks = []
    for name in [*subgraph.inputs, *subgraph.outputs]:
        t = subgraph.view.type_of(name)
        if t is None or t.shape is None:
            return None
        ranks.append(len(t.shape))
    return max(ranks, default=0)


def chain_program(subgraph: FusedSubgraph) -> Program:
    """The program of a claimed chain: its nodes in graph order over the subgraph's inputs."""
    view = subgraph.view
    steps = []
    for node in subgraph.nodes:
        step = step_for(node, view.dtype_of)
        if step is None:
            raise errors.PartitionError(f"provider 'cupy' claimed {node.describe()} in fused subgraph "
                                        f"{subgraph.name!r} but cannot generate it")
        steps.append(step)
    dtypes = []
    for name in subgraph.inputs:
        dtype = view.dtype_of(name)
        if dtype is None:
            raise errors.PartitionError(f"fused subgraph {subgraph.name!r}: input {name!r} has no known type")
        dtypes.append(dtype.name)
    return Program(tuple(subgraph.inputs), tuple(dtypes), tuple(steps), tuple(subgraph.outputs))


class FusedElementwiseKernel(Kernel):
    """Computes ``subgraph.outputs`` from ``subgraph.inputs`` in one launch."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.subgraph = subgraph
        self.backend: Any = context.provider.backend  # type: ignore[attr-defined]
        self.program = chain_program(subgraph)
        label = f"fused subgraph {subgraph.name!r} ({self.program.describe()})"
        # a chain nothing reads (dead code the optimizer did not remove) computes nothing
        self.runner = ElementwiseRunner(self.backend, self.program, _rank(subgraph), label) \
            if self.program.outputs else None

    def compute(self, *inputs: Any) -> tuple[Any, ...]:
        if self.runner is None:
            return ()
        with self.backend.scope():
            return tuple(self.runner(*inputs))
