"""Python source for a whole ONNX Loop, compiled by numba into one function.

On the generic path a Loop body of small ops costs a kernel call per node per iteration. Here the
body becomes one ``@njit`` function and the iterations one compiled ``while`` loop, with the scan
outputs written into buffers that double as they fill, up to a byte budget (the allocation limit).
The body may hold the ops of :data:`OPS` only, on float32 values (bool for conditions, integers for
Gather's scalar index and the iteration number; data movement takes any of them). :func:`body_supported` decides that from the graph (at
partitioning); :func:`loop_source` writes the source once the ranks and dtypes of the actual inputs
are known (at the first call), and raises :class:`Unsupported` for what it cannot express, such as
a batched MatMul. Values of rank 0 are numba scalars inside. The source never names a tensor or
node (locals are ``a0``, ``v3``...), so two equal loops share one cached module.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from onnxplug_sdk import Graph, GraphView, Node

from onnxplug_numba.fusion.ops import FUSED_DOMAIN
from onnxplug_numba.kernels import fastmath, loop_helpers

_HELPERS_VERSION = hashlib.sha256(
    (inspect.getsource(loop_helpers) + inspect.getsource(fastmath)).encode()).hexdigest()[:16]

#: (scalar, array) helpers: numba's own call libm per element, which does not vectorise
FAST_UNARY = {"Tanh": ("tanh32", "tanh_array"), "Exp": ("exp32", "exp_array"),
              "Sigmoid": ("sigmoid32", "sigmoid_array")}
UNARY = {"Identity": "{0}", "Abs": "np.abs({0})", "Neg": "np.negative({0})", "Log": "np.log({0})", "Sqrt": "np.sqrt({0})", "Sin": "np.sin({0})",
         "Cos": "np.cos({0})", "Floor": "np.floor({0})", "Ceil": "np.ceil({0})",
         "Relu": "np.maximum({0}, _ZERO)", "Reciprocal": "_ONE / {0}", "Not": "np.logical_not({0})"}
BINARY = {"Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "Div": "{0} / {1}",
          "Max": "np.maximum({0}, {1})", "Min": "np.minimum({0}, {1})"}
COMPARE = {"Less": "{0} < {1}", "Greater": "{0} > {1}", "LessOrEqual": "{0} <= {1}",
           "GreaterOrEqual": "{0} >= {1}", "Equal": "{0} == {1}",
           "And": "np.logical_and({0}, {1})", "Or": "np.logical_or({0}, {1})",
           "Xor": "np.logical_xor({0}, {1})"}
REDUCE = {"ReduceMax": "np.max({0})", "ReduceMin": "np.min({0})", "ReduceSum": "np.sum({0})",
          "ReduceMean": "np.float32(np.mean({0}))"}
#: Data movement with static parameters (attributes, or axes from a constant of the body).
MOVES = frozenset({"Unsqueeze", "Squeeze", "Concat", "Transpose"})
#: Every op a compiled body may hold.
OPS = frozenset(FAST_UNARY) | frozenset(UNARY) | frozenset(BINARY) | frozenset(COMPARE) | frozenset(REDUCE) \
    | MOVES | {"MatMul", "Gemm", "Gather", "Constant"}
#: The optimizer's Gemm + activation (docs/fused-ops.md), for the activations compiled here: a cell's
#: Gemm fuses with its Tanh or Sigmoid once nothing stands between them.
FUSED_GEMM_ACTIVATIONS = {"": "{0}", "Relu": "np.maximum({0}, _ZERO)", "Tanh": "tanh_array({0})",
                          "Sigmoid": "sigmoid_array({0})"}

_FLOAT = np.dtype(np.float32)
_BOOL = np.dtype(bool)
_INDEX = frozenset({np.dtype(np.int64), np.dtype(np.int32)})
_LOGICAL = frozenset({"Not", "And", "Or", "Xor"})
_NUMPY_NAMES = {"bool": "bool_"}


class Unsupported(Exception):
    """The loop cannot be compiled as given; the generic path runs it."""


def body_constants(body: Graph) -> dict[str, np.ndarray]:
    """The body's initializers and Constant node values (``value`` only) by name."""
    found = dict(body.initializers)
    for node in body.nodes:
        if node.op_type == "Constant" and node.attr("value") is not None:
            found[node.outputs[0]] = np.asarray(node.attr("value"))
    return found


