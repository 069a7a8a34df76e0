"""CUDA C source of an elementwise program: one kernel computing a chain of elementwise steps.

Each source holds two grid-stride kernels over the ``n`` elements of the broadcast output shape:
``<name>_flat`` (every input C-contiguous with the output shape; element ``i`` is ``in[i]``) and
``<name>_strided`` (any shapes and strides in elements, 0 along broadcast axes, for a rank fixed at
generation: each input is read and each output written at its own offset, an output only by the
thread whose coordinates are 0 along the axes it is broadcast over). Parameters, in order: inputs
(``const T*``), outputs (``T*``), ``n``; the strided kernel then takes the output dims, each input's
strides, each output's strides and each output's broadcast mask. All integers are ``long long``.
Pure: the source is a function of the program and the rank alone, not of the graph's value names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from onnxplug_cupy.codegen.dtypes import C_TYPES
from onnxplug_cupy.codegen.expressions import PREAMBLE, Step, expression


@dataclass(frozen=True)
class Program:
    """Elementwise steps over external inputs, exporting some of the values they compute."""

    inputs: tuple[str, ...]
    input_dtypes: tuple[str, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]

    def dtype_of(self, name: str) -> str:
        """The dtype of an input or of a value a step computes."""
        for step in self.steps:
            if step.out == name:
                return step.dtype
        return self.input_dtypes[self.inputs.index(name)]

    @property
    def output_dtypes(self) -> tuple[str, ...]:
        """The dtype of each exported value."""
        return tuple(self.dtype_of(o) for o in self.outputs)

    def describe(self) -> str:
        """A one-line summary for comments and error messages, e.g. ``Relu(Add(x, b))``."""
        return "; ".join(f"{s.out} = {s.op}({', '.join(a or '_' for a in s.args)})" for s in self.steps)


@dataclass(frozen=True)
class KernelSource:
    """Generated source and the names of its two kernels."""

    source: str
    flat: str
    strided: str
    rank: int


def canonical(program: Program) -> Program:
    """The program with its values renamed ``x0..`` (inputs) and ``t0..`` (steps), so the same
    computation on differently named values yields the same source (and one compiled module)."""
    names = {n: f"x{k}" for k, n in enumerate(program.inputs)}
    steps = []
    for j, step in enumerate(program.steps):
        names[step.out] = f"t{j}"
        steps.append(replace(step, args=tuple(names[a] if a is not None else None for a in step.args),
                             out=names[step.out]))
    return Program(tuple(names[n] for n in program.inputs), program.input_dtypes, tuple(steps),
                   tuple(names[o] for o in program.outputs))


def kernel_name(program: Program) -> str:
    """A stable name for the program's kernels: a digest of what they compute (not of value names)."""
    program = canonical(program)
    digest = hashlib.sha1(repr(program).encode()).hexdigest()[:12]
    ops = "_".join(s.op.lower() for s in program.steps[:3])
    return f"onnxplug_ew_{ops}_{digest}"


def _body(program: Program, load: list[str], store: list[str], indent: str) -> list[str]:
    """Statements computing the steps from loaded inputs and storing the outputs."""
    local = {name: f"in{k}_v" for k, name in enumerate(program.inputs)}
    lines = [f"{indent}const {C_TYPES[d]} {local[n]} = {expr};"
             for n, d, expr in zip(program.inputs, program.input_dtypes, load)]
    for j, step in enumerate(program.steps):
        args = [local[a] if a is not None else None for a in step.args]
        local[step.out] = f"t{j}"
        lines.append(f"{indent}const {C_TYPES[step.dtype]} t{j} = ({C_TYPES[step.dtype]})"
                     f"({expression(step, args)});")
    for k, (name, template) in enumerate(zip(program.outputs, store)):
        lines.append(template.format(value=local[name]))
    return lines


def _params(program: Program) -> list[str]:
    ins = [f"const {C_TYPES[d]}* __restrict__ in{k}" for k, d in enumerate(program.input_dtypes)]
    outs = [f"{C_TYPES[d]}* __restrict__ out{k}" for k, d in enumerate(program.output_dtypes)]
    return [*ins, *outs, "const long long n"]


_LOOP = ("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
         "i += (long long)blockDim.x * gridDim.x) {")


def _offset(prefix: str, rank: int) -> str:
    return " + ".join(f"c{d} * {prefix}_{d}" for d in range(rank)) or "0"


def generate(program: Program, rank: int) -> KernelSource:
    """The CUDA C source of ``program`` (flat kernel, and strided kernel for ``rank`` dims)."""
    if not program.steps or not program.outputs:
        raise ValueError("an elementwise program needs at least one step and one output")
    program = canonical(program)
    name = kernel_name(program)
    n_in, n_out = len(program.inputs), len(program.outputs)
    head = [f"// onnxplug-cupy elementwise kernel: {program.describe()}", PREAMBLE.strip(), ""]

    flat = [f'extern "C" __global__ void {name}_flat({", ".join(_params(program))}) {{', _LOOP]
    flat += _body(program, [f"in{k}[i]" for k in range(n_in)],
                  [f"        out{k}[i] = {{value}};" for k in range(n_out)], "        ")
    flat += ["    }", "}", ""]

    dims = [f"const long long d{d}" for d in range(rank)]
    in_strides = [f"const long long s{k}_{d}" for k in range(n_in) for d in range(rank)]
    out_strides = [f"const long long o{k}_{d}" for k in range(n_out) for d in range(rank)]
    masks = [f"const long long m{k}_{d}" for k in range(n_out) for d in range(rank)]
    params = [*_params(program), *dims, *in_strides, *out_strides, *masks]
    strided = [f'extern "C" __global__ void {name}_strided({", ".join(params)}) {{', _LOOP]
    if rank:
        strided.append("        long long r = i;")
    for d in reversed(range(rank)):
        strided.append(f"        const long long c{d} = " + (f"r % d{d}; r /= d{d};" if d else "r;"))
    stores = [f"        if ({_offset(f'm{k}', rank)} == 0) out{k}[{_offset(f'o{k}', rank)}] = {{value}};"
              for k in range(n_out)]
    strided += _body(program, [f"in{k}[{_offset(f's{k}', rank)}]" for k in range(n_in)], stores, "        ")
    strided += ["    }", "}", ""]
    source = "\n".join(head + flat + strided)
    return KernelSource(source, f"{name}_flat", f"{name}_strided", rank)
