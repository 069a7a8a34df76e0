import sys

import numpy as np

from onnxplug.plan_compiler import as_bool
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._control_util import compile_body, empty_like_output
from onnxplug.providers.numpy.registry import op


@op("Loop")
class Loop(NumpyKernel):
    """for (i = 0; i < M && cond; ++i) body(i, cond, carried...) -> (cond, carried..., scan outputs...).

    An omitted M or cond drops that limit; carried values may be tensors, sequences or optionals;
    scan outputs are stacked along a new first axis.
    """

    wants_scope = True

    def __init__(self, node, context):
        super().__init__(node, context)
        self.body = compile_body(self, "body")
        self.graph = self.attr("body")
        #: the session's body plans run all the iterations in one generated function
        self.run_loop = getattr(self.body, "run_loop", None)

    def compute(self, max_trips=None, cond=None, *carried, scope=None):
        if max_trips is None:
            limit = None
        elif max_trips.__class__ is np.ndarray and max_trips.ndim == 0:
            limit = int(max_trips)
        else:
            limit = int(np.asarray(max_trips).reshape(-1)[0])
        keep_going = True if cond is None else as_bool(cond)
        n_carried = len(carried)
        run = self.run_loop or self._iterate
        _, carried, scans = run(sys.maxsize if limit is None else limit, cond is not None, np.array(keep_going),
                                carried, scope or {})
        stacked = [_stack(s) if s else empty_like_output(self.graph, 1 + n_carried + k)
                   for k, s in enumerate(scans)]
        return tuple(carried) + tuple(stacked)

    def _iterate(self, limit, use_cond, cond, carried, scope):
        """``run_loop``'s work for a runner without it: the body called once per iteration."""
        n_carried = len(carried)
        n_scan = len(self.graph.outputs) - 1 - n_carried
        keep_going = as_bool(cond) if use_cond else True
        state = [None, cond, *carried]  # the body's inputs: (i, cond, carried...)
        scans: list[list] = [[] for _ in range(n_scan)]
        i = 0
        while keep_going and i < limit:
            state[0] = np.array(i, dtype=np.int64)
            out = self.body(state, scope)
            state[1:] = out[:1 + n_carried]
            for k in range(n_scan):
                scans[k].append(out[1 + n_carried + k])
            if use_cond:
                keep_going = as_bool(out[0])
            i += 1
        return i, tuple(state[2:]), scans


def _stack(values: list) -> np.ndarray:
    """np.stack(values): one concatenation along the first axis when every value has the first's
    shape (cheaper than np.stack's checks), else np.stack, with its checks and errors."""
    first = values[0]
    shape = getattr(first, "shape", None)
    if shape and all(v.__class__ is np.ndarray and v.shape == shape for v in values):
        return np.concatenate(values).reshape((len(values), *shape))
    return np.stack(values)
