"""Tiny models for transformers.js (npm `@huggingface/transformers`), written with the `onnx` helper and seeded
weights into the folder layout transformers.js reads from `env.localModelPath` (config.json, tokenizer.json,
tokenizer_config.json, onnx/model.onnx, and per task preprocessor_config.json or generation_config.json).  The
dev server serves the folder at /clients/transformers-models/, generated on first use:

| model | pipeline | what it exercises |
| --- | --- | --- |
| bert-tiny | feature-extraction | a BERT-like encoder (2 blocks, width 32): Gather embeddings, Shape/Slice |
| | | positions, the padding mask, Erf GELU; dynamic batch and sequence |
| bert-tiny-static | feature-extraction | the same weights, `free_dimension_overrides` for WebNN (batch 1, seq 16) |
| bert-tiny-fp16 | feature-extraction | the same in float16 (onnx/model_fp16.onnx, `dtype: 'fp16'`), overrides |
| vit-tiny | image-classification | a ViT: 8x8 patch Conv, CLS token by Expand, 2 pre-norm blocks, 4 labels, |
| | | 32x32 RGB; batch_size 1 for WebNN |
| gpt2-tiny | text-generation | a GPT-2-like decoder (2 blocks, width 32) with its KV cache |
| | | (past_key_values.N.key/value in, present.N.* out), Trilu causal mask, tanh GELU |

onnxruntime-web's WebNN EP takes only nodes whose shapes are static once the overrides are applied: without
overrides (bert-tiny) and with a cache that grows every step (gpt2-tiny) it takes the few nodes on weights alone and
the rest runs on its WASM EP.

The tokenizers are written here too: a WordPiece vocabulary of a few dozen words and the letters (BERT), and a
byte-level BPE of the 256 byte symbols with no merges (GPT-2).
"""

from __future__ import annotations

import json
import string
import threading
from pathlib import Path
from typing import Any

import numpy as np

from web.settings import REPO_ROOT

DEFAULT_OUT = REPO_ROOT / "build" / "transformers-models"
SEED = 20261129
# Bumped when a model changes, so a folder written by an older generator is rebuilt.
VERSION = 3
OPSET = 17
# The dev server may ask for two files at once: one generation at a time.
_LOCK = threading.Lock()

WIDTH, HEADS, LAYERS, MLP = 32, 2, 2, 64
STATIC_SEQUENCE = 16  # bert-tiny-static's sequence_length override; its inputs are padded to it
WORDS = ("the a an is are was were be to of and in on at for with as by from it this that these those cat dog "
         "bird fish tree house car road sun moon star sky sea river hello world good bad small big fast slow red "
         "blue green runs sees likes eats sleeps polyfill browser graph tensor model").split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LABELS = ["plain", "striped", "dotted", "checked"]
BERT_VOCAB = len(SPECIAL) + len(WORDS) + 26 + 26  # the words, then the letters and their "##" continuations


