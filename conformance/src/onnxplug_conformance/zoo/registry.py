"""Every zoo model, gathered from the recipe modules (each exposes ``MODELS: list[ZooModel]``).

``ONNXPLUG_ZOO_RECIPES=a,b`` gathers these importable modules instead of the built-in ones (a
name of :data:`RECIPE_MODULES` stands for that built-in module): a provider package's own models,
or the self-tests' small ones.
"""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

from onnxplug_conformance.zoo.spec import ZooModel

#: Recipe modules under ``onnxplug_conformance.zoo.recipes``, one per family of sources.
RECIPE_MODULES = ("transformers_text", "transformers_media", "vision", "sklearn_models", "ort_tools", "wheels")


def recipe_modules() -> tuple[str, ...]:
    """The full names of the modules the zoo is gathered from."""
    names = [n.strip() for n in os.environ.get("ONNXPLUG_ZOO_RECIPES", "").split(",") if n.strip()] \
        or RECIPE_MODULES
    return tuple(f"onnxplug_conformance.zoo.recipes.{n}" if n in RECIPE_MODULES else n for n in names)


def all_models() -> tuple[ZooModel, ...]:
    """The whole zoo, in recipe-module order; names are unique."""
    return _gather(recipe_modules())


@lru_cache(maxsize=None)
def _gather(module_names: tuple[str, ...]) -> tuple[ZooModel, ...]:
    models: list[ZooModel] = []
    for module_name in module_names:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name or not module_name.startswith("onnxplug_conformance.zoo.recipes."):
                raise
            continue  # a family not written yet
        models.extend(module.MODELS)
    seen: set[str] = set()
    for model in models:
        if model.name in seen:
            raise ValueError(f"zoo model name {model.name!r} is used twice")
        seen.add(model.name)
    return tuple(models)


def get_model(name: str) -> ZooModel:
    """The zoo model called ``name`` (``KeyError`` naming the known ones otherwise)."""
    for model in all_models():
        if model.name == name:
            return model
    raise KeyError(f"no zoo model {name!r}; known: {', '.join(m.name for m in all_models())}")


def select(only: str | None = None, tier: str | None = None) -> list[ZooModel]:
    """Models named in the comma-separated ``only`` (all when None), optionally of one ``tier``."""
    models = list(all_models()) if not only else [get_model(n.strip()) for n in only.split(",") if n.strip()]
    return [m for m in models if tier is None or m.tier == tier]
