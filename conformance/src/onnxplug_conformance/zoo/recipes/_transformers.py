"""Building blocks of the ``transformers`` recipes: a small random model, plain-tensor adapters.

Imported only inside ``build`` functions (it imports torch at the top). :func:`small_model` makes a
model from a config class with eager attention and seeded weights, and gives every parameter that
starts constant (layer-norm weights and biases, zero biases) seeded values around its start, so
outputs vary with their inputs. The adapters give the exporters a ``forward`` of plain tensors and
tuples: caches are rebuilt from flat key/value tensors inside the graph and returned flat again.
"""

from __future__ import annotations

from typing import Any

import torch

from onnxplug_conformance.zoo.recipes._torch import import_transformers, seeded


def small_model(model_class: str, config_class: str, seed: int, **config: Any) -> Any:
    """``model_class(config_class(**config))`` with eager attention, seeded and randomised, in eval mode."""
    transformers = import_transformers()
    seeded(seed)
    cfg = getattr(transformers, config_class)(**config)
    cfg._attn_implementation = "eager"  # sdpa and flex attention do not export with TorchScript
    model = getattr(transformers, model_class)(cfg).eval()
    randomise(model, seed)
    return model


def randomise(model: Any, seed: int, scale: float = 0.1) -> None:
    """Add seeded noise to every float parameter whose values are all equal (ones, zeros, a constant)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.is_floating_point() and param.numel() > 1 and bool((param == param.flatten()[0]).all()):
                param.add_(torch.randn(param.shape, generator=generator) * scale)


def _flat_cache(cache: Any) -> tuple[Any, ...]:
    """A cache's keys and values as ``(key_0, value_0, key_1, value_1, ...)``."""
    return tuple(t for layer in cache.layers for t in (layer.keys, layer.values))


def _cache(past: tuple[Any, ...], config: Any) -> Any:
    """A ``DynamicCache`` holding ``past`` = ``(key_0, value_0, key_1, ...)``."""
    transformers = import_transformers()
    return transformers.DynamicCache(ddp_cache_data=list(zip(past[0::2], past[1::2])), config=config)


class Encoder(torch.nn.Module):
    """An encoder's ``(input_ids, attention_mask[, token_type_ids])`` -> the outputs at ``picks``."""

    def __init__(self, model: Any, picks: tuple[int, ...] = (0,)) -> None:
        super().__init__()
        self.model, self.picks = model, picks

    def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=False, **extra)
        return tuple(out[i] for i in self.picks)


class CausalLM(torch.nn.Module):
    """A decoder-only language model without a cache: ``(input_ids, attention_mask)`` -> logits."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Any, attention_mask: Any) -> Any:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, return_dict=False)[0]


class CausalLMWithPast(torch.nn.Module):
    """``(input_ids, attention_mask over past + new, (past_key_0, past_value_0, ...))`` ->
    ``(logits, present_key_0, present_value_0, ...)``."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Any, attention_mask: Any, past: tuple[Any, ...]) -> Any:
        cache = _cache(past, self.model.config)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                         use_cache=True, return_dict=True)
        return (out.logits, *_flat_cache(out.past_key_values))


class Seq2SeqDecoder(torch.nn.Module):
    """An encoder-decoder's decoder and head on given encoder states:
    ``(decoder_input_ids, encoder_hidden_states, encoder_attention_mask)`` -> logits."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids: Any, encoder_hidden_states: Any, encoder_attention_mask: Any) -> Any:
        return self.model(encoder_outputs=(encoder_hidden_states,), attention_mask=encoder_attention_mask,
                          decoder_input_ids=decoder_input_ids, use_cache=False, return_dict=False)[0]


class Seq2SeqDecoderWithPast(torch.nn.Module):
    """The decoder with its self-attention past: ``(decoder_input_ids, encoder_hidden_states,
    encoder_attention_mask, (past_key_0, past_value_0, ...))`` -> ``(logits, present_key_0, ...)``.
    Cross-attention keys and values are computed from the encoder states at every step."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids: Any, encoder_hidden_states: Any, encoder_attention_mask: Any,
                past: tuple[Any, ...]) -> Any:
        transformers = import_transformers()
        cache = transformers.EncoderDecoderCache(_cache(past, self.model.config), transformers.DynamicCache())
        out = self.model(encoder_outputs=(encoder_hidden_states,), attention_mask=encoder_attention_mask,
                         decoder_input_ids=decoder_input_ids, past_key_values=cache, use_cache=True,
                         return_dict=True)
        return (out.logits, *_flat_cache(out.past_key_values.self_attention_cache))
