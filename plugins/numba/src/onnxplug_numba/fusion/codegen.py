"""Python source for one elementwise program, compiled by numba into a single loop.

Two loop shapes: ``flat`` (every input the full contiguous output or one scalar; one loop over the
elements ``[lo, hi)``) and ``nd`` (general broadcasting: rows ``[lo, hi)`` of the coalesced innermost
axis, each input through its own element strides, its innermost stride specialised as ``c``
contiguous, ``z`` zero or ``g`` any other). Each module defines ``kernel`` (``nogil=True``,
``cache=True``, no fastmath flag: every op rounds as its own kernel would) over ``[lo, hi)``, and
``kernel_shared``, which runs it in parts inside a numba prange region for large calls (cheaper than
handing parts to Python pool threads); a second process loads the machine code of both from disk.
The source never names a tensor or node (locals are ``a0``, ``v3``, ``w0``...), so two chains doing
the same computation on the same dtypes produce byte-identical source and share one module.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass

from onnxplug_numba.fusion import ops, scalar_ops
from onnxplug_numba.kernels import fastmath
from onnxplug_numba.fusion.ops import Step

_HELPERS_VERSION = hashlib.sha256(
    (inspect.getsource(scalar_ops) + inspect.getsource(ops) + inspect.getsource(fastmath)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Program:
    """Elementwise steps over named inputs, producing named outputs (all with the output's shape)."""

    inputs: tuple[str, ...]
    input_dtypes: tuple[str, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]

    def output_dtypes(self) -> tuple[str, ...]:
        produced = {s.out: s.dtype for s in self.steps}
        known = {**dict(zip(self.inputs, self.input_dtypes)), **produced}
        return tuple(known[o] for o in self.outputs)

    def describe(self) -> str:
        return " -> ".join(s.op for s in self.steps)


def _body(program: Program, load: dict[str, str], indent: str) -> list[str]:
    """Statements computing every step from the loaded inputs; returns the lines."""
    local = dict(load)
    lines = []
    for k, step in enumerate(program.steps):
        args = [local[a] if a is not None else None for a in step.args]
        name = f"v{k}"
        lines.append(f"{indent}{name} = {ops.expression(step, args)}")
        local[step.out] = name
    for j, out in enumerate(program.outputs):
        lines.append(f"{indent}w{j}[OUT_INDEX] = {local[out]}")
    return lines


def _flat(program: Program, kinds: tuple[str, ...], name: str) -> list[str]:
    n_in, n_out = len(program.inputs), len(program.outputs)
    params = ["lo", "hi"] + [f"x{i}" for i in range(n_in)] + [f"out{j}" for j in range(n_out)]
    lines = [f"def {name}({', '.join(params)}):"]
    # loops index slices from 0, so numba drops its negative-index checks and LLVM vectorises
    for i, kind in enumerate(kinds):
        lines.append(f"    a{i} = x{i}[0]" if kind == "z" else f"    in{i} = x{i}[lo:hi]")
    lines += [f"    w{j} = out{j}[lo:hi]" for j in range(n_out)]
    lines.append("    for e in range(hi - lo):")
    for i, kind in enumerate(kinds):
        if kind == "c":
            lines.append(f"        a{i} = in{i}[e]")
    load = {inp: f"a{i}" for i, inp in enumerate(program.inputs)}
    lines += [s.replace("OUT_INDEX", "e") for s in _body(program, load, "        ")]
    return lines


def _nd(program: Program, kinds: tuple[str, ...], name: str) -> list[str]:
    n_in, n_out = len(program.inputs), len(program.outputs)
    params = ["lo", "hi", "shape"] + [p for i in range(n_in) for p in (f"x{i}", f"st{i}")] + \
        [f"out{j}" for j in range(n_out)]
    # the row's position is divided out once, at lo; each next row steps it like an odometer
    # (a division per axis and row cost more than a short row's own work)
    lines = [f"def {name}({', '.join(params)}):",
             "    nd = shape.shape[0]",
             "    inner = shape[nd - 1]",
             "    pos = np.zeros(nd, dtype=np.int64)",
             "    rem = lo"]
    lines += [f"    o{i} = 0" for i in range(n_in)]
    lines += ["    for d in range(nd - 2, -1, -1):",
              "        pos[d] = rem % shape[d]",
              "        rem //= shape[d]"]
    lines += [f"        o{i} += pos[d] * st{i}[d]" for i in range(n_in)]
    lines += ["    for r in range(lo, hi):",
              "        base = r * inner"]
    for i, kind in enumerate(kinds):
        if kind == "z":
            lines.append(f"        a{i} = x{i}[o{i}]")
        elif kind == "c":
            lines.append(f"        in{i} = x{i}[o{i}:o{i} + inner]")
        else:
            lines.append(f"        in{i} = x{i}[o{i}:o{i} + (inner - 1) * st{i}[nd - 1] + 1:st{i}[nd - 1]]")
    lines += [f"        w{j} = out{j}[base:base + inner]" for j in range(n_out)]
    lines.append("        for e in range(inner):")
    for i, kind in enumerate(kinds):
        if kind != "z":
            lines.append(f"            a{i} = in{i}[e]")
    load = {inp: f"a{i}" for i, inp in enumerate(program.inputs)}
    lines += [s.replace("OUT_INDEX", "e") for s in _body(program, load, "            ")]
    lines += ["        d = nd - 2",
              "        while d >= 0:",
              "            pos[d] += 1"]
    lines += [f"            o{i} += st{i}[d]" for i in range(n_in)]
    lines += ["            if pos[d] < shape[d]:",
              "                break",
              "            pos[d] = 0"]
    lines += [f"            o{i} -= st{i}[d] * shape[d]" for i in range(n_in)]
    lines += ["            d -= 1"]
    return lines


def generate(program: Program, mode: str, kinds: tuple[str, ...]) -> str:
    """The module source for ``program`` in loop shape ``mode`` with per-input ``kinds``."""
    make = _flat if mode == "flat" else _nd
    header = [f"# generated by onnxplug_numba (helpers {_HELPERS_VERSION}): {program.describe()}",
              # dtypes only, by position: tensor names would make identical kernels distinct files
              f"# input dtypes {', '.join(program.input_dtypes)}",
              f"# mode {mode}, kinds {''.join(kinds)}",
              "import math", "import numpy as np", "from numba import njit, prange",
              "from onnxplug_numba.fusion.scalar_ops import (op_max, op_min, op_relu, op_sigmoid, "
              "op_softplus,", "    op_hard_sigmoid, op_gelu, op_gelu_tanh, op_round_even, op_sign, "
              "op_mod_python, op_mod_c, op_mod_float, op_div_trunc, op_gelu32, op_gelu_tanh32, op_quantize)",
              "from onnxplug_numba.kernels.fastmath import exp32, tanh32, sigmoid32, erf32", "", ""]
    # no fastmath 'contract': a Mul then an Add must round twice, as onnxruntime's kernels do (a
    # fused multiply-add moves a Floor or a quantization step downstream by a whole step)
    body = ["@njit(nogil=True, error_model='numpy', cache=True)"] + make(program, kinds, "kernel")
    return "\n".join(header + body + ["", ""] + _shared(body[1])) + "\n"


def _shared(signature: str) -> list[str]:
    """``kernel_shared(items, total, ...)``: ``kernel`` over ``range(total)`` cut into ``items``
    parts run in one prange region (compiled on its first call: only large calls use it)."""
    params = signature[signature.index("(") + 1:signature.index(")")].split(", ")[2:]  # after lo, hi
    rest = ", ".join(params)
    return ["@njit(nogil=True, parallel=True, cache=True)",
            f"def kernel_shared(items, total, {rest}):",
            "    for item in prange(items):",
            f"        kernel(total * item // items, total * (item + 1) // items, {rest})"]
