//! A BERT encoder forward pass (the architecture of all-MiniLM-L6-v2) on f32,
//! written for sentence embedding: no padding at all. The tokens of every
//! sentence in a batch are packed into one matrix, so the dense layers run as
//! a few large GEMMs, and attention runs per sentence on its own tokens.

use std::path::Path;

use memloop_core::{Error, Result};
use safetensors::SafeTensors;

use super::gemm::{gelu_in_place, sgemm, vectorised, GemmPath, View, Weights as Laid};
use super::math::{lane_sum, softmax};

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
    position: Vec<f32>,
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
        let outputs = outputs_each * names.len();
        let mut weight_t = vec![0.0; inputs * outputs];
        let mut bias = Vec::with_capacity(outputs);
        for (part, name) in names.iter().enumerate() {
            let w = self.get(&format!("{name}.weight"), &[outputs_each, inputs])?;
            for o in 0..outputs_each {
                for i in 0..inputs {
                    weight_t[i * outputs + part * outputs_each + o] = w[o * inputs + i];
                }
            }
            bias.extend(self.get(&format!("{name}.bias"), &[outputs_each])?);
        }
        Ok(Linear {
            weight: Laid::new(self.gemm, weight_t, inputs, outputs),
            bias,
        })
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
                qkv: w.linear(
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
            position: w.get(
                "embeddings.position_embeddings.weight",
                &[cfg.max_position_embeddings, h],
            )?,
            token_type0: token_types[..h].to_vec(),
            emb_norm: w.norm("embeddings.LayerNorm", h)?,
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
                let (w, p) = (
                    &self.word[id * h..(id + 1) * h],
                    &self.position[pos * h..(pos + 1) * h],
                );
                for d in 0..h {
                    out[d] = w[d] + p[d] + self.token_type0[d];
                }
                row += 1;
            }
        }
        layer_norm(&mut x, &self.emb_norm, h, self.cfg.layer_norm_eps);
        let mut scratch = SCRATCH.take();
        scratch.fit(total, h, self.cfg.intermediate_size);
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
        gelu_in_place(&mut s.inter);
        linear(&layer.ffn_out, &s.inter, total, x, threads)?;
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
    fn fit(&mut self, tokens: usize, h: usize, i: usize) {
        self.qkv.resize(tokens * 3 * h, 0.0);
        self.ctx.resize(tokens * h, 0.0);
        self.proj.resize(tokens * h, 0.0);
        self.inter.resize(tokens * i, 0.0);
    }

    fn bytes(&self) -> usize {
        let values = self.qkv.capacity()
            + self.ctx.capacity()
            + self.proj.capacity()
            + self.inter.capacity()
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
