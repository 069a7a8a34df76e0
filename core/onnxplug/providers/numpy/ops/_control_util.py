"""Subgraph plumbing shared by If, Loop and Scan."""

from __future__ import annotations

import numpy as np

from onnxplug.kernel import SubgraphRunner


def compile_body(kernel, name: str) -> SubgraphRunner:
    """Compile the graph attribute ``name`` of ``kernel``'s node with the session's providers."""
    graph = kernel.attr(name)
    if graph is None:
        raise ValueError(f"{kernel.node.describe()}: missing graph attribute {name!r}")
    if kernel.context.compile_subgraph is None:
        raise RuntimeError(f"{kernel.node.describe()}: this kernel context cannot compile subgraphs")
    return kernel.context.compile_subgraph(graph)


def empty_like_output(graph, index: int, lead: tuple[int, ...] = (0,)) -> np.ndarray:
    """An empty stacked output for a body output that never produced a value (zero iterations)."""
    vt = graph.outputs[index].type
    dtype = vt.dtype if vt is not None and vt.dtype is not None else np.float32
    tail: tuple[int, ...] = ()
    if vt is not None and vt.shape is not None and all(isinstance(d, int) for d in vt.shape):
        tail = tuple(vt.shape)
    return np.zeros(lead + tail, dtype=dtype)


