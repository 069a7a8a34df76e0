"""``KernelRegistryProvider``: a provider made of single-node kernels kept in a per-class registry."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, ClassVar, Mapping

from onnxplug.errors import ProviderError
from onnxplug.ir import Node
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.plugins import extend_registry
from onnxplug.provider import ExecutionProvider


class _ProviderRegistry(KernelRegistry):
    """A registry whose lazy load, once failed, keeps failing with the same message.

    The core's registry drops its loader before running it, so a half-imported ops package
    would otherwise silently serve a partial registry on the next call.
    """

    def __init__(self, name: str, loader: Callable[[KernelRegistry], None]) -> None:
        super().__init__(name, loader)
        self._load_error: ProviderError | None = None

    def _ensure_loaded(self) -> None:
        if self._load_error is not None:
            raise self._load_error
        try:
            super()._ensure_loaded()
        except ProviderError as e:
            self._load_error = e
            raise


def _loader_for(cls: type[KernelRegistryProvider]) -> Callable[[KernelRegistry], None]:
    def load(registry: KernelRegistry) -> None:
        package_name = cls.ops_package
        if package_name:
            for module in _op_modules(cls, package_name):
                try:
                    importlib.import_module(module)
                except Exception as e:
                    raise ProviderError(f"provider {cls.name or cls.__name__!r}: kernel module {module!r} "
                                        f"failed to import: {type(e).__name__}: {e}") from e
        extend_registry(cls.name or cls.__name__, registry)
    return load


def _op_modules(cls: type[KernelRegistryProvider], package_name: str) -> list[str]:
    try:
        package = importlib.import_module(package_name)
    except ImportError as e:
        raise ProviderError(f"provider {cls.name or cls.__name__!r}: ops_package {package_name!r} "
                            f"cannot be imported: {e}") from e
    path = getattr(package, "__path__", None)
    if path is None:
        raise ProviderError(f"provider {cls.name or cls.__name__!r}: ops_package {package_name!r} is a "
                            "module, not a package of op_*.py modules")
    return sorted(f"{package_name}.{info.name}" for info in pkgutil.iter_modules(path)
                  if info.name.startswith("op_"))


class KernelRegistryProvider(ExecutionProvider):
    """Base for providers whose kernels each compute one node.

    Every subclass gets its own ``registry``. Kernels join it with the class decorator
    ``@MyProvider.kernel("Relu", 6, 13, 14)`` (one since_version per ONNX version of the op that the
    kernel implements; none means 1), usually from modules ``op_*.py`` of the package named by
    ``ops_package``, which are imported the first time a kernel is looked up. After that import,
    plugins get the ``onnxplug_register_kernels`` hook once to add kernels of their own.

    A node is claimed when a kernel resolves for it (largest since_version not above the model's
    opset) and that kernel's ``supports(node, view)`` is true. A subclass's own kernels win over
    its base classes'; ops it does not register resolve in its base classes' registries.
    """

    #: Dotted name of the package whose ``op_*.py`` modules register this provider's kernels.
    ops_package: ClassVar[str] = ""
    #: This class's kernels; created for each subclass by ``__init_subclass__``.
    registry: ClassVar[KernelRegistry]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The SDK's own intermediate bases (CompilingProvider) hold no kernels.
        if not cls.__dict__.get("_sdk_base", False):
            cls.registry = _ProviderRegistry(cls.name or cls.__name__, _loader_for(cls))

    def __init__(self, options: Mapping[str, Any] | None = None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = type(self).registry

    @classmethod
    def kernel(cls, op_type: str, *since_versions: int,
               domain: str = "") -> Callable[[type[Kernel]], type[Kernel]]:
        """Class decorator registering a kernel for ``op_type`` from each of ``since_versions`` on.

        Registering the same (domain, op_type, since_version) twice raises
        :class:`~onnxplug_sdk.errors.DuplicateKernelError`.
        """
        if "registry" not in cls.__dict__:
            raise TypeError(f"{cls.__name__}.kernel must be called on a provider subclass, "
                            "e.g. @MyProvider.kernel('Relu')")
        return cls.registry.kernel(op_type, *since_versions, domain=domain)

    def resolve_kernel(self, node: Node) -> type[Kernel] | None:
        """The kernel for ``node`` at its opset: this class's registry first, then its bases'."""
        for klass in type(self).__mro__:
            registry = klass.__dict__.get("registry")
            if isinstance(registry, KernelRegistry):
                kernel = registry.resolve(node.domain, node.op_type, node.opset)
                if kernel is not None:
                    return kernel
        return None


def registry_for(provider_class: type[KernelRegistryProvider]) -> KernelRegistry:
    """The kernel registry of ``provider_class``, e.g. ``op = registry_for(MyProvider).kernel``."""
    if not (isinstance(provider_class, type) and issubclass(provider_class, KernelRegistryProvider)
            and "registry" in provider_class.__dict__):
        raise TypeError(f"registry_for expects a subclass of KernelRegistryProvider, got {provider_class!r}")
    return provider_class.registry
