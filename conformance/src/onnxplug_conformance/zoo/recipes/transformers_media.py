"""Zoo models from ``transformers``: speech (Whisper, wav2vec2) and vision (ViT, Swin, ConvNeXt,
MobileViT, SegFormer, CLIP's two towers).

Each is a small config with random weights (nothing downloaded), eager attention, constant
parameters (layer scales, biases, norms) and batch-norm statistics given seeded values, wrapped in
an adapter whose inputs and outputs are plain tensors. Exported with TorchScript at opset 17 with a
dynamic batch axis, and sequence, time or image axes where the model allows them; a few are
exported again with the dynamo exporter (``-dynamo``, opsets 18+).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

from onnxplug_conformance.zoo.spec import InputSpec, ZooModel

IMAGE = {"low": -1.0, "high": 1.0}
AUDIO = {"low": -1.0, "high": 1.0}
VOCAB = 1000


def _adapter(model: Any, input_names: Sequence[str], picks: Sequence[int]) -> Any:
    import torch

    class Adapter(torch.nn.Module):
        """Positional tensors -> the model's outputs at ``picks``, as a tuple."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        # named parameters, not *args: the dynamo exporter matches dynamic axes to them
        def forward(self, first: Any, second: Any = None) -> Any:
            args = (first,) if second is None else (first, second)
            out = self.model(**dict(zip(input_names, args)), return_dict=False)
            return tuple(out[i] for i in picks)

    return Adapter()