def body_supported(body: Graph, view: GraphView) -> bool:
    """Whether every node of ``body`` is an op this module compiles, with supported attributes and
    dtypes (``view`` gives the element types, the body's own and its outer scope's)."""
    return first_unsupported(body, view) is None


def first_unsupported(body: Graph, view: GraphView) -> tuple[Node, str] | None:
    """The first node of ``body`` this module does not compile, and why (``"op"``: not an op it
    generates; ``"attribute"``: its attributes, element types or ranks), or None."""
    constants = body_constants(body)
    for node in body.nodes:
        if _is_fused_gemm(node):
            known = node.attr("activation", "") in FUSED_GEMM_ACTIVATIONS
        else:
            known = node.domain in ("", "ai.onnx") and node.op_type in OPS and not node.subgraphs
        if not known:
            return node, "op"
        if not _node_ok(node, view, constants):
            return node, "attribute"
    return None


def _is_fused_gemm(node: Node) -> bool:
    return node.op_type == "FusedGemm" and node.domain == FUSED_DOMAIN


def static_axes(node: Node, constants: dict[str, np.ndarray]) -> list[int] | None:
    """Unsqueeze's or Squeeze's axes: the attribute (before opset 13) or a constant input."""
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = constants.get(node.inputs[1])
        if value is None or value.dtype.kind != "i":
            return None
        axes = value.reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def _node_ok(node: Node, view: GraphView, constants: dict[str, np.ndarray]) -> bool:
    op = node.op_type
    ins = [n for n in node.inputs if n]
    dtype = view.dtype_of
    if op in MOVES:
        data = ins[:1] if op in ("Unsqueeze", "Squeeze") else ins
        if op in ("Unsqueeze", "Squeeze") and static_axes(node, constants) is None:
            return False
        kinds = {dtype(n) for n in data}
        return len(kinds) == 1 and kinds <= {_FLOAT, _BOOL} | _INDEX
    if op == "Constant":
        return set(node.attributes) == {"value"} and np.asarray(node.attr("value")).dtype in {_FLOAT, _BOOL} | _INDEX
    if op == "Gather":
        return node.attr("axis", 0) == 0 and len(ins) == 2 and dtype(ins[0]) == _FLOAT \
            and dtype(ins[1]) in _INDEX
    if op in REDUCE:
        # all axes, no kept axes: the axes attribute (before opset 18) or input (from 18) absent
        return len(ins) == 1 and node.attr("keepdims", 1) == 0 and node.attr("axes") is None \
            and node.attr("noop_with_empty_axes", 0) == 0 and dtype(ins[0]) == _FLOAT
    if op == "Identity":
        return dtype(ins[0]) in {_FLOAT, _BOOL} | _INDEX
    if op in ("Gemm", "FusedGemm") and len(ins) < 2:
        return False
    wanted = _BOOL if op in _LOGICAL else _FLOAT
    if any(dtype(n) != wanted for n in ins):
        return False
    out = _BOOL if op in COMPARE or op == "Not" else _FLOAT
    return all(dtype(n) in (out, None) for n in node.outputs if n)


@dataclass
class LoopSignature:
    """What the source depends on beyond the body: ranks and dtypes of the arguments."""

    #: per argument (carried values, then outer values, then the body's constants)
    ranks: tuple[int, ...]
    dtypes: tuple[str, ...]
    use_condition: bool


@dataclass
class LoopSource:
    """A generated loop: its source, and the dtypes and ranks of its results."""

    text: str
    carried_dtypes: list[np.dtype] = field(default_factory=list)
    carried_ranks: list[int] = field(default_factory=list)


