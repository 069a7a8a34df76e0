"""Text transformers of ``transformers``: encoders, decoders with and without a cache, encoder-decoders.

Each architecture is a small config (hidden 32-64, two layers, a vocabulary of a few hundred) with
seeded random weights (:mod:`._transformers`), exported with dynamic batch and sequence axes (and
past and encoder lengths where there are some). Most are exported with the TorchScript exporter at
opset 17; some again with the dynamo exporter (opset 18 or 20) or at opset 13, since users' files
come from both. A model whose export fails still builds its entry: ``build`` raises the exporter's
error for the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from onnxplug_conformance.zoo.spec import InputSpec, ZooModel

S0, S1 = (1, 7), (2, 16)  # batch x sequence of the two shape sets
NEW = (1, 1), (2, 4)  # batch x new tokens of a step with a cache
PAST = 3, 5  # cached lengths of the two shape sets
DECODER = (1, 5), (2, 9)  # batch x decoder sequence, beside encoder states of S0 and S1


@dataclass(frozen=True)
class Arch:
    """An architecture: the model and config classes, the config, and what the graph looks like."""

    model_class: str
    config_class: str
    config: dict[str, Any]
    kind: str  # "encoder", "causal", "causal-past", "seq2seq-decoder", "seq2seq-decoder-past"
    outputs: tuple[str, ...] = ("last_hidden_state",)
    token_types: bool = False  # takes token_type_ids
    submodule: str = ""  # export model.<submodule>() (``get_encoder``) instead of the model
    cache: tuple[int, int, int] = (0, 0, 0)  # decoders: layers, key/value heads, head size
    hidden: int = 0  # encoder-decoders: width of the encoder states


_SMALL = dict(vocab_size=512, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              max_position_embeddings=64, initializer_range=0.1)
_BART = dict(vocab_size=384, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, init_std=0.1)
_T5 = dict(vocab_size=320, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
           relative_attention_num_buckets=8, relative_attention_max_distance=16, decoder_start_token_id=0)

ARCHS: dict[str, Arch] = {
    "bert": Arch("BertModel", "BertConfig", {**_SMALL, "type_vocab_size": 2}, "encoder",
                 ("last_hidden_state", "pooler_output"), token_types=True),
    "distilbert": Arch("DistilBertModel", "DistilBertConfig",
                       dict(vocab_size=448, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64,
                            initializer_range=0.1), "encoder"),
    "roberta": Arch("RobertaModel", "RobertaConfig", {**_SMALL, "vocab_size": 600, "max_position_embeddings": 66},
                    "encoder", ("last_hidden_state", "pooler_output")),
    "albert": Arch("AlbertModel", "AlbertConfig", {**_SMALL, "vocab_size": 300, "embedding_size": 16}, "encoder",
                   ("last_hidden_state", "pooler_output"), token_types=True),
    "electra": Arch("ElectraModel", "ElectraConfig", {**_SMALL, "vocab_size": 700, "embedding_size": 16}, "encoder",
                    token_types=True),
    "deberta-v2": Arch("DebertaV2Model", "DebertaV2Config",
                       {**_SMALL, "vocab_size": 500, "type_vocab_size": 2, "relative_attention": True,
                        "position_buckets": 16, "max_relative_positions": 32, "pos_att_type": ["p2c", "c2p"],
                        "norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False},
                       "encoder", token_types=True),
    "xlm-roberta": Arch("XLMRobertaModel", "XLMRobertaConfig",
                        {**_SMALL, "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
                         "max_position_embeddings": 66}, "encoder", ("last_hidden_state", "pooler_output")),
    "gpt2": Arch("GPT2LMHeadModel", "GPT2Config",
                 dict(vocab_size=512, n_positions=64, n_embd=32, n_layer=2, n_head=4, initializer_range=0.1), "causal",
                 ("logits",), cache=(2, 4, 8)),
    "llama": Arch("LlamaForCausalLM", "LlamaConfig",
                  dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.1), "causal", ("logits",),
                  cache=(2, 2, 16)),
    "t5": Arch("T5ForConditionalGeneration", "T5Config", _T5, "seq2seq-decoder", ("logits",), hidden=32),
    "bart": Arch("BartForConditionalGeneration", "BartConfig", _BART, "seq2seq-decoder-past", ("logits",),
                 cache=(2, 4, 8), hidden=32),
}
ARCHS["gpt2-past"] = replace(ARCHS["gpt2"], kind="causal-past")
ARCHS["llama-past"] = replace(ARCHS["llama"], kind="causal-past")  # a cache of fewer heads than the queries
ARCHS["marian"] = Arch("MarianMTModel", "MarianConfig", {**_BART, "vocab_size": 256, "decoder_vocab_size": 256,
                                                           "pad_token_id": 255, "decoder_start_token_id": 255},
                        "seq2seq-decoder-past", ("logits",), cache=(2, 4, 8), hidden=32)  # sinusoidal positions
ARCHS["t5-encoder"] = Arch("T5EncoderModel", "T5Config", _T5, "encoder")
ARCHS["bart-encoder"] = Arch("BartForConditionalGeneration", "BartConfig", _BART, "encoder", submodule="get_encoder")


def _ids(name: str, arch: Arch, shapes: tuple[tuple[int, ...], ...] = (S0, S1)) -> InputSpec:
    return InputSpec(name, "int64", shapes, "integers", {"high": arch.config["vocab_size"]})


def _mask(name: str, shapes: tuple[tuple[int, ...], ...] = (S0, S1)) -> InputSpec:
    return InputSpec(name, "int64", shapes, "mask")


def _past_names(arch: Arch) -> list[str]:
    return [f"past_{kv}_{i}" for i in range(arch.cache[0]) for kv in ("key", "value")]


def _signature(arch: Arch) -> tuple[list[InputSpec], list[str], dict[str, dict[int, str]]]:
    """Input specs, output names and dynamic axes of an architecture's graph."""
    bs = {0: "batch", 1: "sequence"}
    if arch.kind == "encoder":
        inputs = [_ids("input_ids", arch), _mask("attention_mask")]
        if arch.token_types:
            inputs.append(InputSpec("token_type_ids", "int64", (S0, S1), "integers", {"high": 2}))
        axes = {i.name: bs for i in inputs} | {"last_hidden_state": bs}
        if "pooler_output" in arch.outputs:
            axes["pooler_output"] = {0: "batch"}
        return inputs, list(arch.outputs), axes
    if arch.kind == "causal":
        inputs = [_ids("input_ids", arch), _mask("attention_mask")]
        return inputs, ["logits"], {"input_ids": bs, "attention_mask": bs, "logits": bs}
    if arch.kind in ("seq2seq-decoder", "seq2seq-decoder-past"):
        new = NEW if arch.kind == "seq2seq-decoder-past" else DECODER
        states = tuple((b, s, arch.hidden) for b, s in (S0, S1))
        inputs = [_ids("decoder_input_ids", arch, new), InputSpec("encoder_hidden_states", "float32", states, "normal"),
                  _mask("encoder_attention_mask")]
        enc = {0: "batch", 1: "encoder_sequence"}
        axes = {"decoder_input_ids": bs, "encoder_hidden_states": enc, "encoder_attention_mask": enc, "logits": bs}
        if arch.kind == "seq2seq-decoder":
            return inputs, ["logits"], axes
    # a step with a cache: decoder-only, or the seq2seq decoder above
    _, heads, size = arch.cache
    cache_shapes = tuple((b, heads, p, size) for (b, _), p in zip(NEW, PAST))
    past = [InputSpec(n, "float32", cache_shapes, "normal") for n in _past_names(arch)]
    presents = [n.replace("past_", "present_") for n in _past_names(arch)]
    cache_axes = {n: {0: "batch", 2: "past_sequence"} for n in _past_names(arch)}
    cache_axes |= {n: {0: "batch", 2: "total_sequence"} for n in presents}
    if arch.kind == "causal-past":
        totals = tuple((b, s + p) for (b, s), p in zip(NEW, PAST))
        inputs = [_ids("input_ids", arch, NEW), _mask("attention_mask", totals), *past]
        axes = {"input_ids": bs, "attention_mask": {0: "batch", 1: "total_sequence"}, "logits": bs}
        return inputs, ["logits", *presents], axes | cache_axes
    return inputs + past, ["logits", *presents], axes | cache_axes


