"""Building the zoo: ``python -m onnxplug_conformance.zoo.build [--only a,b] [--tier ci] [--force] [--manifest PATH]``.

Each selected model is built once into the cache folder (:func:`.manifest.zoo_dir`) and reused
while its file exists and its recipe, exporter and opset are unchanged (``--force`` rebuilds).
Models whose build failed are tried again. By default each recipe runs in a child process of its
own, so an exporter that crashes, hangs (``--timeout``) or leaves global state behind cannot stop
or change the others; its output goes to ``logs/<name>.log``. A file is moved into ``models/``
only once its build finished and it loads, and the manifest is rewritten after every model, so an
interrupted build keeps what it did. A failure is recorded as the exporter's error, never dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from onnxplug_conformance.zoo import manifest
from onnxplug_conformance.zoo.registry import all_models, get_model, select
from onnxplug_conformance.zoo.spec import ZooModel

DEFAULT_TIMEOUT_S = 1800
_ERROR_LIMIT = 2000
#: A built file is reused only while these are unchanged.
_RECIPE_KEYS = ("recipe", "exporter", "opset_requested")
#: What an entry knows about the built file (or the failure).
_FILE_KEYS = ("status", "error", "file", "size", "sha256", "opset", "opsets", "outputs")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def source_version(model: ZooModel) -> str:
    """The version of the model's source: the recipe's own, else the installed distribution's."""
    if model.source_version:
        return model.source_version
    try:
        return version(model.source_package) if model.source_package else ""
    except PackageNotFoundError:
        return ""


def spec_entry(model: ZooModel) -> dict[str, Any]:
    """The manifest entry of a model before it is built: everything its spec says."""
    found = source_version(model)
    return {
        "name": model.name, "family": model.family, "source_package": model.source_package,
        "source_version": found, "source": f"{model.source_package} {found}".strip(),
        "recipe": model.recipe, "exporter": model.exporter, "opset_requested": model.opset,
        "licence": model.licence, "quantized": model.quantized, "oracle": model.oracle, "tier": model.tier,
        "notes": model.notes, "seed": model.seed,
        "inputs": [{"name": s.name, "dtype": s.dtype, "shapes": [list(s.shapes[0]), list(s.shapes[1])],
                    "generator": s.generator, "params": _jsonable(dict(s.params))} for s in model.inputs],
        "status": manifest.NOT_BUILT, "error": "", "file": "", "size": None, "sha256": "",
        "opset": None, "opsets": {}, "outputs": [],
    }


def file_facts(path: Path, model: ZooModel) -> dict[str, Any]:
    """What the built file says: size, sha256, opsets and outputs. Raises ``ValueError`` when its
    inputs are not the spec's (the feeds could not be right)."""
    import onnx

    data = path.read_bytes()
    proto = onnx.load_model_from_string(data)
    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in proto.opset_import}
    initializers = {i.name for i in proto.graph.initializer}
    graph_inputs = [i.name for i in proto.graph.input if i.name not in initializers]
    spec_inputs = [s.name for s in model.inputs]
    if sorted(spec_inputs) != sorted(graph_inputs):
        raise ValueError(f"the spec's inputs {spec_inputs} are not the file's inputs {graph_inputs}")
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "opset": opsets.get("ai.onnx"),
            "opsets": dict(sorted(opsets.items())), "outputs": [o.name for o in proto.graph.output]}


def _error_line(text: str, folder: Path) -> str:
    return text.replace(str(folder), "<zoo>").strip()[:_ERROR_LIMIT]


def _build_in_process(model: ZooModel, out: Path, log: Path, timeout_s: float) -> str:
    """Run the recipe here (``timeout_s`` cannot apply); the error text or ``""``."""
    try:
        model.build(out)
    except BaseException as e:  # noqa: BLE001 - a recipe's failure is data, KeyboardInterrupt aside
        if isinstance(e, KeyboardInterrupt):
            raise
        log.write_text(traceback.format_exc(), encoding="utf-8")
        return f"{type(e).__name__}: {e}"
    return ""