def loop_source(body: Graph, arguments: Sequence[str], signature: LoopSignature) -> LoopSource:
    """The module computing ``run(trips, cond, first, budget, *arguments)`` (iterations numbered
    from ``first``) -> (iterations done, last condition, over, carried values..., scan buffers...)
    for ``body``, whose inputs are (iteration, cond, carried...) and whose remaining reads are
    ``arguments`` after the carried ones. With ``budget`` of 0 or more the loop stops before its
    scan values pass that many bytes, and ``over`` says that the next iteration would."""
    names = [vi.name for vi in body.inputs]
    n_carried = len(names) - 2
    constants = body_constants(body)
    local: dict[str, str] = {}
    kind: dict[str, tuple[int, np.dtype]] = {}
    params = [f"a{k}" for k in range(len(arguments))]
    for k, (name, rank, dt) in enumerate(zip(arguments, signature.ranks, signature.dtypes)):
        local[name], kind[name] = params[k], (rank, np.dtype(dt))
    local[names[0]], kind[names[0]] = "it", (0, np.dtype(np.int64))
    local[names[1]], kind[names[1]] = "cond", (0, _BOOL)
    for k, name in enumerate(names[2:]):  # the carried values come first among the arguments
        local[name], kind[name] = params[k], kind[arguments[k]]
    lines = []
    for index, node in enumerate(body.nodes):
        if node.op_type == "Constant":
            continue  # passed in as an argument
        out = f"v{index}"
        expr, result = _expression(node, [local.get(n, "") for n in node.inputs],
                                   [kind.get(n) for n in node.inputs], constants)
        lines.append(f"    {out} = {expr}")
        local[node.outputs[0]], kind[node.outputs[0]] = out, result
    outputs = [vi.name for vi in body.outputs]
    for name in outputs:
        if name not in local:
            raise Unsupported(f"body output {name!r} is not computed")
    cond_rank = kind[outputs[0]][0]
    returned = [f"truth({local[outputs[0]]})" if cond_rank else f"bool({local[outputs[0]]})"]
    returned += [local[n] for n in outputs[1:]]
    carried_kinds = [kind[n] for n in outputs[1:1 + n_carried]]
    for k, (rank, dt) in enumerate(carried_kinds):
        if (rank, dt) != kind[arguments[k]]:
            raise Unsupported("a carried value changes rank or dtype")
    scans = [kind[n] for n in outputs[1 + n_carried:]]
    return LoopSource(_module(params, lines, returned, n_carried, scans, signature.use_condition),
                      [dt for _, dt in carried_kinds], [r for r, _ in carried_kinds])


