//! A BERT encoder forward pass on f32, written for sentence embedding: no
//! padding at all. The tokens of every sentence in a batch are packed into
//! one matrix, so the dense layers run as a few large GEMMs, and attention
//! runs per sentence on its own tokens. Two members of the family:
//! all-MiniLM-L6-v2 (learned positions, GELU; safetensors) and
//! nomic-embed-text-v1.5 (nomic-bert: rotary positions, SwiGLU, no biases;
//! GGUF), which differ only in where positions enter and in the
//! feed-forward block's activation.

use std::path::Path;

use memloop_core::{Error, Result};
use safetensors::SafeTensors;

use super::gemm::{gelu_in_place, sgemm, vectorised, GemmPath, View, Weights as Laid};
use super::gguf::{Gguf, Value};
use super::math::{lane_sum, softmax, swiglu};

#[derive(Debug, Clone, serde::Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    #[serde(default = "default_act")]
    pub hidden_act: String,
}

fn default_eps() -> f32 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}

/// A dense layer: its weight (`in × out`) laid out for the chosen kernel.
struct Linear {
    weight: Laid,
    bias: Vec<f32>,
}

struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// How a token's position enters the model.
enum Positions {
    /// A learned vector per position, added to the token's (BERT).
    Learned(Vec<f32>),
    /// Rotary: in each head, query and key pairs (i, i + d/2) are turned by
    /// position × base^(-2i/d) (NeoX's layout, as nomic-bert has it).
    /// Tables `[position × d/2]`.
    Rotary { cos: Vec<f32>, sin: Vec<f32> },
}

/// The feed-forward block's activation.
#[derive(Clone, Copy, PartialEq)]
enum Ffn {
    Gelu,
    /// `ffn_in` yields [up | gate], and `up · silu(gate)` goes on.
    SwiGlu,
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    ffn_in: Linear,
    ffn_out: Linear,
    ffn_norm: LayerNorm,
}

pub struct Bert {
    cfg: BertConfig,
    word: Vec<f32>,
    positions: Positions,
    ffn: Ffn,
    token_type0: Vec<f32>,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
}

