"""Loop: the whole loop compiled into one numba function when its body is simple enough.

An RNN cell unrolled by a Loop runs a handful of tiny ops per iteration, each a kernel call from
Python on the generic path; compiled, a whole iteration costs about as much as one such call. The
body is compiled at the first call, for the ranks and dtypes of that call's values
(``fusion.loop_codegen``); numba caches the machine code on disk. Everything else runs on the
generic path (``run_generic``: the body planned by ``KernelContext.compile_subgraph``, called once
per iteration): zero iterations, values that are not tensors, ranks the generator does not handle,
profiled runs (a profile has an event per body node per iteration), and any error raised by the
compiled loop (the generic path then names the body node at fault, or computes the result if the
compiled loop was wrong to fail).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numba.core.errors import NumbaError
from onnxplug_sdk import Decline, GraphView, KernelContext, Node, check_terminate, errors

from onnxplug_numba.fusion import cache, loop_codegen
from onnxplug_numba.kernels import native_parallel
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider

#: A trip count for a Loop without one (it stops on its condition).
NO_LIMIT = np.iinfo(np.int64).max

#: Iterations of one compiled call when a long loop runs in pieces (RunOptions.terminate checked between)
CHUNK = 1 << 16

_UNSUPPORTED = object()


@NumbaProvider.kernel("Loop", 11)
class Loop(NumbaKernel):
    """ONNX Loop with a body of float32 elementwise ops, products, reductions, Gather and data
    movement (Unsqueeze, Squeeze, Concat, Transpose).

    Scan outputs count against the allocation limit (the body plan's ``scan_check``): the compiled
    loop is given the bytes the limit leaves, stops before its scan values would pass them, and
    the kernel raises AllocationLimitError; the generic path counts them as they grow."""

    wants_scope = True

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        from onnxplug_numba.subgraph_types import TypedView

        body = node.attr("body")
        if body is None or len(node.inputs) < 2:
            return Decline("attribute", "no body, or fewer than two inputs")
        if not native_parallel.AVAILABLE:
            return Decline("device", "numba's parallel layer (native_parallel) is not available here")
        if not node.inputs[0] and not node.inputs[1]:
            return Decline("attribute", "neither a trip count nor a condition: endless on any path")
        if any(vi.name in body.initializers for vi in body.inputs):
            return Decline("attribute", "a body input is also a body initializer")
        for name in node.inputs[2:]:
            t = view.type_of(name) if name else None
            if t is None or t.kind != "tensor":
                return Decline("dtype", f"carried value {name!r} is not a tensor of known type")
        found = loop_codegen.first_unsupported(body, TypedView(GraphView(body, body.nodes)))
        if found is not None:
            bad, kind = found
            what = ("an op the compiled loop does not generate" if kind == "op" else
                    "attributes, element types or ranks the compiled loop does not generate")
            return Decline(kind, f"body node {bad.name or '<unnamed>'!r} ({bad.op_type}) has {what}")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        body = self.attr("body")
        if context.compile_subgraph is None:
            raise RuntimeError(f"{node.describe()}: this kernel context cannot compile subgraphs")
        self.planned_body = context.compile_subgraph(body)
        self.body = body
        self.n_carried = len(body.inputs) - 2
        constants = loop_codegen.body_constants(body)
        self.outer = body.outer_scope_reads()
        self.constant_names = list(constants)
        self.constant_values = list(constants.values())
        self.use_condition = bool(node.inputs[1])
        self._compiled: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def compute(self, max_trips: Any = None, cond: Any = None, *carried: Any, scope: Any = None) -> Any:
        scope = scope or {}
        trips = NO_LIMIT if max_trips is None else int(np.asarray(max_trips).reshape(-1)[0])
        go = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
        values = [*carried, *(scope.get(n) for n in self.outer), *self.constant_values]
        if trips <= 0 or not go or any(v.__class__ is not np.ndarray for v in values) or \
                getattr(self.planned_body, "profiled", False):
            return self.run_generic(max_trips, cond, carried, scope)
        key = tuple((v.ndim, v.dtype.str) for v in values)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compile(key)
        if compiled is _UNSUPPORTED:
            return self.run_generic(max_trips, cond, carried, scope)
        run, source = compiled
        args = [v[()] if v.ndim == 0 else v for v in values]
        check = getattr(self.planned_body, "scan_check", None)  # the allocation limit, if any
        budget = -1 if check is None else int(check.limit)
        try:
            result = self._run_chunks(run, trips, budget, args) if trips > CHUNK else \
                run(trips, True, 0, budget, *args)
        except errors.RunTerminatedError:
            raise
        except NumbaError:  # numba could not type it: never again for these ranks and dtypes
            self._compiled[key] = _UNSUPPORTED
            return self.run_generic(max_trips, cond, carried, scope)
        except Exception:
            # the generic path raises the error that names the body node (or, should the
            # compiled loop have failed wrongly, computes the result)
            return self.run_generic(max_trips, cond, carried, scope)
        done = int(result[0])
        if result[2]:  # the next iteration's scan values would pass the limit
            per = sum(b.nbytes // b.shape[0] for b in result[3 + self.n_carried:])
            raise check.refused(done + 1, (done + 1) * per)
        outputs = []
        for value, dtype, rank in zip(result[3:3 + self.n_carried], source.carried_dtypes, source.carried_ranks):
            if not rank:
                value = np.asarray(value, dtype=dtype)
            elif any(value is v or value.base is v for v in values):
                value = value.copy()  # passed through (Identity of a weight): the output owns its memory
            outputs.append(value)
        outputs += [buffer[:done] for buffer in result[3 + self.n_carried:]]
        return tuple(outputs)

    def _run_chunks(self, run: Any, trips: int, budget: int, args: list) -> tuple:
        """``run(trips, True, 0, budget, *args)`` as calls of ``CHUNK`` iterations, each numbering
        its iterations on from the last, starting from the carried values it left and given what is
        left of the budget, until the trip count, a false condition or the budget, with
        RunOptions.terminate checked between them."""
        n = self.n_carried
        done, go, over, kept, pieces = 0, True, False, 0, []
        while done < trips and go and not over:
            check_terminate(" in a Loop body")
            result = run(min(CHUNK, trips - done), True, done, budget if budget < 0 else budget - kept, *args)
            count, go, over = int(result[0]), bool(result[1]), bool(result[2])
            args[:n] = result[3:3 + n]
            pieces.append([b[:count] for b in result[3 + n:]])
            kept += sum(p.nbytes for p in pieces[-1])
            done += count
        if over:  # the last piece's buffers give the bytes per iteration
            return (done, go, over, *args[:n], *result[3 + n:])
        scans = [np.concatenate([p[k] for p in pieces]) for k in range(len(pieces[0]))] if pieces else []
        return (done, go, over, *args[:n], *scans)

    def run_generic(self, max_trips: Any, cond: Any, carried: tuple, scope: Any) -> tuple:
        """The loop run node by node: the body's plan called once per iteration."""
        limit = None if max_trips is None else int(np.asarray(max_trips).reshape(-1)[0])
        keep_going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
        n_scan = len(self.body.outputs) - 1 - self.n_carried
        state = [None, np.array(keep_going), *carried]  # the body's inputs: (i, cond, carried...)
        scans: list[list] = [[] for _ in range(n_scan)]
        check = getattr(self.planned_body, "scan_check", None)  # counts the scan values against the limit
        i, next_check, counted = 0, 1, []
        while keep_going and (limit is None or i < limit):
            state[0] = np.array(i, dtype=np.int64)
            out = self.planned_body(state, scope)
            state[1:] = out[:1 + self.n_carried]
            for k in range(n_scan):
                scans[k].append(out[1 + self.n_carried + k])
            if check is not None and scans and i + 1 >= next_check:
                next_check = check(i + 1, counted, *scans)
            if cond is not None:
                keep_going = bool(np.asarray(out[0]).reshape(-1)[0])
            i += 1
        stacked = [np.stack(s) if s else self._no_scan(1 + self.n_carried + k) for k, s in enumerate(scans)]
        return tuple(state[2:]) + tuple(stacked)

    def _no_scan(self, index: int) -> np.ndarray:
        """The stacked output of a body output that never produced a value (zero iterations)."""
        vt = self.body.outputs[index].type
        dtype = vt.dtype if vt is not None and vt.dtype is not None else np.float32
        tail: tuple[int, ...] = ()
        if vt is not None and vt.shape is not None and all(isinstance(d, int) for d in vt.shape):
            tail = tuple(vt.shape)
        return np.zeros((0, *tail), dtype=dtype)

    def _compile(self, key: tuple) -> Any:
        """The (run function, source) for these ranks and dtypes, or ``_UNSUPPORTED``."""
        with self._lock:
            found = self._compiled.get(key)
            if found is not None:
                return found
            names = [vi.name for vi in self.body.inputs[2:]] + self.outer + self.constant_names
            signature = loop_codegen.LoopSignature(tuple(r for r, _ in key), tuple(d for _, d in key),
                                                   self.use_condition)
            try:
                source = loop_codegen.loop_source(self.body, names, signature)
            except loop_codegen.Unsupported:
                found = _UNSUPPORTED
            else:
                found = (cache.module_for(source.text).run, source)
            self._compiled[key] = found
            return found