def _build_in_child(model: ZooModel, out: Path, log: Path, timeout_s: float) -> str:
    """Run the recipe in ``python -m onnxplug_conformance.zoo.build --worker``; the error text or ``""``."""
    result = out.with_suffix(".result.json")
    command = [sys.executable, "-m", "onnxplug_conformance.zoo.build", "--worker", model.name,
               "--out", str(out), "--result", str(result)]
    with open(log, "w", encoding="utf-8") as log_file:
        try:
            proc = subprocess.run(command, stdout=log_file, stderr=subprocess.STDOUT, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return f"TimeoutError: the recipe did not finish in {timeout_s:g} s"
    if result.is_file():
        return json.loads(result.read_text(encoding="utf-8"))["error"]
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    return f"ChildProcessError: the recipe's process ended with exit code {proc.returncode}: " + " / ".join(tail)


def build_model(model: ZooModel, folder: Path, previous: dict[str, Any] | None = None, *, force: bool = False,
                isolate: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """Build one model into ``folder`` (or reuse it) and return its manifest entry."""
    entry = spec_entry(model)
    target = manifest.model_file(folder, model.name)
    entry["file"] = target.relative_to(folder).as_posix()
    # reuse a file the manifest says this recipe built (or any file, when the manifest was lost)
    reusable = previous is None or (previous.get("status") == manifest.BUILT
                                    and all(previous.get(k) == entry[k] for k in _RECIPE_KEYS))
    if target.is_file() and not force and reusable:
        try:
            return {**entry, **file_facts(target, model), "status": manifest.BUILT}
        except Exception:  # noqa: BLE001 - an unreadable or stale file is rebuilt
            pass
    for sub in ("models", "logs", "tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    log = folder / "logs" / f"{model.name}.log"
    scratch = Path(tempfile.mkdtemp(prefix=f"{model.name}-", dir=folder / "tmp"))
    try:
        out = scratch / f"{model.name}.onnx"
        error = (_build_in_child if isolate else _build_in_process)(model, out, log, timeout_s)
        if not error and not out.is_file():
            error = f"ZooBuildError: the recipe finished without writing {out.name}"
        if not error:
            try:
                facts = file_facts(out, model)
            except Exception as e:  # noqa: BLE001 - an unreadable file is this model's failure
                error = f"{type(e).__name__}: {e}"
            else:
                os.replace(out, target)
                return {**entry, **facts, "status": manifest.BUILT}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    target.unlink(missing_ok=True)  # a stale file must not pass for this recipe's
    return {**entry, "status": manifest.FAILED, "error": _error_line(error, folder)}


def _refreshed(previous: dict[str, Any] | None, model: ZooModel) -> dict[str, Any]:
    """A model's entry as the spec now describes it, keeping what was built unless the recipe changed."""
    entry = spec_entry(model)
    if previous is not None and all(previous.get(k) == entry[k] for k in _RECIPE_KEYS):
        entry.update({k: previous[k] for k in _FILE_KEYS if k in previous})
    return entry


def build_all(models: Iterable[ZooModel], folder: Path | None = None, *, force: bool = False, isolate: bool = True,
              timeout_s: float = DEFAULT_TIMEOUT_S, committed: Path | None = None,
              progress: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Build ``models`` and rewrite the manifest (every model of the registry, built or not).

    ``committed`` also writes the manifest there. Returns the manifest's entries.
    """
    folder = folder or manifest.zoo_dir()
    folder.mkdir(parents=True, exist_ok=True)
    known = {m.name: m for m in all_models()}
    old = manifest.load(folder)
    entries = {name: _refreshed(old.get(name), model) for name, model in known.items()}
    for model in models:
        started = time.perf_counter()
        entry = build_model(model, folder, old.get(model.name), force=force, isolate=isolate, timeout_s=timeout_s)
        entries[model.name] = entry
        manifest.write_file(folder / manifest.MANIFEST_NAME, entries)
        if progress is not None:
            took = time.perf_counter() - started
            state = entry["status"] if entry["status"] == manifest.BUILT else "FAILED: " + entry["error"].splitlines()[0][:300]
            progress(f"{model.name:<40} {took:7.1f} s  {state}")
    manifest.write_file(folder / manifest.MANIFEST_NAME, entries)
    if committed is not None:
        manifest.write_file(committed, entries)
    return entries


def missing(models: Iterable[ZooModel], folder: Path) -> list[ZooModel]:
    """Models never built nor tried (no file, no recorded failure)."""
    entries = manifest.load(folder)
    return [m for m in models if entries.get(m.name, {}).get("status") not in (manifest.BUILT, manifest.FAILED)
            or (entries[m.name]["status"] == manifest.BUILT and not manifest.model_file(folder, m.name).is_file())]


def build_command(only: Sequence[str] = (), tier: str | None = None) -> str:
    """The command line that builds a selection."""
    parts = ["python", "-m", "onnxplug_conformance.zoo.build"]
    if only:
        parts += ["--only", ",".join(only)]
    if tier:
        parts += ["--tier", tier]
    return " ".join(parts)


def _worker(name: str, out: Path, result: Path) -> int:
    error = ""
    try:
        get_model(name).build(out)
    except Exception as e:  # noqa: BLE001 - reported to the parent as data
        traceback.print_exc()
        error = f"{type(e).__name__}: {e}"
    result.write_text(json.dumps({"error": error}), encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Build the selected models; exit 0 even when some failed (they are in the manifest), 2 on bad usage."""
    parser = argparse.ArgumentParser(prog="python -m onnxplug_conformance.zoo.build",
                                     description="Build the zoo's models into $ONNXPLUG_ZOO_DIR (default "
                                                 "~/.cache/onnxplug/zoo) and write its manifest.")
    parser.add_argument("--only", metavar="A,B", help="comma-separated model names (default: all)")
    parser.add_argument("--tier", metavar="TIER", help="only models of this tier (ci: the smallest of each family)")
    parser.add_argument("--force", action="store_true", help="rebuild models already built")
    parser.add_argument("--manifest", type=Path, metavar="PATH",
                        help=f"also write the manifest here (the committed copy is {manifest.COMMITTED_MANIFEST})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help=f"seconds a recipe may take (default {DEFAULT_TIMEOUT_S})")
    parser.add_argument("--in-process", action="store_true", help="run recipes in this process (no isolation)")
    parser.add_argument("--list", action="store_true", help="list the selected models and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.out, args.result)
    try:
        models = select(args.only, args.tier)
    except KeyError as e:
        parser.error(str(e.args[0]))
    if args.list:
        for model in models:
            print(f"{model.name:<40} {model.family:<14} {model.tier:<5} {model.recipe}")
        return 0
    folder = manifest.zoo_dir()
    print(f"building {len(models)} model(s) into {folder}", flush=True)
    entries = build_all(models, folder, force=args.force, isolate=not args.in_process, timeout_s=args.timeout,
                        committed=args.manifest, progress=lambda line: print(line, flush=True))
    failed = [m.name for m in models if entries[m.name]["status"] != manifest.BUILT]
    print(f"{len(models) - len(failed)} built, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    print(f"manifest: {folder / manifest.MANIFEST_NAME}" + (f" and {args.manifest}" if args.manifest else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
