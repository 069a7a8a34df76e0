"""Every public name of the core's interface modules has a docstring, and the hook specs say when they run."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = ["onnxplug", "onnxplug.errors", "onnxplug.device", "onnxplug.kernel", "onnxplug.provider",
           "onnxplug.hookspecs", "onnxplug.plugins", "onnxplug.session", "onnxplug.options",
           "onnxplug.ort_value", "onnxplug.io_binding", "onnxplug.logs", "onnxplug.seeding",
           "onnxplug.partitioner", "onnxplug.executor", "onnxplug.ir", "onnxplug.ir.graph",
           "onnxplug.ir.types", "onnxplug.ir.loader", "onnxplug.optimizer", "onnxplug.ort_status",
           "onnxplug.ep_devices", "onnxplug.ep_libraries", "onnxplug.ort_functions", "onnxplug.ort_api_table",
           "onnxplug.api_coverage",
           "onnxplug.capi", "onnxplug.capi._pybind_state", "onnxplug.capi.onnxruntime_pybind11_state",
           "onnxplug.capi.onnxruntime_inference_collection", "onnxplug.as_onnxruntime",
           "onnxplug.as_onnxruntime.namespace", "onnxplug.as_onnxruntime.__main__", "onnxplug.option_rules",
           "onnxplug.feeds", "onnxplug.provider_specs", "onnxplug.ir.declared_types", "onnxplug.engine",
           "onnxplug.profiling", "onnxplug.plan_compiler", "onnxplug.fused_schemas", "onnxplug.version",
           "onnxplug.geometry", "onnxplug.mlas"]


def _public_members(module):
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", module.__name__) != module.__name__:
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield name, obj


@pytest.mark.parametrize("module_name", MODULES)
def test_public_names_have_docstrings(module_name):
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} has no module docstring"
    missing = []
    for name, obj in _public_members(module):
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (inspect.isfunction(member) or isinstance(member, (property, classmethod))):
                    continue
                func = member.__func__ if isinstance(member, classmethod) else member
                if not inspect.getdoc(func) and not any(
                        inspect.getdoc(getattr(base, attr, None)) for base in obj.__mro__[1:]):
                    missing.append(f"{name}.{attr}")
    assert not missing, f"{module_name}: undocumented public names: {missing}"


def test_hook_specs_are_prefixed_typed_and_say_when_called():
    from onnxplug import hookspecs

    specs = [f for n, f in vars(hookspecs).items() if n.startswith("onnxplug_")]
    assert len(specs) >= 3
    for spec in specs:
        assert spec.__name__.startswith("onnxplug_")
        assert "Called" in spec.__doc__, f"{spec.__name__} must say when it is called"
        hints = inspect.signature(spec)
        assert all(p.annotation is not inspect.Parameter.empty for p in hints.parameters.values())
        assert hints.return_annotation in (None, "None")