#: Sizes of the named axes when tracing: unlike both shape sets, so no size is baked in unnoticed.
TRACE_SIZES = {"batch": 2, "sequence": 6, "past_sequence": 4, "total_sequence": 10, "encoder_sequence": 8}


def _example(spec: InputSpec, axes: dict[int, str]) -> Any:
    """A tracing input for ``spec``: its named axes at :data:`TRACE_SIZES`, a padded mask row."""
    import torch

    shape = [TRACE_SIZES[axes[i]] if i in axes else d for i, d in enumerate(spec.shapes[1])]
    if spec.generator == "mask":
        value = torch.ones(shape, dtype=torch.int64)
        value[1, -2:] = 0  # an all-ones mask could let the model drop the masking
        return value
    if spec.generator == "integers":
        return torch.randint(0, spec.params["high"], shape, dtype=torch.int64)
    return torch.randn(shape)


def _build(arch_name: str, exporter: str, opset: int, seed: int, path: Path) -> None:
    """Make the architecture's model and export it to ``path``."""
    from onnxplug_conformance.zoo.recipes import _transformers as tf
    from onnxplug_conformance.zoo.recipes._torch import export

    arch = ARCHS[arch_name]
    model = tf.small_model(arch.model_class, arch.config_class, seed, **arch.config)
    if arch.submodule:
        model = getattr(model, arch.submodule)()
    inputs, outputs, axes = _signature(arch)
    adapter = {"encoder": lambda m: tf.Encoder(m, tuple(range(len(arch.outputs)))), "causal": tf.CausalLM,
               "causal-past": tf.CausalLMWithPast, "seq2seq-decoder": tf.Seq2SeqDecoder,
               "seq2seq-decoder-past": tf.Seq2SeqDecoderWithPast}[arch.kind](model)
    examples = [_example(spec, axes.get(spec.name, {})) for spec in inputs]
    n_plain = len(inputs) - len([s for s in inputs if s.name.startswith("past_")])
    args = tuple(examples[:n_plain]) + ((tuple(examples[n_plain:]),) if n_plain < len(inputs) else ())
    export(adapter, args, path, input_names=[s.name for s in inputs], output_names=outputs, dynamic_axes=axes,
           opset=opset, exporter=exporter)


