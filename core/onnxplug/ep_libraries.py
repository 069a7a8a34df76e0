"""onnxruntime's ``register_execution_provider_library``, mapped onto provider plugins.

``register_execution_provider_library(name, path)`` loads an onnxplug provider plugin (a ``.py``
file or a package directory defining ``onnxplug_register_providers``) as plugin ``name``: its
providers join the catalog, ``get_available_providers()`` and ``get_ep_devices()``.
``unregister_execution_provider_library(name)`` removes them. onnxruntime's native provider
libraries (``.so``, ``.dll``, ``.dylib``) cannot run here; they, a missing path, a module without
the hook, a plugin that registers no provider and a name already registered are refused with
:class:`~onnxplug.errors.ProviderLibraryError` (onnxruntime's ``Fail``).
"""

from __future__ import annotations

import importlib.util
import os
import sys

from onnxplug import ep_devices
from onnxplug.errors import ProviderLibraryError

_NATIVE_SUFFIXES = (".so", ".dll", ".dylib")
_registered: dict[str, str] = {}  # registration name -> module name in sys.modules


def register_execution_provider_library(registration_name: str, library_path: str | os.PathLike[str]) -> None:
    """Load an onnxplug provider plugin (a ``.py`` file or a package directory that defines
    ``onnxplug_register_providers``) as plugin ``registration_name``; its providers join the catalog."""
    from onnxplug.plugins import get_catalog

    name, path = str(registration_name), os.fspath(library_path)
    catalog = get_catalog()
    if name in _registered or catalog.pm.get_plugin(name) is not None:
        raise ProviderLibraryError(f"register_execution_provider_library: {name!r} is already registered")
    if path.lower().endswith(_NATIVE_SUFFIXES) or ".so." in os.path.basename(path):
        raise ProviderLibraryError(
            f"register_execution_provider_library({name!r}, {path!r}): a native onnxruntime provider library "
            f"cannot run on onnxplug, whose providers are Python plugins; pass the .py file or package "
            f"directory of an onnxplug provider plugin")
    target = os.path.join(path, "__init__.py") if os.path.isdir(path) else path
    if not os.path.isfile(target):
        raise ProviderLibraryError(f"register_execution_provider_library({name!r}, {path!r}): no such file "
                                   f"(expected a .py file or a package directory)")
    module_name = f"onnxplug_registered_{''.join(c if c.isalnum() else '_' for c in name)}"
    spec = importlib.util.spec_from_file_location(
        module_name, target, submodule_search_locations=[path] if os.path.isdir(path) else None)
    if spec is None or spec.loader is None:
        raise ProviderLibraryError(f"register_execution_provider_library: cannot import {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        if not hasattr(module, "onnxplug_register_providers"):
            raise ProviderLibraryError(f"register_execution_provider_library: {path!r} defines no "
                                       f"onnxplug_register_providers hook")
        rejected_before = len(catalog.rejected)
        catalog.add_plugin(module, name)
        if name not in catalog.owner.values():
            reasons = "; ".join(f"{r.name!r}: {r.reason}" for r in catalog.rejected[rejected_before:])
            catalog.remove_plugin(name)
            raise ProviderLibraryError(f"register_execution_provider_library({name!r}, {path!r}): the plugin "
                                       f"registered no provider ({reasons or 'its hook registered none'})")
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    _registered[name] = module_name


def unregister_execution_provider_library(registration_name: str) -> None:
    """Remove the providers of a plugin loaded by ``register_execution_provider_library``."""
    from onnxplug.plugins import get_catalog

    name = str(registration_name)
    if name not in _registered:
        raise ProviderLibraryError(f"unregister_execution_provider_library: {name!r} was not registered")
    get_catalog().remove_plugin(name)
    module_name = _registered.pop(name)
    ep_devices.forget_providers_of(module_name)
    sys.modules.pop(module_name, None)