fn invalid(path: &Path, reason: impl Into<String>) -> Error {
    Error::ModelInvalid {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

struct Weights<'a> {
    st: SafeTensors<'a>,
    prefix: &'static str,
    path: &'a Path,
    gemm: GemmPath,
}

impl Weights<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .st
            .tensor(&full)
            .map_err(|_| invalid(self.path, format!("tensor {full} is missing")))?;
        if t.dtype() != safetensors::Dtype::F32 {
            return Err(invalid(
                self.path,
                format!("tensor {full} is {:?}, expected F32", t.dtype()),
            ));
        }
        if t.shape() != shape {
            return Err(invalid(
                self.path,
                format!(
                    "tensor {full} has shape {:?}, expected {shape:?}",
                    t.shape()
                ),
            ));
        }
        Ok(t.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn norm(&self, name: &str, h: usize) -> Result<LayerNorm> {
        Ok(LayerNorm {
            gamma: self.get(&format!("{name}.weight"), &[h])?,
            beta: self.get(&format!("{name}.bias"), &[h])?,
        })
    }

    /// Loads one or more PyTorch `[out, in]` linear layers sharing an input and
    /// concatenates them along the output, transposed.
    fn linear(&self, names: &[&str], inputs: usize, outputs_each: usize) -> Result<Linear> {
        self.linear_on(self.gemm, names, inputs, outputs_each)
    }

    /// As `linear`, for the product of queries, keys and values.
    fn qkv(&self, names: &[&str], inputs: usize, outputs_each: usize) -> Result<Linear> {
        self.linear_on(
            self.gemm.for_attention_scores(),
            names,
            inputs,
            outputs_each,
        )
    }

    fn linear_on(
        &self,
        gemm: GemmPath,
        names: &[&str],
        inputs: usize,
        outputs_each: usize,
    ) -> Result<Linear> {
        let mut parts = Vec::with_capacity(names.len());
        let mut bias = Vec::with_capacity(outputs_each * names.len());
        for name in names {
            parts.push(self.get(&format!("{name}.weight"), &[outputs_each, inputs])?);
            bias.extend(self.get(&format!("{name}.bias"), &[outputs_each])?);
        }
        Ok(laid_out(gemm, &parts, inputs, outputs_each, bias))
    }
}

/// A dense layer from PyTorch `[out, in]` weights sharing an input,
/// concatenated along the output and transposed for the kernel.
fn laid_out(
    gemm: GemmPath,
    parts: &[Vec<f32>],
    inputs: usize,
    outputs_each: usize,
    bias: Vec<f32>,
) -> Linear {
    let outputs = outputs_each * parts.len();
    let mut weight_t = vec![0.0; inputs * outputs];
    for (part, w) in parts.iter().enumerate() {
        for o in 0..outputs_each {
            for i in 0..inputs {
                weight_t[i * outputs + part * outputs_each + o] = w[o * inputs + i];
            }
        }
    }
    Linear {
        weight: Laid::new(gemm, weight_t, inputs, outputs),
        bias,
    }
}

impl Bert {
    /// Loads the model with its dense layers laid out for `gemm`.
    pub fn load(dir: &Path, gemm: GemmPath) -> Result<Bert> {
        let cfg_path = dir.join("config.json");
        let cfg_text = std::fs::read_to_string(&cfg_path).map_err(|e| Error::Io {
            path: cfg_path.clone(),
            source: e,
        })?;
        let cfg: BertConfig = serde_json::from_str(&cfg_text)
            .map_err(|e| invalid(&cfg_path, format!("not a BERT config: {e}")))?;
        if cfg.hidden_act != "gelu"
            || cfg.num_attention_heads == 0
            || !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads)
        {
            return Err(invalid(
                &cfg_path,
                "unsupported configuration (need gelu, heads dividing hidden size)",
            ));
        }
        let path = dir.join("model.safetensors");
        let bytes = std::fs::read(&path).map_err(|e| Error::Io {
            path: path.clone(),
            source: e,
        })?;
        let st = SafeTensors::deserialize(&bytes).map_err(|e| invalid(&path, e.to_string()))?;
        let prefix = if st.names().iter().any(|n| n.starts_with("bert.")) {
            "bert."
        } else {
            ""
        };
        let w = Weights {
            st,
            prefix,
            path: &path,
            gemm,
        };
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let token_types = w.get("embeddings.token_type_embeddings.weight", &[2, h])?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            layers.push(Layer {
                qkv: w.qkv(
                    &[
                        &format!("{p}.attention.self.query"),
                        &format!("{p}.attention.self.key"),
                        &format!("{p}.attention.self.value"),
                    ],
                    h,
                    h,
                )?,
                attn_out: w.linear(&[&format!("{p}.attention.output.dense")], h, h)?,
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                ffn_in: w.linear(&[&format!("{p}.intermediate.dense")], h, i)?,
                ffn_out: w.linear(&[&format!("{p}.output.dense")], i, h)?,
                ffn_norm: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        Ok(Bert {
            word: w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?,
            positions: Positions::Learned(w.get(
                "embeddings.position_embeddings.weight",
                &[cfg.max_position_embeddings, h],
            )?),
            ffn: Ffn::Gelu,
            token_type0: token_types[..h].to_vec(),
            emb_norm: w.norm("embeddings.LayerNorm", h)?,
            layers,
            cfg,
        })
    }

    /// Loads a nomic-bert encoder from a GGUF file (llama.cpp's tensor
    /// names; F16 weights widened to f32), reading at most `max_positions`
    /// tokens at a time.
    pub fn load_gguf(g: &Gguf, max_positions: usize, gemm: GemmPath) -> Result<Bert> {
        let arch = g.text("general.architecture")?;
        let key = |k: &str| format!("{arch}.{k}");
        let number = |k: &str| g.number(&key(k));
        let count = |k: &str| number(k).map(|n| n as usize);
        let h = count("embedding_length")?;
        let heads = count("attention.head_count")?;
        let i = count("feed_forward_length")?;
        let layers_n = count("block_count")?;
        let vocab = g.array("tokenizer.ggml.tokens")?.len();
        let context = count("context_length")?;
        let bad = |reason: String| Error::ModelInvalid {
            path: g.path().to_path_buf(),
            reason,
        };
        if arch != "nomic-bert" || heads == 0 || !h.is_multiple_of(heads) || (h / heads) % 2 != 0 {
            return Err(bad(format!(
                "unsupported model: architecture {arch}, {h} wide in {heads} heads \
                 (this reads nomic-bert)"
            )));
        }
        if matches!(
            g.metadata.get(&key("attention.causal")),
            Some(Value::Bool(true))
        ) {
            return Err(bad("a causal model is not a sentence encoder".into()));
        }
        let cfg = BertConfig {
            vocab_size: vocab,
            hidden_size: h,
            num_hidden_layers: layers_n,
            num_attention_heads: heads,
            intermediate_size: i,
            max_position_embeddings: max_positions.min(context),
            layer_norm_eps: number("attention.layer_norm_epsilon")? as f32,
            hidden_act: "swiglu".into(),
        };
        let norm = |name: &str| -> Result<LayerNorm> {
            Ok(LayerNorm {
                gamma: g.tensor(&format!("{name}.weight"), &[h])?,
                beta: g.tensor(&format!("{name}.bias"), &[h])?,
            })
        };
        let mut layers = Vec::with_capacity(layers_n);
        for l in 0..layers_n {
            let t =
                |name: &str, shape: &[usize]| g.tensor(&format!("blk.{l}.{name}.weight"), shape);
            layers.push(Layer {
                qkv: laid_out(
                    gemm.for_attention_scores(),
                    &[t("attn_qkv", &[3 * h, h])?],
                    h,
                    3 * h,
                    vec![0.0; 3 * h],
                ),
                attn_out: laid_out(gemm, &[t("attn_output", &[h, h])?], h, h, vec![0.0; h]),
                attn_norm: norm(&format!("blk.{l}.attn_output_norm"))?,
                ffn_in: laid_out(
                    gemm,
                    &[t("ffn_up", &[i, h])?, t("ffn_gate", &[i, h])?],
                    h,
                    i,
                    vec![0.0; 2 * i],
                ),
                ffn_out: laid_out(gemm, &[t("ffn_down", &[h, i])?], i, h, vec![0.0; h]),
                ffn_norm: norm(&format!("blk.{l}.layer_output_norm"))?,
            });
        }
        let token_types = g.tensor("token_types.weight", &[2, h])?;
        let base = number("rope.freq_base")?;
        Ok(Bert {
            word: g.tensor("token_embd.weight", &[vocab, h])?,
            positions: rotary_tables(cfg.max_position_embeddings, h / heads, base),
            ffn: Ffn::SwiGlu,
            token_type0: token_types[..h].to_vec(),
            emb_norm: norm("token_embd_norm")?,
            layers,
            cfg,
        })
    }

    pub fn hidden_size(&self) -> usize {
        self.cfg.hidden_size
    }

    pub fn max_positions(&self) -> usize {
        self.cfg.max_position_embeddings
    }

    /// Mean-pooled, L2-normalised embeddings of token-id sequences, packed without padding.
    /// `threads` parallelises each matrix product (for a single short input;
    /// batches are better split across threads by sentence instead).
    pub fn embed(&self, sequences: &[Vec<u32>], threads: usize) -> Result<Vec<Vec<f32>>> {
        if threads > 1 {
            // The whole pass on a pool thread, so that each product's other
            // half goes to a worker that is still looking for work, not one
            // woken from sleep while the caller sleeps in turn: 24 products
            // a text, and a wake-up each way cost a third of one text's time.
            return rayon::scope(|_| self.forward(sequences, threads));
        }
        self.forward(sequences, threads)
    }

    fn forward(&self, sequences: &[Vec<u32>], threads: usize) -> Result<Vec<Vec<f32>>> {
        let h = self.cfg.hidden_size;
        let lens: Vec<usize> = sequences.iter().map(Vec::len).collect();
        let total: usize = lens.iter().sum();
        let mut x = vec![0.0f32; total * h];
        let mut row = 0;
        for seq in sequences {
            if seq.len() > self.cfg.max_position_embeddings {
                return Err(Error::Embedding(
                    "a sequence is longer than the model's positions".into(),
                ));
            }
            for (pos, &id) in seq.iter().enumerate() {
                let id = id as usize;
                if id >= self.cfg.vocab_size {
                    return Err(Error::Embedding(format!(
                        "token id {id} is outside the vocabulary"
                    )));
                }
                let out = &mut x[row * h..(row + 1) * h];
                let w = &self.word[id * h..(id + 1) * h];
                for d in 0..h {
                    out[d] = w[d] + self.token_type0[d];
                }
                if let Positions::Learned(position) = &self.positions {
                    let p = &position[pos * h..(pos + 1) * h];
                    for d in 0..h {
                        out[d] += p[d];
                    }
                }
                row += 1;
            }
        }
        layer_norm(&mut x, &self.emb_norm, h, self.cfg.layer_norm_eps);
        let mut scratch = SCRATCH.take();
        scratch.fit(total, h, self.cfg.intermediate_size, self.ffn);
        for layer in &self.layers {
            self.layer_forward(layer, &mut x, &lens, &mut scratch, threads)?;
        }
        if scratch.bytes() <= KEEP_BYTES {
            SCRATCH.set(scratch);
        }
        // Mean pooling over every token (no padding exists to mask), then unit length.
        let mut out = Vec::with_capacity(sequences.len());
        let mut start = 0;
        for &len in &lens {
            let mut v = vec![0.0f32; h];
            for t in start..start + len {
                for (acc, val) in v.iter_mut().zip(&x[t * h..(t + 1) * h]) {
                    *acc += val;
                }
            }
            start += len;
            let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|a| *a /= norm);
            }
            out.push(v);
        }
        Ok(out)
    }

    fn layer_forward(
        &self,
        layer: &Layer,
        x: &mut [f32],
        lens: &[usize],
        s: &mut Scratch,
        threads: usize,
    ) -> Result<()> {
        let h = self.cfg.hidden_size;
        let total = x.len() / h;
        linear(&layer.qkv, x, total, &mut s.qkv, threads)?;
        if let Positions::Rotary { cos, sin } = &self.positions {
            rotate(&mut s.qkv, lens, h, self.cfg.num_attention_heads, cos, sin);
        }
        self.attention(&s.qkv, lens, &mut s.ctx, &mut s.scores)?;
        // Output projection, residual, norm.
        linear(&layer.attn_out, &s.ctx, total, &mut s.proj, threads)?;
        let eps = self.cfg.layer_norm_eps;
        vectorised(
            #[inline(always)]
            || {
                add_assign(&mut s.proj, x);
                layer_norm(&mut s.proj, &layer.attn_norm, h, eps);
            },
        );
        linear(&layer.ffn_in, &s.proj, total, &mut s.inter, threads)?;
        let hidden = match self.ffn {
            Ffn::Gelu => {
                gelu_in_place(&mut s.inter);
                &s.inter
            }
            Ffn::SwiGlu => {
                let i = self.cfg.intermediate_size;
                let (inter, gated) = (&s.inter, &mut s.gated);
                vectorised(
                    #[inline(always)]
                    || {
                        for (row, out) in inter.chunks_exact(2 * i).zip(gated.chunks_exact_mut(i)) {
                            let (up, gate) = row.split_at(i);
                            for ((o, &u), &g) in out.iter_mut().zip(up).zip(gate) {
                                *o = swiglu(u, g);
                            }
                        }
                    },
                );
                &s.gated
            }
        };
        linear(&layer.ffn_out, hidden, total, x, threads)?;
        vectorised(
            #[inline(always)]
            || {
                add_assign(x, &s.proj);
                layer_norm(x, &layer.ffn_norm, h, eps);
            },
        );
        Ok(())
    }

    /// Multi-head self-attention of each sequence over its own tokens.
    fn attention(
        &self,
        qkv: &[f32],
        lens: &[usize],
        ctx: &mut [f32],
        scores: &mut Vec<f32>,
    ) -> Result<()> {
        let h = self.cfg.hidden_size;
        let heads = self.cfg.num_attention_heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let stride = 3 * h;
        let mut start = 0;
        for &len in lens {
            scores.resize(len * len, 0.0);
            for head in 0..heads {
                let base = start * stride + head * d;
                let q = View {
                    data: &qkv[base..],
                    rows: len,
                    cols: d,
                    row_stride: stride,
                    col_stride: 1,
                };
                // K transposed: element (k, j) = K[j][k].
                let kt = View {
                    data: &qkv[base + h..],
                    rows: d,
                    cols: len,
                    row_stride: 1,
                    col_stride: stride,
                };
                if !sgemm(scale, q, kt, 0.0, scores, len) {
                    return Err(shape_error());
                }
                vectorised(
                    #[inline(always)]
                    || {
                        for row in scores.chunks_exact_mut(len) {
                            softmax(row);
                        }
                    },
                );
                let p = View {
                    data: scores,
                    rows: len,
                    cols: len,
                    row_stride: len,
                    col_stride: 1,
                };
                let v = View {
                    data: &qkv[base + 2 * h..],
                    rows: len,
                    cols: d,
                    row_stride: stride,
                    col_stride: 1,
                };
                if !sgemm(1.0, p, v, 0.0, &mut ctx[start * h + head * d..], h) {
                    return Err(shape_error());
                }
            }
            start += len;
        }
        Ok(())
    }
}

