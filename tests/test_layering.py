"""The layering of the source tree, checked on the imports each file states (``ast``, no import runs).

Contracts (every import counts, also under ``if TYPE_CHECKING:`` and inside functions):

* the core (``core/onnxplug``) imports no provider plugin nor the SDK;
* the core outside ``onnxplug/providers/numpy/`` imports nothing of the numpy provider;
* the SDK and the conformance suite import only the core's public modules (``PUBLIC``); provider
  plugins import no core module at all (``provider_sdk/tests/test_no_core_internals.py``);
* providers import no other provider.

And no import cycle among core modules, counting every import except those under
``if TYPE_CHECKING:`` (type-only ones).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "core"
NUMPY_PROVIDER = "onnxplug.providers.numpy"
#: the core modules the SDK and the conformance suite may import
PUBLIC = frozenset({"onnxplug", "onnxplug.errors", "onnxplug.device", "onnxplug.kernel", "onnxplug.provider",
                    "onnxplug.hookspecs", "onnxplug.plugins", "onnxplug.ir", "onnxplug.ir.types",
                    "onnxplug.ir.graph", "onnxplug.session", "onnxplug.options", "onnxplug.ort_value",
                    "onnxplug.testing", "onnxplug.testing.model_suite", "onnxplug.geometry",
                    "onnxplug.mlas", "onnxplug.ml", "onnxplug.ml.forest", "onnxplug.ml.scores",
                    "onnxplug.ml.svm", "onnxplug.ml.tree_rules", "onnxplug.ml.linear", "onnxplug.contrib_rules"})


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(root: Path) -> dict[str, Path]:
    """Module name -> file, for every Python file of the packages under ``root``."""
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"


def imports(module: str, path: Path, known: frozenset[str] | set[str] = frozenset(),
            type_only: bool = True) -> list[tuple[int, str]]:
    """(line, imported module) of a file's imports; ``from a import b`` names ``a.b`` when that is a
    module of ``known``. Without ``type_only``, imports under ``if TYPE_CHECKING:`` are left out."""
    found: list[tuple[int, str]] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child) and not type_only:
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((node.lineno, full if full in known else base))
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _plugin_packages() -> dict[str, Path]:
    """Top-level package name -> folder, for the SDK and every provider plugin."""
    roots = [REPO / "provider_sdk" / "src", *sorted((REPO / "plugins").glob("*/src"))]
    return {p.name: p for root in roots for p in sorted(root.iterdir()) if (p / "__init__.py").is_file()}


def _violations(files: dict[str, Path], refused, known=frozenset()) -> list[str]:
    return [f"{path.relative_to(REPO)}:{line} imports {target}"
            for module, path in files.items() for line, target in imports(module, path, known)
            if refused(module, target)]


def test_core_imports_no_plugin_nor_the_sdk():
    plugins = set(_plugin_packages())
    assert {"onnxplug_sdk", "onnxplug_numba", "onnxplug_opencl"} <= plugins
    bad = _violations(_sources(CORE), lambda module, target: target.partition(".")[0] in plugins)
    assert not bad, "the core must not import provider plugins or the SDK:\n  " + "\n  ".join(bad)


def test_core_outside_the_numpy_provider_does_not_import_it():
    core = _sources(CORE)
    bad = _violations(core, lambda module, target: not _within(module, NUMPY_PROVIDER)
                      and _within(target, NUMPY_PROVIDER), set(core))
    assert not bad, "only the numpy provider imports the numpy provider:\n  " + "\n  ".join(bad)


def test_sdk_and_conformance_import_only_public_core_modules():
    files = {**_sources(REPO / "provider_sdk" / "src"), **_sources(REPO / "conformance" / "src")}
    core = set(_sources(CORE))
    bad = _violations(files, lambda module, target: _within(target, "onnxplug") and target not in PUBLIC, core)
    assert not bad, "the SDK and the conformance suite use the core's public modules only:\n  " + "\n  ".join(bad)


def test_providers_do_not_import_each_other():
    packages = _plugin_packages()
    providers = set(packages) - {"onnxplug_sdk"}
    bad = []
    for name, folder in packages.items():
        files = _sources(folder.parent)
        own = {m: p for m, p in files.items() if _within(m, name)}
        bad += _violations(own, lambda module, target: target.partition(".")[0] in providers - {name})
    assert not bad, "providers must not import each other:\n  " + "\n  ".join(bad)


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_import_cycles_are_found():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_core_modules():
    core = _sources(CORE)
    graph = {module: {target for _, target in imports(module, path, set(core), type_only=False)
                      if target in core and target != module}
             for module, path in core.items()}
    cycles = import_cycles(graph)
    described = ["; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(c)))}" for m in c) for c in cycles]
    assert not cycles, "import cycles among core modules:\n  " + "\n  ".join(described)