def _expression(node: Node, args: list[str], kinds: list[tuple[int, np.dtype] | None],
                constants: dict[str, np.ndarray]) -> tuple[str, tuple[int, np.dtype]]:
    """(numba expression, (rank, dtype) of the result) of one body node."""
    op = node.op_type
    if any(a == "" for a, n in zip(args, node.inputs) if n):
        raise Unsupported(f"{node.describe()} reads a value the loop does not pass")
    present = [(a, k) for a, k, n in zip(args, kinds, node.inputs) if n]
    ranks = [k[0] for _, k in present]  # type: ignore[index]
    dtypes = [k[1] for _, k in present]  # type: ignore[index]
    first = dtypes[0]
    if op in MOVES:
        return _move(node, args, ranks, dtypes, constants)
    # the values as they arrive must have the dtypes the body was claimed for
    if op == "Gather":
        if dtypes[0] != _FLOAT or dtypes[1] not in _INDEX:
            raise Unsupported(f"{node.describe()}: dtypes {dtypes}")
    elif op != "Identity" and any(d != (_BOOL if op in _LOGICAL else _FLOAT) for d in dtypes):
        raise Unsupported(f"{node.describe()}: dtypes {dtypes}")
    if op in FAST_UNARY:
        helper = FAST_UNARY[op][1 if ranks[0] else 0]
        return f"{helper}({args[0]})", (ranks[0], first)
    if op in UNARY:
        return UNARY[op].format(args[0]), (ranks[0], first)
    if op in BINARY or op in COMPARE:
        if len(present) != 2:
            raise Unsupported(f"{node.describe()}: {len(present)} inputs")
        template = BINARY.get(op) or COMPARE[op]
        return template.format(args[0], args[1]), (max(ranks), first if op in BINARY else _BOOL)
    if op in REDUCE:
        if ranks[0] == 0:
            raise Unsupported("a reduction of a 0-d value")
        return REDUCE[op].format(args[0]), (0, first)
    if op == "Gather":
        if ranks[1] != 0 or ranks[0] == 0:
            raise Unsupported("Gather of more than one index")
        return f"gather_first({args[0]}, {args[1]})", (ranks[0] - 1, first)
    if op == "MatMul":
        name = {(2, 2): "matmul_2d", (1, 2): "matmul_1d_2d", (2, 1): "matmul_2d_1d", (1, 1): "matmul_1d_1d"}
        if tuple(ranks) not in name:
            raise Unsupported(f"MatMul of ranks {tuple(ranks)}")
        return f"{name[tuple(ranks)]}({args[0]}, {args[1]})", (max(ranks) - 1 if 1 in ranks else 2, first)
    if op in ("Gemm", "FusedGemm"):
        if ranks[0] != 2 or ranks[1] != 2 or (len(ranks) > 2 and ranks[2] > 2):
            raise Unsupported("Gemm of other than matrices")
        alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
        expr = (f"gemm({args[0]}, {args[1]}, {bool(node.attr('transA', 0))}, "
                f"{bool(node.attr('transB', 0))}, np.float32({alpha!r}))")
        if len(present) > 2:
            c = args[2] if beta == 1.0 else f"np.float32({beta!r}) * {args[2]}"
            expr = f"{expr} + {c}"
        if op == "FusedGemm":
            expr = FUSED_GEMM_ACTIVATIONS[node.attr("activation", "")].format(f"({expr})")
        return expr, (2, first)
    raise Unsupported(f"{node.describe()}")  # pragma: no cover - OPS and this function agree