fn shape_error() -> Error {
    Error::Internal("matrix shapes do not fit in the BERT forward pass".into())
}

/// Buffers reused across layers, and kept per thread between calls up to
/// KEEP_BYTES (allocating and faulting them in at every call cost a few
/// percent of a batch's time).
#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    proj: Vec<f32>,
    inter: Vec<f32>,
    /// SwiGLU's `up · silu(gate)` (empty for GELU).
    gated: Vec<f32>,
    scores: Vec<f32>,
}

/// 4 MiB: any one text (256 tokens at most) on a long-lived caller's
/// thread; a batch's threads live for that batch only.
const KEEP_BYTES: usize = 4 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

impl Scratch {
    /// Sizes the buffers for `tokens` tokens (every value is written before
    /// it is read, so old contents stay).
    fn fit(&mut self, tokens: usize, h: usize, i: usize, ffn: Ffn) {
        self.qkv.resize(tokens * 3 * h, 0.0);
        self.ctx.resize(tokens * h, 0.0);
        self.proj.resize(tokens * h, 0.0);
        if ffn == Ffn::SwiGlu {
            self.inter.resize(tokens * 2 * i, 0.0);
            self.gated.resize(tokens * i, 0.0);
        } else {
            self.inter.resize(tokens * i, 0.0);
        }
    }

