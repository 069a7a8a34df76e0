"""Small float models that onnxruntime's offline tools rewrite (see :mod:`.ort_tools`).

Transformers come from ``transformers`` configs with random weights (every parameter, biases and norms
included, moved by seeded noise), exported by torch.onnx's TorchScript exporter at opset 17 with eager
attention, whose graph is the pattern onnxruntime's fusions look for. The CNN and the LSTM are written
here. Every export has dynamic batch and sequence (or image size) axes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

from onnxplug_conformance.zoo.recipes._torch import export, import_transformers, seeded

OPSET = 17
VOCAB = 1000
HIDDEN = 64
HEADS = 4
LSTM_FEATURES = 16
IMAGE_CHANNELS = 3
PARAMETER_NOISE = 0.1  # standard deviation added to every parameter of the transformers models


def _keyword_wrapper(model: Any, names: Sequence[str], outputs: Sequence[str], **extra: Any) -> Any:
    """A module that passes its positional inputs to ``model`` by keyword and returns the named outputs as a
    tuple, so the traced signature is exactly the graph's inputs."""
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> tuple[Any, ...]:
            result = self.model(**dict(zip(names, args)), **extra)
            return tuple(getattr(result, k) for k in outputs)

    return Wrapper()


def _export_text(model: Any, path: Path, names: Sequence[str], outputs: Sequence[str], **extra: Any) -> None:
    import torch

    # transformers initialises biases to 0 and norm weights to 1, which would let a kernel that ignores a
    # bias or a gamma pass; noise on every parameter gives each of them a part in the output.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter), alpha=PARAMETER_NOISE)

    feeds = {"input_ids": torch.randint(0, VOCAB // 2, (2, 8)), "attention_mask": torch.ones(2, 8, dtype=torch.long),
             "token_type_ids": torch.zeros(2, 8, dtype=torch.long)}
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, *outputs]}
    export(_keyword_wrapper(model, names, outputs, **extra), tuple(feeds[n] for n in names), path,
           input_names=names, output_names=outputs, dynamic_axes=axes, opset=OPSET)


def export_bert(path: Path, seed: int = 0) -> None:
    """BertModel(hidden 64, 2 layers, 4 heads); inputs input_ids, attention_mask, token_type_ids."""
    tf = import_transformers()
    seeded(seed)
    config = tf.BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS,
                        intermediate_size=4 * HIDDEN, max_position_embeddings=128, attn_implementation="eager")
    _export_text(tf.BertModel(config, add_pooling_layer=False), path,
                 ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state"])


def export_gpt2(path: Path, seed: int = 0) -> None:
    """GPT2Model(n_embd 64, 2 layers, 4 heads, gelu_new) without past key values."""
    tf = import_transformers()
    seeded(seed)
    config = tf.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=2, n_head=HEADS, n_positions=128, use_cache=False,
                        bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    _export_text(tf.GPT2Model(config), path, ["input_ids", "attention_mask"], ["last_hidden_state"], use_cache=False)


def export_llama(path: Path, seed: int = 0) -> None:
    """LlamaForCausalLM(hidden 64, 2 layers, 4 heads over 2 key/value heads); output logits."""
    tf = import_transformers()
    seeded(seed)
    config = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2,
                         num_attention_heads=HEADS, num_key_value_heads=HEADS // 2, max_position_embeddings=128,
                         use_cache=False, attn_implementation="eager")
    _export_text(tf.LlamaForCausalLM(config), path, ["input_ids", "attention_mask"], ["logits"], use_cache=False)


def export_cnn(path: Path, seed: int = 0) -> None:
    """A residual conv net: Conv/BatchNorm/ReLU, MaxPool, a residual Add, GlobalAveragePool, then a MatMul
    and a Linear (Gemm) head; dynamic batch and image size."""
    import torch
    from torch import nn

    class SmallNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(IMAGE_CHANNELS, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(2))
            self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                       nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
            self.down = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.project = nn.Parameter(torch.randn(32, 32) / 32 ** 0.5)
            self.head = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            x = self.stem(x)
            x = torch.relu(x + self.block(x))
            x = self.pool(self.down(x)).flatten(1)
            return self.head(torch.relu(x @ self.project))

    seeded(seed)
    net = SmallNet()
    net.eval()
    export(net, (torch.rand(2, IMAGE_CHANNELS, 32, 32),), path, input_names=["input"], output_names=["logits"],
           dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}, opset=OPSET)


def export_lstm(path: Path, seed: int = 0) -> None:
    """A one-layer bidirectional nn.LSTM(16 -> 32, batch_first) and a Linear over its outputs."""
    import torch
    from torch import nn

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(LSTM_FEATURES, 32, batch_first=True, bidirectional=True)
            self.out = nn.Linear(64, 8)

        def forward(self, x: Any) -> Any:
            return self.out(self.lstm(x)[0])

    seeded(seed)
    export(Tagger(), (torch.randn(2, 10, LSTM_FEATURES),), path, input_names=["x"], output_names=["scores"],
           dynamic_axes={"x": {0: "batch", 1: "sequence"}, "scores": {0: "batch", 1: "sequence"}}, opset=OPSET)


def image_reader(input_name: str, seed: int, count: int = 16) -> Any:
    """A CalibrationDataReader of ``count`` seeded uniform [0, 1) images of 32 x 32, in batches of 2."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader

    class Images(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(seed)
            self._batches: Iterator[dict[str, Any]] = iter(
                [{input_name: rng.random((2, IMAGE_CHANNELS, 32, 32), dtype=np.float32)} for _ in range(count // 2)])

        def get_next(self) -> dict[str, Any] | None:
            return next(self._batches, None)

    return Images()