class Graph:
    """A graph written node by node with unique names: `op(...)` returns the output name."""

    def __init__(self, rng: np.random.Generator, dtype: Any = np.float32) -> None:
        self.rng, self.dtype = rng, dtype
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, value: Any, hint: str = "c", dtype: Any = None) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype or self.dtype), name))
        return name

    def weight(self, shape: tuple[int, ...], hint: str, scale: float = 0.2) -> str:
        return self.const(self.rng.normal(0, scale, shape), hint)

    def op(self, kind: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        name = out or self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, list(inputs), [name], **attrs))
        return name

    def ints(self, values: list[int]) -> str:
        return self.const(values, "shape", np.int64)

    def linear(self, x: str, n_in: int, n_out: int, hint: str) -> str:
        y = self.op("MatMul", x, self.weight((n_in, n_out), f"{hint}_w"))
        return self.op("Add", y, self.weight((n_out,), f"{hint}_b", 0.02))

    def norm(self, x: str, width: int) -> str:
        scale = self.const(1 + self.rng.normal(0, 0.05, width), "ln_g")
        return self.op("LayerNormalization", x, scale, self.weight((width,), "ln_b", 0.02), axis=-1, epsilon=1e-5)

    def gelu(self, x: str, exact: bool) -> str:
        half, one = self.const(0.5), self.const(1.0)
        if exact:  # BERT, ViT: x * (1 + erf(x / sqrt 2)) / 2
            inner = self.op("Erf", self.op("Mul", x, self.const(1 / np.sqrt(2))))
        else:  # GPT-2: the tanh approximation
            cube = self.op("Mul", self.op("Pow", x, self.const(3.0)), self.const(0.044715))
            inner = self.op("Tanh", self.op("Mul", self.op("Add", x, cube), self.const(np.sqrt(2 / np.pi))))
        return self.op("Mul", self.op("Mul", x, half), self.op("Add", inner, one))

    def heads(self, x: str) -> str:
        """[B, T, WIDTH] -> [B, HEADS, T, WIDTH / HEADS]"""
        split = self.op("Reshape", x, self.ints([0, 0, HEADS, WIDTH // HEADS]))
        return self.op("Transpose", split, perm=[0, 2, 1, 3])

    def attention(self, x: str, additive_mask: str, past: tuple[str, str] | None = None,
                  present: tuple[str, str] | None = None) -> str:
        """Multi-head self-attention; with `past` the keys and values are appended to the cache first."""
        q, k, v = (self.heads(self.linear(x, WIDTH, WIDTH, n)) for n in ("q", "k", "v"))
        if past and present:
            k = self.op("Concat", past[0], k, axis=2, out=present[0])
            v = self.op("Concat", past[1], v, axis=2, out=present[1])
        scores = self.op("MatMul", q, self.op("Transpose", k, perm=[0, 1, 3, 2]))
        scores = self.op("Add", self.op("Mul", scores, self.const(1 / np.sqrt(WIDTH // HEADS))), additive_mask)
        y = self.op("MatMul", self.op("Softmax", scores, axis=-1), v)
        y = self.op("Reshape", self.op("Transpose", y, perm=[0, 2, 1, 3]), self.ints([0, 0, WIDTH]))
        return self.linear(y, WIDTH, WIDTH, "o")

    def mlp(self, x: str, exact_gelu: bool) -> str:
        return self.linear(self.gelu(self.linear(x, WIDTH, MLP, "fc1"), exact_gelu), MLP, WIDTH, "fc2")

    def padding_mask(self, mask: str) -> str:
        """attention_mask [B, L] (1 keep, 0 pad) -> an additive [B, 1, 1, L]: 0 or -10000 (BERT's constant)."""
        m = self.op("Unsqueeze", self.op("Cast", mask, to=self.onnx_type()), self.ints([1, 2]))
        return self.op("Mul", self.op("Sub", self.const(1.0), m), self.const(-10000.0))

    def onnx_type(self) -> int:
        from onnx import TensorProto

        return TensorProto.FLOAT16 if self.dtype == np.float16 else TensorProto.FLOAT

    def model(self, inputs: list[Any], outputs: list[Any]) -> Any:
        from onnx import helper

        graph = helper.make_graph(self.nodes, "tiny", inputs, outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pyodide-webnn")


def _io(name: str, elem: int, dims: list[Any]) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, dims)


def bert(dtype: Any = np.float32) -> Any:
    """BertModel: input_ids, attention_mask, token_type_ids [batch_size, sequence_length] -> last_hidden_state."""
    from onnx import TensorProto

    g = Graph(np.random.default_rng(SEED), dtype)
    words = g.op("Gather", g.weight((BERT_VOCAB, WIDTH), "word_emb", 1.0), "input_ids")
    length = g.op("Slice", g.op("Shape", "input_ids"), g.ints([1]), g.ints([2]))  # [sequence_length]
    positions = g.op("Slice", g.weight((64, WIDTH), "pos_emb", 0.5), g.ints([0]), length, g.ints([0]))
    types = g.op("Gather", g.weight((2, WIDTH), "type_emb", 0.5), "token_type_ids")
    x = g.norm(g.op("Add", g.op("Add", words, positions), types), WIDTH)
    mask = g.padding_mask("attention_mask")
    for _ in range(LAYERS):  # post-norm, as BERT
        x = g.norm(g.op("Add", x, g.attention(x, mask)), WIDTH)
        x = g.norm(g.op("Add", x, g.mlp(x, exact_gelu=True)), WIDTH)
    g.op("Identity", x, out="last_hidden_state")
    dims = ["batch_size", "sequence_length"]
    return g.model([_io(n, TensorProto.INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")],
                   [_io("last_hidden_state", g.onnx_type(), [*dims, WIDTH])])


def vit() -> Any:
    """ViTForImageClassification: pixel_values [batch_size, 3, 32, 32] -> logits [batch_size, 4]."""
    from onnx import TensorProto

    g = Graph(np.random.default_rng(SEED + 1))
    patches = g.op("Conv", "pixel_values", g.weight((WIDTH, 3, 8, 8), "patch_w", 0.1), g.weight((WIDTH,), "patch_b"),
                   strides=[8, 8])
    tokens = g.op("Transpose", g.op("Reshape", patches, g.ints([0, WIDTH, 16])), perm=[0, 2, 1])
    batch = g.op("Slice", g.op("Shape", "pixel_values"), g.ints([0]), g.ints([1]))
    cls = g.op("Expand", g.weight((1, 1, WIDTH), "cls", 1.0), g.op("Concat", batch, g.ints([1, WIDTH]), axis=0))
    x = g.op("Add", g.op("Concat", cls, tokens, axis=1), g.weight((17, WIDTH), "pos_emb", 0.5))
    no_mask = g.const(0.0)
    for _ in range(LAYERS):  # pre-norm, as ViT
        x = g.op("Add", x, g.attention(g.norm(x, WIDTH), no_mask))
        x = g.op("Add", x, g.mlp(g.norm(x, WIDTH), exact_gelu=True))
    first = g.op("Gather", g.norm(x, WIDTH), g.const(0, "i", np.int64), axis=1)
    g.op("Identity", g.linear(first, WIDTH, len(LABELS), "head"), out="logits")
    return g.model([_io("pixel_values", TensorProto.FLOAT, ["batch_size", 3, 32, 32])],
                   [_io("logits", TensorProto.FLOAT, ["batch_size", len(LABELS)])])


def gpt2() -> Any:
    """GPT2LMHeadModel with its KV cache: input_ids, position_ids [batch_size, sequence_length], attention_mask
    [batch_size, past_sequence_length + sequence_length], past_key_values.N.key/value -> logits, present.N.*."""
    from onnx import TensorProto, helper

    g = Graph(np.random.default_rng(SEED + 2))
    wte = g.weight((GPT2_VOCAB, WIDTH), "wte", 1.0)
    x = g.op("Add", g.op("Gather", wte, "input_ids"), g.op("Gather", g.weight((64, WIDTH), "wpe", 0.5), "position_ids"))
    # causal: query i (absolute past + i) sees key j <= past + i; Trilu keeps j - i <= k with k = past
    new = g.op("Slice", g.op("Shape", "input_ids"), g.ints([1]), g.ints([2]))
    total = g.op("Slice", g.op("Shape", "attention_mask"), g.ints([1]), g.ints([2]))
    ones = g.op("ConstantOfShape", g.op("Concat", new, total, axis=0),
                value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
    past = g.op("Squeeze", g.op("Sub", total, new), g.ints([0]))
    causal = g.op("Trilu", ones, past, upper=0)
    keep = g.op("Mul", causal, g.op("Unsqueeze", g.op("Cast", "attention_mask", to=TensorProto.FLOAT), g.ints([1, 2])))
    mask = g.op("Mul", g.op("Sub", g.const(1.0), keep), g.const(-10000.0))
    inputs = [_io(n, TensorProto.INT64, ["batch_size", "sequence_length"]) for n in ("input_ids", "position_ids")]
    inputs.append(_io("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"]))
    cache = ["batch_size", HEADS, "past_sequence_length", WIDTH // HEADS]
    present_dims = ["batch_size", HEADS, "total_sequence_length", WIDTH // HEADS]
    outputs = [_io("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", GPT2_VOCAB])]
    for i in range(LAYERS):  # pre-norm, as GPT-2
        names = (f"past_key_values.{i}.key", f"past_key_values.{i}.value")
        presents = (f"present.{i}.key", f"present.{i}.value")
        inputs += [_io(n, TensorProto.FLOAT, cache) for n in names]
        outputs += [_io(n, TensorProto.FLOAT, present_dims) for n in presents]
        x = g.op("Add", x, g.attention(g.norm(x, WIDTH), mask, names, presents))
        x = g.op("Add", x, g.mlp(g.norm(x, WIDTH), exact_gelu=False))
    # an LM head of its own: tied to random embeddings, greedy decoding would only repeat the last token
    g.op("MatMul", g.norm(x, WIDTH), g.weight((WIDTH, GPT2_VOCAB), "lm_head", 1.0), out="logits")
    return g.model(inputs, outputs)


def to_float16(model: Any) -> Any:
    """The same model in float16: every float initializer, Cast target, float input and output."""
    from onnx import TensorProto, numpy_helper

    for init in model.graph.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16
    for value in [*model.graph.input, *model.graph.output]:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    return model


# ---------------------------------------------------------------------------------------------- tokenizers

GPT2_BYTES = 256
GPT2_VOCAB = GPT2_BYTES + 1  # the byte symbols and <|endoftext|>


def byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest are shifted past 255."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted, symbols = 0, {}
    for b in range(256):
        if b in keep:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + shifted)
            shifted += 1
    return [symbols[b] for b in range(256)]


def _added(token: str, index: int) -> dict[str, Any]:
    return {"id": index, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def wordpiece_tokenizer() -> tuple[dict[str, Any], dict[str, Any]]:
    """tokenizer.json and tokenizer_config.json of a BERT WordPiece vocabulary."""
    letters = list(string.ascii_lowercase)
    vocab = {t: i for i, t in enumerate([*SPECIAL, *WORDS, *letters, *(f"##{c}" for c in letters)])}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [_added(t, i) for i, t in enumerate(SPECIAL)],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }
    config = {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 64,
              "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
              "mask_token": "[MASK]"}
    return tokenizer, config


def byte_bpe_tokenizer() -> tuple[dict[str, Any], dict[str, Any]]:
    """tokenizer.json and tokenizer_config.json of a GPT-2 byte-level BPE: one token per byte, no merges."""
    eos = "<|endoftext|>"
    vocab = {s: i for i, s in enumerate(byte_symbols())}
    vocab[eos] = GPT2_BYTES
    tokenizer: dict[str, Any] = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [_added(eos, GPT2_BYTES)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": []},
    }
    config = {"tokenizer_class": "GPT2Tokenizer", "model_max_length": 64, "bos_token": eos, "eos_token": eos,
              "unk_token": eos, "add_prefix_space": False}
    return tokenizer, config


# ------------------------------------------------------------------------------------------------- folders

def _bert_config(**extra: Any) -> dict[str, Any]:
    return {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": WIDTH, "num_attention_heads": HEADS,
            "num_hidden_layers": LAYERS, "intermediate_size": MLP, "vocab_size": BERT_VOCAB,
            "max_position_embeddings": 64, "type_vocab_size": 2, "pad_token_id": 0, **extra}


def folders() -> dict[str, dict[str, Any]]:
    """Every model folder: file name -> a JSON object, or an ONNX model (a callable, built when written)."""
    bert_tok, bert_tok_config = wordpiece_tokenizer()
    gpt_tok, gpt_tok_config = byte_bpe_tokenizer()
    bert_files = {"tokenizer.json": bert_tok, "tokenizer_config.json": bert_tok_config}
    def webnn_overrides(**dims: int) -> dict[str, Any]:
        return {"transformers.js_config": {"device_config": {"webnn": {"free_dimension_overrides": dims}}}}

    static = webnn_overrides(batch_size=1, sequence_length=STATIC_SEQUENCE)
    return {
        "bert-tiny": {**bert_files, "config.json": _bert_config(), "onnx/model.onnx": bert},
        "bert-tiny-static": {**bert_files, "config.json": _bert_config(**static), "onnx/model.onnx": bert},
        "bert-tiny-fp16": {**bert_files, "config.json": _bert_config(**static),
                           "onnx/model_fp16.onnx": lambda: to_float16(bert())},
        "vit-tiny": {
            "config.json": {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": WIDTH,
                            "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "image_size": 32,
                            "patch_size": 8, "num_channels": 3, "id2label": dict(enumerate(LABELS)),
                            "label2id": {label: i for i, label in enumerate(LABELS)},
                            **webnn_overrides(batch_size=1)},
            # the page hands over 32x32 images already: no resize (it needs a canvas), rescale and normalize only
            "preprocessor_config.json": {"image_processor_type": "ViTImageProcessor", "do_resize": False,
                                         "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                                         "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
                                         "size": {"height": 32, "width": 32}},
            "onnx/model.onnx": vit},
        "gpt2-tiny": {
            "config.json": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": WIDTH,
                            "n_head": HEADS, "n_layer": LAYERS, "n_positions": 64, "vocab_size": GPT2_VOCAB,
                            "bos_token_id": GPT2_BYTES, "eos_token_id": GPT2_BYTES},
            "generation_config.json": {"bos_token_id": GPT2_BYTES, "eos_token_id": GPT2_BYTES, "do_sample": False},
            "tokenizer.json": gpt_tok, "tokenizer_config.json": gpt_tok_config, "onnx/model.onnx": gpt2},
    }


def generate(out: Path = DEFAULT_OUT) -> Path:
    """Write every model folder under `out` unless it is current (out/version.json); return `out`."""
    with _LOCK:
        stamp = out / "version.json"
        try:
            if json.loads(stamp.read_text()) == {"version": VERSION}:
                return out
        except (OSError, ValueError):
            pass
        import onnx

        for name, files in folders().items():
            for file, content in files.items():
                path = out / name / file
                path.parent.mkdir(parents=True, exist_ok=True)
                if callable(content):
                    model = content()
                    onnx.checker.check_model(model)
                    onnx.save(model, str(path))
                else:
                    path.write_text(json.dumps(content, indent=1, ensure_ascii=False))
        stamp.write_text(json.dumps({"version": VERSION}))
        return out
