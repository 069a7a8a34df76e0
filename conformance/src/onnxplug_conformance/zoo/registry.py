"""Every zoo model, gathered from the recipe modules (each exposes ``MODELS: list[ZooModel]``)."""

from __future__ import annotations

import importlib
from functools import lru_cache

from onnxplug_conformance.zoo.spec import ZooModel

#: Recipe modules under ``onnxplug_conformance.zoo.recipes``, one per family of sources.
RECIPE_MODULES = ("transformers_text", "transformers_media", "vision", "sklearn_models", "ort_tools", "wheels")


@lru_cache(maxsize=None)
def all_models() -> tuple[ZooModel, ...]:
    """The whole zoo, in recipe-module order; names are unique."""
    models: list[ZooModel] = []
    for module_name in RECIPE_MODULES:
        try:
            module = importlib.import_module(f"onnxplug_conformance.zoo.recipes.{module_name}")
        except ModuleNotFoundError as e:
            if e.name != f"onnxplug_conformance.zoo.recipes.{module_name}":
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