    fn bytes(&self) -> usize {
        let values = self.qkv.capacity()
            + self.ctx.capacity()
            + self.proj.capacity()
            + self.inter.capacity()
            + self.gated.capacity()
            + self.scores.capacity();
        values * std::mem::size_of::<f32>()
    }
}

/// out[rows × outputs] = x[rows × inputs] · W + b
fn linear(l: &Linear, x: &[f32], rows: usize, out: &mut [f32], threads: usize) -> Result<()> {
    if l.weight.product_with_bias(x, rows, &l.bias, out, threads) {
        Ok(())
    } else {
        Err(shape_error())
    }
}

/// Rotary tables for positions `0..positions` of heads `d` wide.
fn rotary_tables(positions: usize, d: usize, base: f64) -> Positions {
    let half = d / 2;
    let mut cos = Vec::with_capacity(positions * half);
    let mut sin = Vec::with_capacity(positions * half);
    for p in 0..positions {
        for i in 0..half {
            let angle = p as f64 * base.powf(-2.0 * i as f64 / d as f64);
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
    Positions::Rotary { cos, sin }
}

/// Turns each sequence's queries and keys (the first two thirds of each
/// `qkv` row) by their tokens' positions in that sequence.
fn rotate(qkv: &mut [f32], lens: &[usize], h: usize, heads: usize, cos: &[f32], sin: &[f32]) {
    let d = h / heads;
    let half = d / 2;
    let mut rows = qkv.chunks_exact_mut(3 * h);
    for &len in lens {
        for (pos, row) in rows.by_ref().take(len).enumerate() {
            let (c, s) = (
                &cos[pos * half..(pos + 1) * half],
                &sin[pos * half..(pos + 1) * half],
            );
            for head in row[..2 * h].chunks_exact_mut(d) {
                let (x1, x2) = head.split_at_mut(half);
                for k in 0..half {
                    let (a, b) = (x1[k], x2[k]);
                    x1[k] = a * c[k] - b * s[k];
                    x2[k] = b * c[k] + a * s[k];
                }
            }
        }
    }
}

#[inline(always)]
fn add_assign(dst: &mut [f32], src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d += s;
    }
}

#[inline(always)]
fn layer_norm(x: &mut [f32], n: &LayerNorm, h: usize, eps: f32) {
    for row in x.chunks_exact_mut(h) {
        let mean = lane_sum(row, |v| v) / h as f32;
        let var = lane_sum(row, |v| (v - mean) * (v - mean)) / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&n.gamma).zip(&n.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}
