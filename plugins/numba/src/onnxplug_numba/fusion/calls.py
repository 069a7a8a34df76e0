"""Call plans as generated Python: a kernel call on tiny tensors without lists or loops around it.

A kernel run thousands of times on tiny tensors (the body of an ONNX Loop) spends most of its time
in the Python around the compiled loop, not in it: building the shape key and the argument list,
flattening operands, one list comprehension (a frame of its own in Python 3.11) for each. The
functions here are written out for a fixed number of inputs and outputs, so that a call is one
tuple of shapes, one dict lookup, the output allocations and the compiled call.
"""

from __future__ import annotations

import threading
import types
from typing import Any, Callable, Sequence

import numpy as np

#: A planned call: the input arrays (positional, of the shapes it was planned for) to the outputs.
Call = Callable[..., tuple[np.ndarray, ...]]

#: Code objects of generated functions by source: the sources name no tensor or shape (those are
#: in each function's namespace), so a few dozen serve every kernel, and compile() runs once per
#: source rather than once per kernel.
_code: dict[str, types.CodeType] = {}
_code_lock = threading.Lock()


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """The function ``name`` defined by ``source``, with ``namespace`` as its globals."""
    code = _code.get(source)
    if code is None:
        with _code_lock:
            module = compile(source, f"<onnxplug_numba {name}>", "exec")
            code = next(c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
            _code[source] = code
    return types.FunctionType(code, namespace, name)


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def shape_key(inputs: Sequence[Any], with_dtypes: bool) -> tuple[Any, ...]:
    """The key :func:`dispatcher` looks calls up by, for these inputs."""
    if with_dtypes:
        return tuple(v for x in inputs for v in (x.shape, x.dtype))
    return tuple(x.shape for x in inputs)


def dispatcher(count: int, calls: dict[tuple[Any, ...], Callable[..., Any]], first: Callable[..., Any],
               with_dtypes: bool = False) -> Callable[..., Any]:
    """``f(x0, ..., x{count-1})``: ``calls[shape_key(xs)](*xs)``, or ``first(*xs)`` when there is no
    such call yet (or an input is not an array: no ``shape``), which may add it to ``calls``."""
    xs = _names("x", count)
    key = "".join(f"{x}.shape, {x}.dtype, " if with_dtypes else f"{x}.shape, " for x in xs)
    args = ", ".join(xs)
    source = (f"def dispatch({args}):\n"
              f"    try:\n"
              f"        call = calls[({key})]\n"
              f"    except (KeyError, AttributeError):\n"
              f"        return first({args})\n"
              f"    return call({args})\n")
    return _compile(source, "dispatch", {"calls": calls, "first": first})


def serial(kernel: Any, total: int, out_shape: tuple[int, ...], dtypes: Sequence[np.dtype], count: int,
           returned: Sequence[int] | None = None, nd: tuple[np.ndarray, Sequence[np.ndarray]] | None = None) -> Call:
    """The compiled loop over ``total`` elements (flat) or rows (``nd``: the loop shape and the
    per-input strides) on this thread, for ``count`` inputs.

    ravel gives each operand as a 1-D C-contiguous view (a copy only of an input that is not
    contiguous). ``returned`` lists which outputs are returned, in order (an output may repeat);
    by default all of them."""
    xs, outs = _names("x", count), _names("o", len(dtypes))
    back = outs if returned is None else [outs[i] for i in returned]
    operands = [f"{x}.ravel()" for x in xs] if nd is None else \
        ["loop_shape"] + [f"{x}.ravel(), s{i}" for i, x in enumerate(xs)]
    lines = [f"def call({', '.join(xs)}):"]
    lines += [f"    {o} = empty(out_shape, d{j})" for j, o in enumerate(outs)]
    lines.append(f"    kernel(0, total, {', '.join(operands + [f'{o}.ravel()' for o in outs])})")
    lines.append(f"    return ({', '.join(back)},)")
    namespace: dict[str, Any] = {"empty": np.empty, "kernel": kernel, "total": total, "out_shape": out_shape}
    namespace.update({f"d{j}": np.dtype(d) for j, d in enumerate(dtypes)})
    if nd is not None:
        namespace["loop_shape"] = nd[0]
        namespace.update({f"s{i}": st for i, st in enumerate(nd[1])})
    return _compile("\n".join(lines) + "\n", "call", namespace)


def ufunc(fn: Callable[..., Any], order: Sequence[int], count: int, out_shape: tuple[int, ...],
          dtype: np.dtype | None) -> Call:
    """``(fn(x[order[0]], x[order[1]], ..., out=empty(out_shape, dtype)),)`` for ``count`` inputs;
    without ``out=`` when ``dtype`` is None (np.where, which returns an array even for 0-d)."""
    xs = _names("x", count)
    args = ", ".join(xs[i] for i in order) + ("" if dtype is None else ", out=empty(out_shape, dtype)")
    source = f"def call({', '.join(xs)}):\n    return (fn({args}),)\n"
    return _compile(source, "call", {"fn": fn, "empty": np.empty, "out_shape": out_shape, "dtype": dtype})


def scalar_test(test: str, order: Sequence[int], count: int) -> Call:
    """``(array(test),)`` for ``count`` 0-d inputs, where ``test`` is a Python expression of ``a``
    (input ``order[0]``) and ``b`` (input ``order[1]``) as Python values; the result is a new
    0-d bool array."""
    xs = _names("x", count)
    values = {"a": f"{xs[order[0]]}.item()", "b": f"{xs[order[-1]]}.item()"}
    expr = " ".join(values.get(word, word) for word in test.split())
    source = f"def call({', '.join(xs)}):\n    return (array({expr}),)\n"
    return _compile(source, "call", {"array": np.array})


def sequence(inputs: Sequence[str], runs: Sequence[tuple[Callable[..., Any], Sequence[str], Sequence[str]]],
             outputs: Sequence[str]) -> Callable[..., Any]:
    """``f(*inputs) -> outputs``: each of ``runs`` (a callable, the names it reads, the names of the
    tuple it returns) called in turn on straight-line locals, as one generated function."""
    ident = {name: f"x{i}" for i, name in enumerate(inputs)}
    lines = [f"def call({', '.join(ident.values())}):"]
    namespace: dict[str, Any] = {}
    for r, (run, reads, written) in enumerate(runs):
        namespace[f"r{r}"] = run
        for name in written:
            ident[name] = f"v{len(ident)}"
        targets = "".join(f"{ident[n]}, " for n in written)
        lines.append(f"    {targets}= r{r}({', '.join(ident[n] for n in reads)})")
    lines.append(f"    return ({''.join(f'{ident[n]}, ' for n in outputs)})")
    return _compile("\n".join(lines) + "\n", "call", namespace)
