"""Providers as onnxruntime's ``providers=`` and ``provider_options=`` name them, and the instances
a session runs with.

Arguments are checked as onnxruntime checks them, with its messages (raised as
:class:`~onnxplug.errors.OptionValueError`). A name is a provider's short name, one of its
``aliases``, or an onnxruntime name that :data:`~onnxplug.plugins.ORT_ALIASES` maps; an onnxruntime
provider that no installed provider plays is skipped with a warning, as onnxruntime skips one its
build lacks; any other unknown name raises :class:`~onnxplug.errors.UnknownProviderError`; a
provider named twice keeps its first options. An option key the provider declares goes to it; a key
of the onnxruntime provider it plays follows :mod:`onnxplug.option_rules`; ``device_id`` selects the
device of a provider whose option for that is ``device``; any other key reaches the provider.
"""

from __future__ import annotations

import collections.abc
from typing import Any, Mapping, Sequence, Union

from onnxplug import logs
from onnxplug.errors import OptionValueError, ProviderUnavailableError, UnknownProviderError
from onnxplug.option_rules import split_provider_options, value_text
from onnxplug.plugins import DEFAULT_PROVIDER, ORT_ALIASES, ProviderCatalog, get_catalog
from onnxplug.provider import ExecutionProvider

ProviderSpec = Union[str, tuple[str, Mapping[str, Any]]]

#: onnxruntime's provider names (1.32's ``get_all_providers()`` and names of earlier releases).
ORT_PROVIDER_NAMES = frozenset({
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider", "OpenVINOExecutionProvider",
    "DnnlExecutionProvider", "VitisAIExecutionProvider", "QNNExecutionProvider", "NnapiExecutionProvider",
    "VSINPUExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider",
    "RknpuExecutionProvider", "WebNNExecutionProvider", "WebGpuExecutionProvider", "XnnpackExecutionProvider",
    "CANNExecutionProvider", "AzureExecutionProvider", "CPUExecutionProvider", "ROCMExecutionProvider",
    "ACLExecutionProvider", "ArmNNExecutionProvider", "TvmExecutionProvider", "SNPEExecutionProvider",
    "NvTensorRTRTXExecutionProvider", "OpenCLExecutionProvider",
})


def normalize(providers: Any, provider_options: Any) -> list[tuple[str, dict[str, Any]]]:
    """``[(name, options), ...]`` from onnxruntime's two arguments, checked as onnxruntime checks them."""
    if providers is None:
        if provider_options and any(provider_options):
            raise OptionValueError("provider_options were given without providers")
        return []
    if isinstance(providers, (str, bytes)) or not isinstance(providers, collections.abc.Sequence):
        raise OptionValueError(f"'providers' should be a sequence (a list of names), not {type(providers).__name__}")
    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence):
            raise OptionValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise OptionValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise OptionValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise OptionValueError("'provider_options' values must be dicts.")
        return [(name, {str(k): v for k, v in opts.items()}) for name, opts in zip(providers, provider_options)]
    specs = []
    for spec in providers:
        if isinstance(spec, str):
            specs.append((spec, {}))
        elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and isinstance(spec[1], dict):
            specs.append((spec[0], {str(k): v for k, v in spec[1].items()}))
        else:
            raise OptionValueError(f"'providers' values must be either strings or (string, dict) tuples, "
                                   f"not {spec!r}")
    return specs


def resolve(catalog: ProviderCatalog, name: str) -> str | None:
    """The short name of the installed provider ``name`` designates, or None for an onnxruntime
    provider that none plays here."""
    try:
        return catalog.resolve_name(name)
    except UnknownProviderError:
        if name in ORT_PROVIDER_NAMES:
            return None
        raise


def ort_name_of(cls: type[ExecutionProvider]) -> str | None:
    """The onnxruntime provider a provider class plays, if any."""
    for alias in (*cls.aliases, *(k for k, v in ORT_ALIASES.items() if v == cls.name)):
        if alias in ORT_PROVIDER_NAMES:
            return alias
    return None


def provider_options_for(cls: type[ExecutionProvider], options: Mapping[str, Any]) -> dict[str, Any]:
    """The options to create ``cls`` with, from the options a client gave under any of its names."""
    own = cls.default_options
    options = dict(options)
    if "device_id" in options and "device_id" not in own and "device" in own and "device" not in options:
        options["device"] = str(options.pop("device_id"))
    return split_provider_options(ort_name_of(cls), own, options, cls.name)


def create_providers(providers: Sequence[ProviderSpec] | None,
                     provider_options: Sequence[Mapping[str, Any]] | None,
                     options: Any) -> list[ExecutionProvider]:
    """Instantiate the requested providers in order, the default last unless fallback is disabled.

    An unavailable provider is skipped with a warning, or raises when fallback is disabled.
    """
    catalog = get_catalog()
    fallback_disabled = options.fallback_disabled
    specs: list[tuple[str, Mapping[str, Any]]] = []
    requested = normalize(providers, provider_options)
    if providers is None:
        requested = [(DEFAULT_PROVIDER, {})]
    for name, opts in requested:
        short = resolve(catalog, name)
        if short is None:
            message = (f"provider {name!r} is onnxruntime's, and no installed onnxplug provider plays it "
                       f"(installed: {', '.join(sorted(catalog.providers))})")
            if fallback_disabled:
                raise ProviderUnavailableError(message)
            logs.warn(f"{message}; skipped", stacklevel=4)
            continue
        if short in [n for n, _ in specs]:
            logs.warn(f"provider {name!r} ({short!r}) is listed twice; the second is ignored, as in onnxruntime",
                      stacklevel=4)
            continue
        specs.append((short, opts))
    if not fallback_disabled and DEFAULT_PROVIDER not in [n for n, _ in specs]:
        specs.append((DEFAULT_PROVIDER, {}))
    created: list[ExecutionProvider] = []
    threads = int(options.intra_op_num_threads)
    for name, opts in specs:
        cls = catalog.providers[name]
        kept = provider_options_for(cls, opts)
        availability = cls.availability()
        if not availability:
            message = f"provider {name!r} is not available: {availability.reason}"
            if fallback_disabled:
                raise ProviderUnavailableError(message)
            logs.warn(f"{message}; falling back to the next provider", stacklevel=4)
            continue
        created.append(cls(kept, intra_op_num_threads=threads))
    return created


def options_report(providers: Sequence[ExecutionProvider]) -> dict[str, dict[str, str]]:
    """``get_provider_options()`` in onnxruntime's form: provider name -> option -> string, each
    provider's own options with defaults filled in (onnxplug's names, and ``True``/``False`` as
    ``'1'``/``'0'``, as onnxruntime writes its flags)."""
    return {p.name: {str(k): value_text(v) for k, v in p.reported_options().items()} for p in providers}
