"""Kernel source generation: pure, deterministic, and valid CUDA C.

The nvcc tests compile generated sources to PTX for a real GPU architecture (no GPU needed).
That proves the source is CUDA C that NVIDIA's compiler accepts for every op and dtype the
generator claims; it does not run the kernels (host emulation and the GPU tests do that).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from onnxplug_cupy.codegen.dtypes import ALL, BOOL, literal
from onnxplug_cupy.codegen.elementwise import Program, canonical, generate, kernel_name
from onnxplug_cupy.codegen.expressions import PREAMBLE, RULES, Step

NVCC = shutil.which("nvcc")
requires_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
#: The oldest architecture current nvcc releases accept (Turing); PTX for it runs on every newer GPU.
ARCH = "compute_75"


def _defaults(op: str) -> tuple[tuple[str, object], ...]:
    rule = RULES[op]
    node = types.SimpleNamespace(attr=lambda name, default=None: default, opset=18)
    found = rule.attrs(node) if rule.attrs is not None else {}
    if op == "Gelu" or op == "BiasGelu":
        found = {"approximate": "tanh"}
    if op == "BitShift":
        found = {"direction": "LEFT"}
    return tuple(sorted((found or {}).items()))


def one_step_programs() -> list[Program]:
    """One program per (op, accepted dtype) of the generator."""
    programs = []
    for op, rule in RULES.items():
        for dtype in sorted(rule.dtypes):
            arity = max(rule.arity[0], 2 if rule.arity[1] > 2 and op not in ("Clip",) else rule.arity[0])
            if op == "Clip":
                arity = 3
            if rule.result == "x1":  # Where(cond, x, y) for every value type
                for value in sorted(ALL):
                    programs.append(Program(("c", "a", "b"), ("bool", value, value),
                                            (Step(op, ("c", "a", "b"), ("bool", value, value), "y", value),),
                                            ("y",)))
                continue
            arg_dtypes = (dtype,) * arity
            result = "bool" if rule.result == "bool" else dtype
            names = tuple(f"a{i}" for i in range(arity))
            programs.append(Program(names, arg_dtypes,
                                    (Step(op, names, arg_dtypes, "y", result, _defaults(op)),), ("y",)))
    return programs


def chain_program() -> Program:
    """Add -> Greater -> Where -> Gelu, exporting an intermediate: several dtypes and outputs."""
    f = "float32"
    steps = (Step("Add", ("x", "b"), (f, f), "s", f),
             Step("Greater", ("s", "zero"), (f, f), "m", "bool"),
             Step("Where", ("m", "s", "b"), ("bool", f, f), "w", f),
             Step("Gelu", ("w",), (f,), "y", f, (("approximate", "none"),)))
    return Program(("x", "b", "zero"), (f, f, f), steps, ("s", "y"))


def test_every_rule_and_dtype_has_a_program() -> None:
    programs = one_step_programs()
    covered = {p.steps[0].op for p in programs}
    assert covered == set(RULES)
    assert len(programs) > 150


def test_generation_is_deterministic_and_ignores_value_names() -> None:
    program = chain_program()
    renamed = Program(("p", "q", "r"), program.input_dtypes,
                      tuple(Step(s.op, tuple({"x": "p", "b": "q", "zero": "r", "s": "S", "m": "M", "w": "W"}.get(a, a)
                                                   for a in s.args), s.arg_dtypes,
                                 {"s": "S", "m": "M", "w": "W", "y": "Y"}[s.out], s.dtype, s.attrs)
                            for s in program.steps), ("S", "Y"))
    assert generate(program, 3).source == generate(program, 3).source
    assert generate(program, 3).source == generate(renamed, 3).source
    assert canonical(program) == canonical(renamed)


def test_different_computations_get_different_kernel_names() -> None:
    a = chain_program()
    b = Program(a.inputs, a.input_dtypes, a.steps[:-1] + (Step("Gelu", ("w",), ("float32",), "y", "float32",
                                                                 (("approximate", "tanh"),)),), a.outputs)
    assert kernel_name(a) != kernel_name(b)
    assert generate(a, 2).source != generate(a, 3).source  # the strided kernel is per rank


def test_sources_need_no_headers_or_host_macros() -> None:
    # NVRTC compiles without the host's headers: no #include, no INFINITY/NAN/M_PI macros
    for program in [*one_step_programs(), chain_program()]:
        source = generate(program, 2).source
        assert "#include" not in source
        assert not re.search(r"\b(INFINITY|NAN|M_PI|M_SQRT1_2|size_t)\b", source), program.describe()


def test_kernel_signature_matches_what_the_runner_passes() -> None:
    # inputs, outputs, n, then (strided) rank dims, inputs*rank strides, outputs*rank strides and masks
    program = chain_program()
    source = generate(program, 3)
    strided = re.search(rf"void {source.strided}\((.*?)\)", source.source).group(1).split(", ")
    assert len(strided) == 3 + 2 + 1 + 3 + 3 * 3 + 2 * 3 + 2 * 3
    flat = re.search(rf"void {source.flat}\((.*?)\)", source.source).group(1).split(", ")
    assert flat == ["const float* __restrict__ in0", "const float* __restrict__ in1",
                    "const float* __restrict__ in2", "float* __restrict__ out0", "float* __restrict__ out1",
                    "const long long n"]


def test_literals() -> None:
    assert literal(0.5, "float32") == "((float)0.5)"
    assert literal(float("inf"), "float32") == "__int_as_float(0x7f800000)"
    assert literal(float("-inf"), "float64") == "__longlong_as_double((long long)0xfff0000000000000ULL)"
    assert literal(-3, "int8") == "((signed char)-3LL)"
    assert literal(7, "uint64") == "((unsigned long long)7ULL)"
    assert literal(1, "bool") == "true"
    assert "bool" in BOOL


def _nvcc(sources: list[str], tmp_path: Path, name: str) -> None:
    """Compile the sources as one translation unit (the shared preamble once) to PTX."""
    preamble = PREAMBLE.strip()
    body = [sources[0]] + [s.replace(preamble, "") for s in sources[1:]]
    path = tmp_path / f"{name}.cu"
    path.write_text("\n".join(body))
    result = subprocess.run([NVCC or "nvcc", "--ptx", f"-arch={ARCH}", "-std=c++17", "-ftz=true",
                             "-Werror", "all-warnings", "-o", str(tmp_path / f"{name}.ptx"), str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc rejected generated CUDA C:\n{result.stderr[:4000]}"
    ptx = (tmp_path / f"{name}.ptx").read_text()
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    for source in sources:
        for kernel in re.findall(r'extern "C" __global__ void (\w+)\(', source):
            assert kernel in entries, f"{kernel} is missing from the PTX"


@pytest.mark.nvcc
@requires_nvcc
def test_nvcc_compiles_every_op_and_dtype_to_ptx(tmp_path: Path) -> None:
    programs = one_step_programs()
    sources = [generate(p, rank).source for p, rank in zip(programs, [0, 1, 2, 3, 4] * len(programs))]
    _nvcc(sources, tmp_path, "ops")


@pytest.mark.nvcc
@requires_nvcc
def test_nvcc_compiles_fused_chains_with_several_outputs(tmp_path: Path) -> None:
    for rank in (0, 1, 4, 6):  # one module per rank, as the runner compiles them
        _nvcc([generate(chain_program(), rank).source], tmp_path, f"chain_rank{rank}")