def _move(node: Node, args: list[str], ranks: list[int], dtypes: list[np.dtype],
          constants: dict[str, np.ndarray]) -> tuple[str, tuple[int, np.dtype]]:
    """Unsqueeze, Squeeze, Concat and Transpose for the ranks at hand."""
    op, x, rank = node.op_type, args[0], ranks[0]
    if len(set(dtypes[:1] if op in ("Unsqueeze", "Squeeze") else dtypes)) != 1:
        raise Unsupported(f"{node.describe()}: dtypes {dtypes}")
    if op in ("Unsqueeze", "Squeeze"):
        axes = static_axes(node, constants) or []
        out_rank = rank + len(axes) if op == "Unsqueeze" else rank - len(axes)
        bound = out_rank if op == "Unsqueeze" else rank
        picked = sorted(a + bound if a < 0 else a for a in axes)
        if not axes or len(set(picked)) != len(picked) or any(a < 0 or a >= bound for a in picked) \
                or out_rank < 0:
            raise Unsupported(f"{node.describe()}: axes {axes} for rank {rank}")
        if op == "Unsqueeze":
            if rank == 0:
                return f"np.full(({', '.join(['1'] * out_rank)},), {x})", (out_rank, dtypes[0])
            source = iter(range(rank))
            dims = ["1" if k in picked else f"{x}.shape[{next(source)}]" for k in range(out_rank)]
        else:
            if out_rank == 0:
                return f"single({x})", (0, dtypes[0])
            dims = [f"{x}.shape[{k}]" for k in range(rank) if k not in picked]
        return f"np.ascontiguousarray({x}).reshape(({', '.join(dims)},))", (out_rank, dtypes[0])
    if op == "Concat":
        axis = int(node.attr("axis", 0))
        axis = axis + rank if axis < 0 else axis
        if rank == 0 or len(set(ranks)) != 1 or not 0 <= axis < rank:
            raise Unsupported(f"{node.describe()}: ranks {ranks}, axis {axis}")
        return f"np.concatenate(({', '.join(a for a in args if a)},), axis={axis})", (rank, dtypes[0])
    perm = node.attr("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)) or rank < 2:
        raise Unsupported(f"{node.describe()}: perm {perm} for rank {rank}")
    return f"np.ascontiguousarray({x}.transpose(({', '.join(map(str, perm))},)))", (rank, dtypes[0])


def _module(params: list[str], body_lines: list[str], returned: list[str], n_carried: int,
            scans: list[tuple[int, np.dtype]], use_condition: bool) -> str:
    """The module text: ``body`` (one iteration) and ``run`` (the loop)."""
    args = ", ".join(params)
    carried = params[:n_carried]
    rest = ", ".join(params[n_carried:])
    out = [
        f"# onnxplug numba Loop, helpers {_HELPERS_VERSION}",
        "import numpy as np",
        "from numba import njit",
        "from onnxplug_numba.kernels.fastmath import exp32, sigmoid32, tanh32",
        "from onnxplug_numba.kernels.loop_helpers import (exp_array, gather_first, gemm, grown,",
        "    matmul_1d_1d, matmul_1d_2d, matmul_2d, matmul_2d_1d, sigmoid_array, single, tanh_array, truth)",
        "",
        "_ZERO = np.float32(0)",
        "_ONE = np.float32(1)",
        "",
        "",
        "@njit(cache=True, nogil=True, error_model='numpy')",
        f"def body(it, cond, {args}):",
        *(body_lines or []),
        f"    return ({', '.join(returned)},)",
        "",
        "",
        "@njit(cache=True, nogil=True, error_model='numpy')",
        f"def run(trips, cond, first, budget, {args}):",
        f"    r = body(first, cond, {args})",
    ]
    step = [f"    {c} = r[{1 + k}]" for k, c in enumerate(carried)]
    if use_condition:
        step.append("    cond = r[0]")
    out += step
    scan_names = [f"s{k}" for k in range(len(scans))]
    if scans:
        # bytes per iteration from the first one's values; the buffers never hold more rows than
        # ``budget`` bytes allow (``cap``), so checking the budget costs nothing per iteration
        sizes = [f"r[{1 + n_carried + k}].size * {dt.itemsize}" if rank else str(dt.itemsize)
                 for k, (rank, dt) in enumerate(scans)]
        out.append(f"    per = {' + '.join(sizes)}")
        out.append("    cap = trips if budget < 0 or per == 0 else min(trips, budget // per)")
    else:
        out.append("    cap = trips")
    for k, (rank, dt) in enumerate(scans):
        value = f"r[{1 + n_carried + k}]"
        rows = "max(min(cap, 16), 1)"
        shape = f"({rows},) + {value}.shape" if rank else rows
        out.append(f"    {scan_names[k]} = np.empty({shape}, np.{_NUMPY_NAMES.get(dt.name, dt.name)})")
        out.append(f"    {scan_names[k]}[0] = {value}")
    out.append("    over = cap == 0")
    out.append("    n = 0 if over else 1")
    out.append("    while n < cap and cond:")
    out.append(f"        r = body(first + n, cond, {', '.join(carried + ([rest] if rest else []))})")
    for k, (rank, _) in enumerate(scans):
        value, s = f"r[{1 + n_carried + k}]", scan_names[k]
        if rank:
            out.append(f"        if {value}.shape != {s}.shape[1:]:")
            out.append("            raise ValueError('Loop: a scan output changed shape')")
        out.append(f"        if n == {s}.shape[0]:")
        out.append(f"            {s} = grown({s}, n, cap)")
        out.append(f"        {s}[n] = {value}")
    out += ["    " + line for line in step]
    out.append("        n += 1")
    out.append("    if n == cap and cap < trips and cond:")
    out.append("        over = True  # one more iteration runs, and its scan values pass the budget")
    results = ", ".join(["n", "cond", "over"] + carried + scan_names)
    out.append(f"    return ({results},)")
    return "\n".join(out) + "\n"
