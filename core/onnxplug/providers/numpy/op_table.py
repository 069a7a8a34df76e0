"""Print the table of ops the ``numpy`` provider computes, and how: its own kernel or onnx.reference.

    python -m onnxplug.providers.numpy.op_table > docs/numpy-provider-ops.md

For every op onnx defines (all versions of the default domain, ``ai.onnx.ml`` and the preview
domains), each schema version is resolved as the provider resolves a node at that opset: a
native kernel from the registry, else the onnx.reference adapter, else nothing. onnxruntime's
contrib domain ``com.microsoft`` (version 1) lists the kernels registered for it and, when
onnxruntime is installed, every other op its CPU provider runs there or in the default domain.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import TextIO

import onnx

from onnxplug.providers.numpy.reference_adapter import reference_support
from onnxplug.providers.numpy.registry import REGISTRY

#: onnxruntime's contrib domain (no onnx schemas: its rows come from the registry and onnxruntime).
ORT_DOMAIN = "com.microsoft"
#: Domains listed, in this order, with their headings.
DOMAINS = {"": "ai.onnx (default domain)", "ai.onnx.ml": "ai.onnx.ml",
           "ai.onnx.preview": "ai.onnx.preview", "ai.onnx.preview.training": "ai.onnx.preview.training",
           ORT_DOMAIN: "com.microsoft (onnxruntime's contrib ops)"}
#: Suffix of the rows of onnxruntime's own default-domain ops, listed with com.microsoft.
_DEFAULT_DOMAIN_SUFFIX = " (default domain)"
NATIVE, REFERENCE, MISSING = "native", "onnx.reference", "not supported"
#: What a user must know about some ops beyond how they are computed.
NOTES = {
    ("", "ImageDecoder"): "onnx.reference decodes with Pillow: `pip install pillow`, else the node fails "
                          "with a KernelError saying so",
    ("ai.onnx.preview.training", "Gradient"): "needs automatic differentiation of the graph, which onnxplug "
                                              "does not do",
    ("com.microsoft", "Tokenizer"): "matches as onnxruntime's RE2 does with the `regex` package: "
                                    "`pip install regex`, else the node fails with a KernelError saying so",
}


@dataclass(frozen=True)
class OpStatus:
    """How one schema version of an op is computed."""

    since_version: int
    how: str  # NATIVE, REFERENCE or MISSING
    detail: str  # the kernel's module, or how onnx.reference implements it


def op_statuses() -> dict[str, dict[str, list[OpStatus]]]:
    """``{domain: {op_type: [status per schema version, oldest first]}}``."""
    versions: dict[tuple[str, str], set[int]] = defaultdict(set)
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in DOMAINS:
            versions[(schema.domain, schema.name)].add(schema.since_version)
    table: dict[str, dict[str, list[OpStatus]]] = {d: {} for d in DOMAINS}
    for (domain, op_type), since in sorted(versions.items()):
        table[domain][op_type] = [_status(domain, op_type, v) for v in sorted(since)]
    ort_ops = _onnxruntime_cpu_ops()
    contrib = {op for d, op, _ in REGISTRY.keys() if d == ORT_DOMAIN} | {op for d, op in ort_ops if d == ORT_DOMAIN}
    onnx_defined = {op for d, op in versions if d == ""}
    extra_default = {op for d, op in ort_ops if d in ("", "ai.onnx") and op not in onnx_defined
                     and not op.startswith("Memcpy")}
    rows = {op: (ORT_DOMAIN, op) for op in contrib}
    rows.update({op + _DEFAULT_DOMAIN_SUFFIX: ("", op) for op in extra_default})
    for name, (domain, op_type) in sorted(rows.items()):
        table[ORT_DOMAIN][name] = [_status(domain, op_type, 1)]
    return table


def _onnxruntime_cpu_ops() -> set[tuple[str, str]]:
    """(domain, op) of every kernel of onnxruntime's CPU provider; empty without onnxruntime."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_capi
    except ImportError:
        return set()
    return {(k.domain, k.op_name) for k in ort_capi.get_all_opkernel_def() if k.provider == "CPUExecutionProvider"}