def _whisper_decoder_adapter(model: Any) -> Any:
    import torch

    class WhisperDecoder(torch.nn.Module):
        """``(input_ids, encoder_hidden_states)`` -> logits, without a cache."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, encoder_hidden_states: Any) -> Any:
            # an explicit mask keeps transformers off its packed-sequence test (aten::diff, no ONNX form)
            hidden = self.model.model.decoder(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                              encoder_hidden_states=encoder_hidden_states, use_cache=False,
                                              return_dict=False)[0]
            return (self.model.proj_out(hidden),)

    return WhisperDecoder()


def _whisper_encoder_adapter(model: Any) -> Any:
    return _adapter(model.model.encoder, ["input_features"], [0])


def _build(path: Path, *, model_class: str, config_class: str, config: Mapping[str, Any],
           inputs: Sequence[InputSpec], output_names: Sequence[str], dynamic: Mapping[str, Mapping[int, str]],
           picks: Sequence[int] = (0,), wrap: Any = None, seed: int = 0, exporter: str = "torchscript",
           opset: int = 17) -> None:
    import numpy as np
    import torch

    from onnxplug_conformance.zoo.inputs import generate
    from onnxplug_conformance.zoo.recipes._torch import export
    from onnxplug_conformance.zoo.recipes._transformers import small_model
    from onnxplug_conformance.zoo.recipes.vision import randomise_norms

    def examples(shape_set: int) -> tuple[Any, ...]:
        return tuple(torch.from_numpy(np.ascontiguousarray(generate(s, shape_set, np.random.default_rng((seed, i)))))
                     for i, s in enumerate(inputs))

    model = small_model(model_class, config_class, seed, **config)
    module = wrap(model) if wrap is not None else _adapter(model, [s.name for s in inputs], picks)
    batch = examples(1)
    randomise_norms(model, seed, run=lambda: module(*batch))  # batch-norm statistics measured (MobileViT)
    example = examples(0)
    export(module, example, path, input_names=[s.name for s in inputs], output_names=output_names,
           dynamic_axes=dynamic, opset=opset, exporter=exporter)


def _model(name: str, recipe: str, model_class: str, config_class: str, config: Mapping[str, Any],
           inputs: Sequence[InputSpec], outputs: Mapping[str, Mapping[int, str]], *, picks: Sequence[int] = (0,),
           wrap: Any = None, exporter: str = "torchscript", opset: int = 17, tier: str = "full",
           notes: str = "", seed: int = 0) -> ZooModel:
    dynamic = {**{s.name: _axes(s) for s in inputs}, **outputs}
    build = partial(_build, model_class=model_class, config_class=config_class, config=dict(config),
                    inputs=list(inputs), output_names=list(outputs), dynamic=dynamic, picks=tuple(picks),
                    wrap=wrap, seed=seed, exporter=exporter, opset=opset)
    return ZooModel(name=name, family="transformers", source_package="transformers", recipe=recipe,
                    exporter=exporter, opset=opset, inputs=list(inputs), build=build, tier=tier, notes=notes,
                    seed=seed)


def _axes(spec: InputSpec) -> dict[int, str]:
    """The axes whose size differs between the two shape sets, plus the batch axis."""
    first, second = spec.shapes
    axes = {0: "batch"}
    for i, (a, b) in enumerate(zip(first, second)):
        if i and a != b:
            axes[i] = f"{spec.name}_{i}"
    return axes


def _image(size: int, second: int | None = None, channels: int = 3) -> InputSpec:
    second = second or size
    return InputSpec("pixel_values", "float32", ((1, channels, size, size), (2, channels, second, second)),
                     "uniform", IMAGE)


_BATCH = {0: "batch"}
_TOKENS = {0: "batch", 1: "tokens"}

# --- speech ----------------------------------------------------------------------------------

WHISPER = dict(vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
               encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
               max_source_positions=50, max_target_positions=64, pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2,
               eos_token_id=VOCAB - 2, decoder_start_token_id=VOCAB - 3, suppress_tokens=[], begin_suppress_tokens=[])
WHISPER_RECIPE = ("WhisperForConditionalGeneration from WhisperConfig(d_model=64, layers=2+2, heads=2, "
                  "mel bins=16, 50 source positions, vocab=1000)")

WAV2VEC2 = dict(vocab_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                conv_dim=(32,) * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)


def _whisper_encoder(name: str, exporter: str = "torchscript", opset: int = 17) -> ZooModel:
    return _model(
        name, WHISPER_RECIPE + ": encoder, input_features -> last_hidden_state",
        "WhisperForConditionalGeneration", "WhisperConfig", WHISPER,
        [InputSpec("input_features", "float32", ((1, 16, 100), (2, 16, 100)), "normal")],
        {"last_hidden_state": _BATCH}, wrap=_whisper_encoder_adapter, exporter=exporter, opset=opset,
        notes="the encoder requires exactly 2 x max_source_positions frames: only the batch axis is dynamic")


# --- vision ----------------------------------------------------------------------------------

VIT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, image_size=32,
           patch_size=8)
CONVNEXT = dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, image_size=32)


def _vit(name: str, exporter: str = "torchscript", opset: int = 17, tier: str = "full") -> ZooModel:
    return _model(name, "ViTModel from ViTConfig(hidden=64, layers=2, heads=2, 32x32 images, patch 8)",
                  "ViTModel", "ViTConfig", VIT, [_image(32)],
                  {"last_hidden_state": _BATCH, "pooler_output": _BATCH}, picks=(0, 1), exporter=exporter,
                  opset=opset, tier=tier)


def _convnext(name: str, exporter: str = "torchscript", opset: int = 17) -> ZooModel:
    return _model(name, "ConvNextModel from ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1])",
                  "ConvNextModel", "ConvNextConfig", CONVNEXT, [_image(32, 64)],
                  {"last_hidden_state": {0: "batch", 2: "h", 3: "w"}, "pooler_output": _BATCH}, picks=(0, 1),
                  exporter=exporter, opset=opset, notes="dynamic batch, height and width (32 and 64)")


CLIP_TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=2, max_position_embeddings=32)
CLIP_VISION = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                   image_size=32, patch_size=8)


def _clip_text(name: str, exporter: str = "torchscript", opset: int = 17) -> ZooModel:
    return _model(name, "CLIPTextModel from CLIPTextConfig(hidden=64, layers=2, heads=2, vocab=1000)",
                  "CLIPTextModel", "CLIPTextConfig", CLIP_TEXT,
                  [InputSpec("input_ids", "int64", ((1, 7), (2, 12)), "integers", {"high": VOCAB}),
                   InputSpec("attention_mask", "int64", ((1, 7), (2, 12)), "mask")],
                  {"last_hidden_state": _TOKENS, "pooler_output": _BATCH}, picks=(0, 1), exporter=exporter,
                  opset=opset, notes="dynamic batch and sequence; the second row of the batch is padded")


MODELS: list[ZooModel] = [
    _whisper_encoder("whisper-encoder"),
    _model("whisper-decoder", WHISPER_RECIPE + ": decoder and output projection, no cache",
           "WhisperForConditionalGeneration", "WhisperConfig", WHISPER,
           [InputSpec("input_ids", "int64", ((1, 4), (2, 7)), "integers", {"high": VOCAB}),
            InputSpec("encoder_hidden_states", "float32", ((1, 50, 64), (2, 30, 64)), "normal")],
           {"logits": _TOKENS}, wrap=_whisper_decoder_adapter,
           notes="dynamic batch, number of tokens (4 and 7) and encoder length (50 and 30)"),
    _model("wav2vec2", "Wav2Vec2Model from Wav2Vec2Config(hidden=64, layers=2, heads=2, conv_dim=32 x 7), raw audio",
           "Wav2Vec2Model", "Wav2Vec2Config", WAV2VEC2,
           [InputSpec("input_values", "float32", ((1, 1600), (2, 3200)), "uniform", AUDIO)],
           {"last_hidden_state": {0: "batch", 1: "frames"}, "extract_features": {0: "batch", 1: "frames"}},
           picks=(0, 1), notes="dynamic batch and number of samples (1600 and 3200)"),
    _vit("vit", tier="ci"),
    _model("swin", "SwinModel from SwinConfig(embed_dim=16, depths=[1, 1], heads=[1, 2], window 4, 32x32 images)",
           "SwinModel", "SwinConfig",
           dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4),
           [_image(32)], {"last_hidden_state": _BATCH, "pooler_output": _BATCH}, picks=(0, 1)),
    _convnext("convnext"),
    _model("mobilevit", "MobileViTModel from MobileViTConfig(hidden_sizes=[32, 48, 64], small necks, 64x64 images)",
           "MobileViTModel", "MobileViTConfig",
           dict(image_size=64, patch_size=2, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 16, 24, 32, 48, 64, 96],
                num_attention_heads=2),
           [_image(64)], {"last_hidden_state": _BATCH, "pooler_output": _BATCH}, picks=(0, 1)),
    _model("segformer", "SegformerForSemanticSegmentation from SegformerConfig(hidden_sizes=[16, 32, 48, 64], "
           "depths=[1, 1, 1, 1], 5 labels), 64x64 images -> logits at 16x16",
           "SegformerForSemanticSegmentation", "SegformerConfig",
           dict(depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 48, 64], num_attention_heads=[1, 1, 2, 2],
                decoder_hidden_size=32, num_labels=5),
           [_image(64)], {"logits": _BATCH}),
    _clip_text("clip-text"),
    _model("clip-vision", "CLIPVisionModel from CLIPVisionConfig(hidden=64, layers=2, heads=2, 32x32, patch 8)",
           "CLIPVisionModel", "CLIPVisionConfig", CLIP_VISION, [_image(32)],
           {"last_hidden_state": _BATCH, "pooler_output": _BATCH}, picks=(0, 1)),
    # the dynamo exporter
    _vit("vit-dynamo", exporter="dynamo", opset=18),
    _convnext("convnext-dynamo", exporter="dynamo", opset=20),
    _whisper_encoder("whisper-encoder-dynamo", exporter="dynamo", opset=18),
    # TorchScript at opset 13: no LayerNormalization, so layer norms are decomposed
    _clip_text("clip-text-opset13", opset=13),
]