def _config_text(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _model(name: str, arch_name: str, seed: int, exporter: str = "torchscript", opset: int = 17,
           tier: str = "full") -> ZooModel:
    """The zoo entry of one architecture through one exporter at one opset."""
    arch = ARCHS[arch_name]
    part = f".{arch.submodule}()" if arch.submodule else ""
    recipe = (f"{arch.model_class}{part} from {arch.config_class}({_config_text(arch.config)}), eager attention, "
              f"{arch.kind}, {exporter} exporter, opset {opset}")
    return ZooModel(name=name, family="transformers", source_package="transformers", recipe=recipe,
                    exporter=exporter, opset=opset, inputs=_signature(arch)[0],
                    build=partial(_build, arch_name, exporter, opset, seed), tier=tier, seed=seed)


MODELS: list[ZooModel] = [
    _model("bert", "bert", 3501, tier="ci"),
    _model("distilbert", "distilbert", 3502),
    _model("roberta", "roberta", 3503),
    _model("albert", "albert", 3504),
    _model("electra", "electra", 3505),
    _model("deberta-v2", "deberta-v2", 3506),
    _model("xlm-roberta", "xlm-roberta", 3507),
    _model("gpt2", "gpt2", 3508),
    _model("gpt2-past", "gpt2-past", 3509),
    _model("llama", "llama", 3510),
    _model("llama-past", "llama-past", 3515),
    _model("t5-encoder", "t5-encoder", 3511),
    _model("t5-decoder", "t5", 3512),
    _model("bart-encoder", "bart-encoder", 3513),
    _model("bart-decoder-past", "bart", 3514),
    _model("marian-decoder-past", "marian", 3516),
    # the dynamo exporter (torch.export + onnxscript)
    _model("bert-dynamo", "bert", 3521, "dynamo", 18),
    _model("distilbert-dynamo", "distilbert", 3522, "dynamo", 20),
    _model("roberta-dynamo", "roberta", 3523, "dynamo", 18),
    _model("gpt2-dynamo", "gpt2", 3524, "dynamo", 18),
    _model("gpt2-past-dynamo", "gpt2-past", 3525, "dynamo", 20),
    _model("llama-dynamo", "llama", 3526, "dynamo", 20),
    _model("t5-encoder-dynamo", "t5-encoder", 3527, "dynamo", 18),
    _model("bart-encoder-dynamo", "bart-encoder", 3528, "dynamo", 20),
    _model("albert-dynamo", "albert", 3529, "dynamo", 20),
    _model("deberta-v2-dynamo", "deberta-v2", 3530, "dynamo", 18),
    _model("llama-past-dynamo", "llama-past", 3534, "dynamo", 18),
    _model("t5-decoder-dynamo", "t5", 3535, "dynamo", 20),
    _model("bart-decoder-past-dynamo", "bart", 3536, "dynamo", 18),
    # the TorchScript exporter at an older opset (LayerNormalization decomposed, Split with attributes)
    _model("bert-opset13", "bert", 3531, opset=13),
    _model("distilbert-opset13", "distilbert", 3532, opset=13),
    _model("gpt2-opset13", "gpt2", 3533, opset=13),
]
