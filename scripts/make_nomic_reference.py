#!/usr/bin/env python3
"""Generate the nomic-embed-text-v1.5 reference-embedding fixture for
memloop-embed's tests, with an implementation of its own: numpy, written
from llama.cpp's nomic-bert graph, sharing no code with the Rust one.

Usage:
    python3 make_nomic_reference.py MODEL_GGUF [OUT_JSON]

MODEL_GGUF is models/nomic-embed-text-v1.5/model.gguf (scripts/
fetch-model-nomic.sh); OUT_JSON defaults to
crates/memloop-embed/tests/fixtures/nomic_reference.json. The sentences are
those of minilm_reference.json, embedded as documents ("search_document: "),
and the first few again as queries ("search_query: "). A one-off developer
tool, not used by CI: `pip install numpy gguf tokenizers` in a throwaway
venv. The model: token and type-0 embeddings, LayerNorm; 12 post-norm
layers of fused QKV attention with NeoX rotary positions and a SwiGLU
feed-forward (no biases); mean pooling, L2 normalisation; 256 tokens at most.
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFReader
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

MAX_TOKENS = 256
QUERIES = 5
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates/memloop-embed/tests/fixtures"


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rope_neox(x, base):
    """x: heads × tokens × d; pairs (i, i + d/2) turned by pos · base^(-2i/d)."""
    d = x.shape[-1]
    half = d // 2
    inv = base ** (-np.arange(half, dtype=np.float64) * 2.0 / d)
    ang = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class Nomic:
    def __init__(self, path):
        r = GGUFReader(path)
        f = r.fields
        self.layers = int(f["nomic-bert.block_count"].contents())
        self.heads = int(f["nomic-bert.attention.head_count"].contents())
        self.eps = float(f["nomic-bert.attention.layer_norm_epsilon"].contents())
        self.base = float(f["nomic-bert.rope.freq_base"].contents())
        self.w = {t.name: np.asarray(t.data).astype(np.float32) for t in r.tensors}
        # llama.cpp writes WordPiece pieces SentencePiece-style: '▁' before a
        # word's first piece, no '##' before a continuation.
        tokens = f["tokenizer.ggml.tokens"].contents()
        types = f["tokenizer.ggml.token_type"].contents()
        vocab = {}
        for i, (t, ty) in enumerate(zip(tokens, types)):
            if t.startswith("\u2581"):
                t = t[1:]
            elif not (ty == 3 or (t.startswith("[unused") and t.endswith("]"))):
                t = "##" + t
            vocab[t] = i
        tk = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tk.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None)
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tk.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
        tk.enable_truncation(MAX_TOKENS)
        self.tok = tk

    def embed(self, text):
        w = self.w
        ids = self.tok.encode(text).ids
        x = w["token_embd.weight"][ids] + w["token_types.weight"][0]
        x = layer_norm(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"], self.eps)
        h = x.shape[-1]
        d = h // self.heads
        for l in range(self.layers):
            p = f"blk.{l}."
            qkv = x @ w[p + "attn_qkv.weight"].T
            q, k, v = (qkv[:, i * h:(i + 1) * h].reshape(-1, self.heads, d).transpose(1, 0, 2) for i in range(3))
            q, k = rope_neox(q, self.base), rope_neox(k, self.base)
            a = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d)) @ v
            a = a.transpose(1, 0, 2).reshape(-1, h) @ w[p + "attn_output.weight"].T
            x = layer_norm(a + x, w[p + "attn_output_norm.weight"], w[p + "attn_output_norm.bias"], self.eps)
            up = x @ w[p + "ffn_up.weight"].T
            gate = x @ w[p + "ffn_gate.weight"].T
            y = (up * gate / (1.0 + np.exp(-gate))) @ w[p + "ffn_down.weight"].T
            x = layer_norm(y + x, w[p + "layer_output_norm.weight"], w[p + "layer_output_norm.bias"], self.eps)
        v = x.mean(0)
        return v / np.linalg.norm(v)


def main():
    model = Nomic(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else FIXTURES / "nomic_reference.json"
    sentences = json.loads((FIXTURES / "minilm_reference.json").read_text())["sentences"]
    rounded = lambda v: [float(f"{x:.7g}") for x in v]
    fixture = {
        "model": "nomic-ai/nomic-embed-text-v1.5 (f16 GGUF), numpy reference",
        "sentences": sentences,
        "documents": [rounded(model.embed("search_document: " + s)) for s in sentences],
        "queries": [rounded(model.embed("search_query: " + s)) for s in sentences[:QUERIES]],
    }
    out.write_text(json.dumps(fixture) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
