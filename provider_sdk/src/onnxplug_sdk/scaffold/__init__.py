"""``onnxplug-sdk new NAME``: write a ready-to-install provider package."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from onnxplug.errors import OnnxplugError

from onnxplug_sdk.scaffold.templates import FILES

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ScaffoldError(OnnxplugError, ValueError):
    """The provider name is not usable, or the target folder is not empty."""


@dataclass(frozen=True)
class ProviderNames:
    """The names a provider called ``name`` uses: distribution, package, class."""

    name: str

    @property
    def distribution(self) -> str:
        """The pip name, e.g. ``onnxplug-my-gpu``."""
        return "onnxplug-" + self.name.replace("_", "-")

    @property
    def package(self) -> str:
        """The import name, e.g. ``onnxplug_my_gpu``."""
        return "onnxplug_" + self.name

    @property
    def class_name(self) -> str:
        """The provider class, e.g. ``MyGpuProvider``."""
        return "".join(part.capitalize() for part in self.name.split("_") if part) + "Provider"


def check_name(name: str) -> ProviderNames:
    """Validate a provider name: lower case letters, digits and ``_``, starting with a letter."""
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(f"provider name {name!r} must be lower case letters, digits and '_', "
                            "starting with a letter (it becomes a Python package name)")
    return ProviderNames(name)


def new_provider(name: str, target: str | Path | None = None) -> list[Path]:
    """Write the package of a provider called ``name`` into ``target`` (default ``./name``).

    ``target`` must not exist or be empty. Returns the files written.
    """
    names = check_name(name)
    root = Path(target) if target is not None else Path(name)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"target {str(root)!r} already exists and is not an empty folder")
    values = {"name": names.name, "distribution": names.distribution, "package": names.package,
              "class_name": names.class_name}
    written = []
    for relative, text in FILES.items():
        path = root / Template(relative).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values), encoding="utf-8")
        written.append(path)
    return written