def _status(domain: str, op_type: str, opset: int) -> OpStatus:
    kernel = REGISTRY.resolve(domain, op_type, opset)
    if kernel is not None:
        return OpStatus(opset, NATIVE, kernel.__module__.split(".ops.", 1)[-1].replace(".", "/") + ".py")
    support = reference_support(domain, op_type, opset)
    if support is not None:
        return OpStatus(opset, REFERENCE, support)
    return OpStatus(opset, MISSING, "")


def _summary(statuses: list[OpStatus]) -> tuple[str, str]:
    """The op's row: how it is computed (per version range when that differs) and the details."""
    groups: list[tuple[list[int], str, str]] = []
    for s in statuses:
        if groups and groups[-1][1] == s.how and groups[-1][2] == s.detail:
            groups[-1][0].append(s.since_version)
        else:
            groups.append(([s.since_version], s.how, s.detail))
    if len(groups) == 1:
        return groups[0][1], groups[0][2]
    parts = [f"{how} (opset {vs[0]}{'+' if g is groups[-1] else f'–{vs[-1]}'})"
             for g in groups for vs, how, _ in [g]]
    details = sorted({d for _, _, d in groups if d})
    return "; ".join(parts), ", ".join(details)


def write_markdown(out: TextIO) -> None:
    """Write the whole document."""
    table = op_statuses()
    counts: dict[str, int] = defaultdict(int)
    for ops in table.values():
        for statuses in ops.values():
            counts[statuses[-1].how] += 1
    out.write("# Ops of the `numpy` provider\n\n")
    out.write("Generated by `python -m onnxplug.providers.numpy.op_table > docs/numpy-provider-ops.md`; "
              "do not edit by hand.\n\n")
    out.write("The `numpy` provider computes an op with its own vectorised NumPy kernel (**native**, file "
              "in `core/onnxplug/providers/numpy/ops/`, one package per domain) or, for rarely used ops, with "
              "the implementation in `onnx.reference` (**onnx.reference**: its own class, its function body run by the reference "
              "evaluator, or a context-dependent function body built for the input types). Versions are the "
              "op's schema versions (since_version); a row with ranges changes how it is computed between "
              "versions.\n\n")
    out.write("The com.microsoft section lists the kernels of onnxruntime's contrib ops (`ops/com_microsoft/`) "
              "and, as not supported, the other ops onnxruntime's CPU provider runs in that domain or, marked "
              f"(default domain), in the default domain outside onnx's schemas{_ort_version()}.\n\n")
    out.write(f"At each op's latest version: {counts[NATIVE]} native, {counts[REFERENCE]} onnx.reference, "
              f"{counts[MISSING]} not supported.\n")
    _write_options(out)
    for domain, heading in DOMAINS.items():
        ops = table[domain]
        if not ops:
            continue
        out.write(f"\n## {heading}\n\n| op | versions | computed by | kernel / reference kind |\n|---|---|---|---|\n")
        for op_type, statuses in ops.items():
            how, detail = _summary(statuses)
            note = NOTES.get((domain, op_type))
            if note:
                detail = f"{detail}; {note}" if detail else note
            since = ", ".join(str(s.since_version) for s in statuses)
            out.write(f"| {op_type} | {since} | {how} | {detail} |\n")


def _write_options(out: TextIO) -> None:
    from onnxplug.providers.numpy.runtime.tuning import NumpyTuning

    out.write("\n## Provider options\n\n"
              "Tuning, given as onnxruntime gives provider options: `providers=[(\"numpy\", {\"winograd\": "
              "\"1\"})]`, strings (flags `'1'`/`'0'`) or Python values; a value an option cannot take raises "
              "`onnxplug.errors.OptionValueError` naming it. Each session's kernels read their own provider's "
              "options, except the product thresholds (marked process-wide), which the numpy provider created "
              "last with them sets for the process, as `intra_op_num_threads` sets the product threads. "
              "`get_provider_options()` lists the options a session set.\n\n"
              "| option | default | what it does |\n|---|---|---|\n")
    for name, default, doc in NumpyTuning.describe():
        out.write(f"| `{name}` | `{default}` | {doc} |\n")


def _ort_version() -> str:
    try:
        import onnxruntime
    except ImportError:
        return " (onnxruntime is not installed: none listed)"
    return f" (onnxruntime {onnxruntime.__version__})"


def main() -> int:
    """Print the markdown table to stdout."""
    write_markdown(sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
